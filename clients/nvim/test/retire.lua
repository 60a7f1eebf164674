-- Headless test of :SessionTrash, :SessionArchive and :SessionRestore against the real daemon:
--   nvim --headless -u NONE -c "luafile clients/nvim/test/retire.lua"
-- The daemon's trash is $XDG_DATA_HOME/Trash, set inside the test's directory. Exits 0 when all pass.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local plugin_dir = vim.fn.fnamemodify(here, ':h')
local repo = vim.fn.fnamemodify(plugin_dir, ':h:h')
local root = vim.fn.tempname()
vim.fn.mkdir(root .. '/sessions/--work-retire--', 'p')
vim.env.XDG_DATA_HOME = root .. '/data'
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd('runtime plugin/sessiontree.lua')

local failures, passed = 0, 0
local messages = {}
vim.notify = function(message)
  table.insert(messages, message)
end

local function test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passed = passed + 1
    io.stdout:write('ok - ' .. name .. '\n')
  else
    failures = failures + 1
    io.stdout:write('not ok - ' .. name .. '\n' .. tostring(type(err) == 'table' and vim.inspect(err) or err) .. '\n')
    io.stdout:write('  messages: ' .. vim.inspect(messages) .. '\n')
  end
end

local function wait_for(what, fn)
  if not vim.wait(20000, fn, 10) then
    error('timed out waiting for ' .. what, 2)
  end
end

local function eq(expected, got, what)
  if not vim.deep_equal(expected, got) then
    error(string.format('%s: expected %s, got %s', what, vim.inspect(expected), vim.inspect(got)), 2)
  end
end

local venv = repo .. '/.venv/bin/python'
local python = (vim.env.SESSIONTREE_PYTHON or '') ~= '' and vim.env.SESSIONTREE_PYTHON
  or (vim.fn.executable(venv) == 1 and venv or 'python3')
local st = require('sessiontree')
local retire = require('sessiontree.retire')
st.setup({ cmd = { python, '-m', 'sessiontree', 'serve' }, sessions_dir = root .. '/sessions', index_dir = false })

local path = root .. '/sessions/--work-retire--/2026-01-01T00-00-00-000Z_retire.jsonl'
vim.fn.writefile({ '{"type":"session","version":3,"id":"retire","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/retire"}' }, path)
local trashed = root .. '/data/Trash/files/2026-01-01T00-00-00-000Z_retire.jsonl'
local archived = root .. '/sessions/--work-retire--/.archive/2026-01-01T00-00-00-000Z_retire.jsonl'
local answers, asked = {}, {}
retire.confirm = function(question)
  table.insert(asked, question)
  return table.remove(answers, 1) or false
end

local function opened()
  return st.state.session ~= nil and st.state.session.path == path
end

test(':SessionTrash asks first and moves nothing when declined', function()
  vim.cmd('SessionOpen ' .. path)
  wait_for('the session to open', opened)
  vim.cmd('SessionTrash')
  eq(1, #asked, 'confirmations asked')
  assert(asked[1]:find('to the trash', 1, true), asked[1])
  eq(1, vim.fn.filereadable(path), 'the file is still there')
  assert(opened(), 'the session stays open')
end)

test(':SessionTrash moves the open session to the trash once confirmed', function()
  answers = { true }
  vim.cmd('SessionTrash')
  wait_for('the file to be trashed and the session closed', function()
    return vim.fn.filereadable(trashed) == 1 and st.state.session == nil
  end)
  eq(0, vim.fn.filereadable(path), 'the file left its folder')
  eq(1, vim.fn.filereadable(root .. '/data/Trash/info/2026-01-01T00-00-00-000Z_retire.jsonl.trashinfo'), 'its trash info')
  eq(nil, st.state.session, 'the session is closed')
end)

test(':SessionRestore brings it back and shows it', function()
  vim.cmd('SessionRestore ' .. path)
  wait_for('the session to be restored and open', opened)
  eq(1, vim.fn.filereadable(path), 'the file is back')
  eq(0, vim.fn.filereadable(trashed), 'and out of the trash')
end)

test(':SessionArchive moves it to .archive/ once confirmed', function()
  answers = { true }
  vim.cmd('SessionArchive')
  wait_for('the file to be archived and the session closed', function()
    return vim.fn.filereadable(archived) == 1 and st.state.session == nil
  end)
  eq(nil, st.state.session, 'the session is closed')
  vim.cmd('SessionRestore ' .. archived)
  wait_for('the archived session back', opened)
end)

test('a file outside the sessions root is refused in plain words', function()
  local outside = root .. '/outside.jsonl'
  vim.fn.writefile({ '{}' }, outside)
  answers = { true }
  vim.cmd('SessionTrash ' .. outside)
  wait_for('the refusal', function()
    for _, m in ipairs(messages) do
      if m:find('outside the sessions directory', 1, true) then
        return true
      end
    end
    return false
  end)
  eq(1, vim.fn.filereadable(outside), 'the file stays')
end)

st.stop(1500)
vim.fn.delete(root, 'rf')
io.stdout:write(string.format('%d passed, %d failed\n', passed, failures))
vim.cmd(failures == 0 and 'qall!' or 'cquit!')
