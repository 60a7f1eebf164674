-- A short session through the plugin's commands, for tests/transcripts/nvim-client.jsonl:
-- run by tests/transcripts/record_clients.py with the daemon command (recording, with its
-- sessions root) in $SESSIONTREE_COMMAND. The commands are asynchronous: the script waits for
-- each one's buffer before the next.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(here, ':h'))
vim.cmd('runtime plugin/sessiontree.lua')
local st = require('sessiontree')

local function wait_for(what, fn)
  assert(vim.wait(10000, fn, 10), 'timed out waiting for ' .. what)
end
local function has_line(text)
  return function()
    return vim.tbl_contains(vim.api.nvim_buf_get_lines(0, 0, -1, false), text)
  end
end

local ok, err = pcall(function()
  local function user(text)
    return { type = 'message', message = { role = 'user', content = text, timestamp = 1735689600000 } }
  end
  local created = st.request_sync('session/create', { cwd = '/work/demo' })
  local first = st.request_sync('session/append', { sessionId = created.sessionId, entry = user('Hello') })
  st.request_sync('session/append', { sessionId = created.sessionId, entry = user('Fix the bug') })
  st.request_sync('session/close', { sessionId = created.sessionId })
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(created.path))
  wait_for('the tree', has_line('● user: Fix the bug ← leaf'))
  -- <CR> on the first entry, then a label and a fork from the tree buffer.
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  wait_for('the leaf', has_line('● user: Hello ← leaf'))
  st.label(first.id, 'start')
  wait_for('the label', has_line('● user: Hello [start]'))
  vim.cmd('SessionContext')
  wait_for('the context', has_line('user: Hello'))
  local path = st.state.session.path
  st.fork(first.id)
  wait_for('the fork', function()
    return st.state.session.path ~= path and st.state.tree.shown == st.state.session.path
  end)
  assert(st.stop() == 0, 'the daemon did not exit cleanly')
end)
if not ok then
  io.stderr:write(vim.inspect(err) .. '\n')
  vim.cmd('cquit 1')
end
vim.cmd('qall!')
