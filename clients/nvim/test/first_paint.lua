-- How soon :SessionOpen and :SessionTree show the tree of a large session, how soon a run unfolds
-- and a far page appears, and the longest the editor's main loop was held up meanwhile. Not a
-- test (no timed assertions anywhere): it prints.
--
--   .venv/bin/python tests/benchmarks/generate.py --sizes 100000 --list 0 /tmp/st-bench
--   SESSIONTREE_BENCH_FILE=/tmp/st-bench/100000.jsonl \
--     nvim --headless -u NONE -c "luafile clients/nvim/test/first_paint.lua"
--
-- The sessions root is the file's directory (the daemon opens only files inside its root, and
-- not through a symbolic link). The daemon: $SESSIONTREE_COMMAND, $SESSIONTREE_PYTHON, else the
-- repository's .venv; its index sidecars go where $XDG_CACHE_HOME says (the first open of a file
-- indexes it, later ones read the sidecar). Times are vim.loop.hrtime() differences; "held up"
-- is the longest gap between ticks of a 5 ms timer. Headless, the main loop does not run between
-- keys, so after a key that moves the cursor the script fires CursorMoved as the main loop would.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local plugin_dir = vim.fn.fnamemodify(here, ':h')
local repo = vim.fn.fnamemodify(plugin_dir, ':h:h')
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd('runtime plugin/sessiontree.lua')
local uv = vim.uv or vim.loop
local st = require('sessiontree')
local rpc = require('sessiontree.rpc')

local function out(text)
  io.stdout:write(text .. '\n')
end

local file = vim.env.SESSIONTREE_BENCH_FILE
if not file or vim.fn.filereadable(file) ~= 1 then
  out('set SESSIONTREE_BENCH_FILE to a session file')
  vim.cmd('cquit 2')
end
file = vim.fn.resolve(vim.fn.fnamemodify(file, ':p'))
local cmd
if (vim.env.SESSIONTREE_COMMAND or '') == '' and (vim.env.SESSIONTREE_PYTHON or '') == '' then
  cmd = { repo .. '/.venv/bin/python', '-m', 'sessiontree', 'serve' }
end
st.setup({ cmd = cmd, sessions_dir = vim.fn.fnamemodify(file, ':h') })

-- session/treeView requests sent.
local requests = 0
do
  local request = rpc.Client.request
  rpc.Client.request = function(self, method, ...)
    if method == 'session/treeView' then
      requests = requests + 1
    end
    return request(self, method, ...)
  end
end

-- The main loop's longest stall, from a 5 ms timer.
local stall = { last = nil, max = 0 }
local timer = uv.new_timer()
timer:start(0, 5, function()
  local now = uv.hrtime()
  if stall.last then
    stall.max = math.max(stall.max, now - stall.last)
  end
  stall.last = now
end)
local function start()
  stall.last, stall.max, requests = uv.hrtime(), 0, 0
  return uv.hrtime()
end

local function row(label, ns)
  out(string.format('%-52s%9.1f ms', label, ns / 1e6))
end
local function held_up()
  out(string.format('%-52s%9.1f ms   (%d session/treeView requests)', '  main loop held up at most', stall.max / 1e6, requests))
end

local drawn = 0
vim.api.nvim_create_autocmd('User', {
  pattern = 'SessionTreeDrawn',
  callback = function()
    drawn = drawn + 1
  end,
})
local function wait_until(what, fn)
  assert(vim.wait(300000, fn, 1), 'timed out waiting for ' .. what)
end
local function wait_drawn(count)
  wait_until('the tree', function()
    return drawn >= count
  end)
end
local function line(n)
  return vim.api.nvim_buf_get_lines(0, n - 1, n, false)[1]
end
local function settle()
  vim.cmd('doautocmd <nomodeline> CursorMoved')
end

out('# Neovim ' .. rpc.nvim_version() .. ', ' .. file)
local t0 = uv.hrtime()
st.client():wait_ready()
row('daemon started (initialize answered)', uv.hrtime() - t0)

-- 1. :SessionOpen on the file, the daemon running: the file is opened (indexed), then the page
--    that shows the leaf is drawn.
t0 = start()
vim.cmd('SessionOpen ' .. vim.fn.fnameescape(file))
local returned = uv.hrtime() - t0
local first_line = line(1)
wait_drawn(1)
local tree_at = uv.hrtime() - t0
local view = st.state.tree.view
row(':SessionOpen: returned (' .. first_line:sub(1, 12) .. '…)', returned)
row(':SessionOpen: the tree drawn (first paint)', tree_at)
held_up()
out(string.format('  %d rows folded from %s entries; %d buffer lines; cursor on line %d (the leaf):',
  view.total, tostring(st.state.session.entryCount), vim.api.nvim_buf_line_count(0), vim.api.nvim_win_get_cursor(0)[1]))
local cursor = vim.api.nvim_win_get_cursor(0)[1]
for _, text in ipairs(vim.api.nvim_buf_get_lines(0, math.max(0, cursor - 4), cursor + 1, false)) do
  out('    ' .. vim.fn.strcharpart(text, 0, 100))
end

-- 2. :SessionTree again from another buffer (the tree is up to date): nothing to ask.
vim.cmd('enew')
t0 = start()
vim.cmd('SessionTree')
row(':SessionTree again: shown', uv.hrtime() - t0)

-- 3. r: drawn again from the daemon, the cursor kept.
t0 = start()
vim.api.nvim_feedkeys('r', 'x', false)
wait_drawn(2)
row('r (refresh): the tree drawn again', uv.hrtime() - t0)
held_up()

-- 4. :SessionTree in a fresh buffer (the plugin's buffer wiped): drawn anew at the leaf.
vim.cmd('bwipeout!')
t0 = start()
vim.cmd('SessionTree')
returned = uv.hrtime() - t0
first_line = line(1)
wait_drawn(3)
row(':SessionTree, new buffer: returned (' .. first_line:sub(1, 12) .. '…)', returned)
row(':SessionTree, new buffer: the tree drawn (first paint)', uv.hrtime() - t0)
held_up()

-- 5. Unfold the longest run on the screen: its first page of entries.
local best, best_count = nil, 0
for n = vim.fn.line('w0'), vim.fn.line('w$') do
  local count = tonumber(((line(n) or ''):match('… ([%d,]+) entries from') or ''):gsub(',', ''), 10)
  if count and count > best_count then
    best, best_count = n, count
  end
end
if best then
  vim.api.nvim_win_set_cursor(0, { best, 0 })
  t0 = start()
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<Tab>', true, false, true), 'x', false)
  wait_until('the run', function()
    return line(best) ~= '·' and line(best + 1) ~= '·'
  end)
  row(string.format('<Tab> on a run of %d entries: its entries shown', best_count), uv.hrtime() - t0)
  held_up()
end

-- 6. gg: to the first row, far from the leaf: the page there.
t0 = start()
vim.api.nvim_feedkeys('gg', 'x', false)
settle()
wait_until('the first page', function()
  return line(3) ~= '·'
end)
row('gg: the first rows shown', uv.hrtime() - t0)
held_up()
out('    ' .. vim.fn.strcharpart(line(3), 0, 100))

timer:stop()
timer:close()
st.stop()
vim.cmd('qall!')
