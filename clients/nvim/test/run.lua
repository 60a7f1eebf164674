-- Headless test of the plugin against the real daemon:
--   nvim --headless -u NONE -c "luafile clients/nvim/test/run.lua"
-- Asserts on the tree and context buffers and on the session file; exits 0 when all pass.
-- The daemon: $SESSIONTREE_COMMAND, $SESSIONTREE_PYTHON, else the repository's .venv, else python3.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local plugin_dir = vim.fn.fnamemodify(here, ':h')
local repo = vim.fn.fnamemodify(plugin_dir, ':h:h')
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd('runtime plugin/sessiontree.lua')

local failures, passed = {}, 0
local function out(text)
  io.stdout:write(text .. '\n')
end

local function test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passed = passed + 1
    out('ok - ' .. name)
  else
    table.insert(failures, name)
    out('not ok - ' .. name .. '\n' .. tostring(type(err) == 'table' and vim.inspect(err) or err))
  end
end

local function eq(expected, got, what)
  if not vim.deep_equal(expected, got) then
    error(string.format('%s:\n  expected %s\n  got      %s', what or 'values differ', vim.inspect(expected), vim.inspect(got)), 2)
  end
end

local function command()
  if (vim.env.SESSIONTREE_COMMAND or '') ~= '' or (vim.env.SESSIONTREE_PYTHON or '') ~= '' then
    return nil -- rpc.command reads the environment
  end
  local venv = repo .. '/.venv/bin/python'
  return { vim.fn.executable(venv) == 1 and venv or 'python3', '-m', 'sessiontree', 'serve' }
end

local function read_entries(path)
  local entries = {}
  for _, line in ipairs(vim.fn.readfile(path)) do
    table.insert(entries, vim.json.decode(line))
  end
  return entries
end

local function buffer_lines(buf)
  return vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false)
end

local function press(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'x', false)
end

local function cursor_to(text)
  for number, line in ipairs(buffer_lines()) do
    if line:find(text, 1, true) then
      vim.api.nvim_win_set_cursor(0, { number, 0 })
      return
    end
  end
  error('no line with ' .. text)
end

local root = vim.fn.tempname() .. '-sessions'
vim.fn.mkdir(root, 'p')
root = vim.fn.resolve(root)
local st = require('sessiontree')
local rpc = require('sessiontree.rpc')
st.setup({ cmd = command(), sessions_dir = root })

local function user(text)
  return { type = 'message', message = { role = 'user', content = text, timestamp = 1735689600000 } }
end
local function assistant(text)
  return {
    type = 'message',
    message = { role = 'assistant', content = { { type = 'text', text = text } }, timestamp = 1735689600000 },
  }
end

-- A second daemon writes the session, as another program would.
local other = rpc.start({ cmd = command(), sessions_dir = root })
local created = other:request('session/create', { cwd = '/work/nvim' })
local batch = other:request('session/append', {
  sessionId = created.sessionId,
  entries = { user('Hello'), assistant('Hi there'), user('Fix the bug') },
})
local ids = {}
for _, entry in ipairs(batch.appended) do
  table.insert(ids, entry.id)
end
other:request('session/setName', { sessionId = created.sessionId, name = 'Demo' })

test('session/list with an empty object (vim.empty_dict), not an array', function()
  local sessions = st.list()
  eq(1, #sessions, 'sessions listed')
  eq('Demo', sessions[1].name)
end)

test(':SessionOpen draws the tree of the file', function()
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(created.path))
  eq(true, vim.api.nvim_buf_get_name(0):match('sessiontree://tree$') ~= nil, 'the tree buffer is current')
  local lines = buffer_lines()
  eq('Session Demo  (' .. created.path .. ')', lines[1], 'title')
  eq({
    '● user: Hello',
    '● assistant: Hi there',
    '● user: Fix the bug',
    '● session info: name: Demo ← leaf',
  }, vim.list_slice(lines, 3), 'tree lines')
end)

test('<CR> on an entry moves the leaf; the next append branches there', function()
  cursor_to('user: Hello')
  press('<CR>')
  local info = st.request('session/info', { sessionId = st.state.session.sessionId })
  eq(ids[1], info.leafId, 'leaf after <CR>')
  st.request('session/append', { sessionId = st.state.session.sessionId, entry = user('Another way') })
  st.refresh()
  eq({
    '● user: Hello',
    '  ○ assistant: Hi there',
    '  ○ user: Fix the bug',
    '  ○ session info: name: Demo',
    '  ● user: Another way ← leaf',
  }, vim.list_slice(buffer_lines(), 3), 'tree after branching')
end)

test('l labels the entry under the cursor: in the buffer and in the file', function()
  cursor_to('user: Hello')
  press('lstart<CR>')
  eq('● user: Hello [start]', buffer_lines()[3])
  local labels = {}
  for _, entry in ipairs(read_entries(created.path)) do
    if entry.type == 'label' then
      table.insert(labels, { entry.targetId, entry.label })
    end
  end
  eq({ { ids[1], 'start' } }, labels, 'label entries in the file')
end)

test('the tree redraws when another daemon appends', function()
  local opened = other:request('session/open', { path = created.path })
  local leaf = st.request('session/info', { sessionId = st.state.session.sessionId }).leafId
  other:request('session/append', { sessionId = opened.sessionId, entry = assistant('From elsewhere'), parentId = leaf })
  local redrawn = vim.wait(5000, function()
    return vim.tbl_contains(buffer_lines(), '  ● assistant: From elsewhere ← leaf')
  end, 20)
  eq(true, redrawn, 'redrawn by session/didChange: ' .. vim.inspect(buffer_lines()))
end)

test(':SessionContext shows what the model sees', function()
  vim.cmd('SessionContext')
  eq({ 'user: Hello', 'user: Another way', 'assistant: From elsewhere' }, buffer_lines(), 'context lines')
end)

test('f forks at the entry under the cursor into a new file and shows it', function()
  vim.cmd('SessionTree')
  cursor_to('assistant: Hi there')
  local before = st.state.session.path
  press('f')
  local after = st.state.session.path
  eq(true, after ~= before and vim.fn.filereadable(after) == 1, 'a new session file')
  local forked = read_entries(after)
  eq('session', forked[1].type)
  eq(before, forked[1].parentSession)
  eq({ ids[1], ids[2] }, { forked[2].id, forked[3].id }, 'the path to the entry, copied')
  -- The fork keeps the label of the first entry, re-created after the path: the new leaf.
  eq({ '● user: Hello [start]', '● assistant: Hi there', '● label: ' .. ids[1] .. ': start ← leaf' }, vim.list_slice(buffer_lines(), 3), 'fork tree')
end)

test('errors become messages, not tracebacks', function()
  local ok, err = st.guard(st.open, root .. '/missing.jsonl')
  eq(false, ok)
  eq(-32015, err.code, 'FileNotFound')
end)

local codes = { st.stop(), other:stop() }
test('both daemons exit cleanly', function()
  eq({ 0, 0 }, codes)
end)

vim.fn.delete(root, 'rf')
out(string.format('%d passed, %d failed', passed, #failures))
if #failures > 0 then
  vim.cmd('cquit 1')
else
  vim.cmd('qall!')
end
