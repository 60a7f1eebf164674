-- How soon :SessionOpen and :SessionTree show something on a large session, and the longest the
-- editor's main loop was held up meanwhile. Not a test (no timed assertions anywhere): it prints.
--
--   python tests/benchmarks/generate.py /tmp/st-bench --sizes 100000 --list 0
--   SESSIONTREE_BENCH_FILE=/tmp/st-bench/100000.jsonl \
--     nvim --headless -u NONE -c "luafile clients/nvim/test/first_paint.lua"
--
-- The daemon: $SESSIONTREE_COMMAND, $SESSIONTREE_PYTHON, else the repository's .venv. Times are
-- vim.loop.hrtime() differences; "held up" is the longest gap between ticks of a 5 ms timer.
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
-- The sessions root: the file's directory (every path the daemon touches must lie inside it).
st.setup({ cmd = cmd, sessions_dir = vim.fn.fnamemodify(file, ':h') })

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
local function reset_stall()
  stall.last, stall.max = uv.hrtime(), 0
end

local function ms(ns)
  return string.format('%8.1f ms', ns / 1e6)
end
local function row(label, ns)
  out(string.format('%-48s%s', label, ms(ns)))
end

local drawn = 0
vim.api.nvim_create_autocmd('User', {
  pattern = 'SessionTreeDrawn',
  callback = function()
    drawn = drawn + 1
  end,
})
local function wait_drawn(count)
  assert(vim.wait(300000, function()
    return drawn >= count
  end, 1), 'the tree was not drawn')
end

out('# Neovim ' .. rpc.nvim_version() .. ', ' .. file)
local t0 = uv.hrtime()
st.client():wait_ready()
row('daemon started (initialize answered)', uv.hrtime() - t0)

-- 1. :SessionOpen on the file, the daemon running.
reset_stall()
t0 = uv.hrtime()
vim.cmd('SessionOpen ' .. vim.fn.fnameescape(file))
local returned = uv.hrtime() - t0
local first_line = vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]
wait_drawn(1)
local tree_at = uv.hrtime() - t0
local lines = vim.api.nvim_buf_line_count(0)
row(':SessionOpen: first paint (' .. first_line:sub(1, 12) .. '…)', returned)
row(':SessionOpen: the tree (' .. (lines - 2) .. ' lines) drawn', tree_at)
row('  main loop held up at most', stall.max)
out('  cursor on line ' .. vim.api.nvim_win_get_cursor(0)[1] .. ' (the leaf); the buffer starts:')
for _, line in ipairs(vim.api.nvim_buf_get_lines(0, 0, 6, false)) do
  out('    ' .. vim.fn.strcharpart(line, 0, 100))
end

-- 2. :SessionTree again from another buffer (the tree is up to date).
vim.cmd('enew')
reset_stall()
t0 = uv.hrtime()
vim.cmd('SessionTree')
returned = uv.hrtime() - t0
row(':SessionTree again: first paint (' .. vim.api.nvim_buf_line_count(0) .. ' lines)', returned)

-- 3. r: drawn again from the daemon (a tree the daemon has built once).
reset_stall()
t0 = uv.hrtime()
vim.api.nvim_feedkeys('r', 'x', false)
wait_drawn(2)
row('r (refresh): the tree drawn again', uv.hrtime() - t0)
row('  main loop held up at most', stall.max)

-- 4. :SessionTree in a fresh buffer (the plugin's tree wiped): loaded again.
vim.cmd('bwipeout!')
reset_stall()
t0 = uv.hrtime()
vim.cmd('SessionTree')
returned = uv.hrtime() - t0
first_line = vim.api.nvim_buf_get_lines(0, 0, 1, false)[1]
wait_drawn(3)
row(':SessionTree, new buffer: first paint (' .. first_line:sub(1, 12) .. '…)', returned)
row(':SessionTree, new buffer: the tree drawn', uv.hrtime() - t0)
row('  main loop held up at most', stall.max)

timer:stop()
timer:close()
st.stop()
vim.cmd('qall!')
