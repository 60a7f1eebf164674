-- A short session through the plugin's commands, for tests/transcripts/nvim-client.jsonl:
-- run by tests/transcripts/record_clients.py with the daemon command (recording, with its
-- sessions root) in $SESSIONTREE_COMMAND.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
vim.opt.runtimepath:prepend(vim.fn.fnamemodify(here, ':h'))
vim.cmd('runtime plugin/sessiontree.lua')
local st = require('sessiontree')

local ok, err = pcall(function()
  local function user(text)
    return { type = 'message', message = { role = 'user', content = text, timestamp = 1735689600000 } }
  end
  local created = st.request('session/create', { cwd = '/work/demo' })
  local first = st.request('session/append', { sessionId = created.sessionId, entry = user('Hello') })
  st.request('session/append', { sessionId = created.sessionId, entry = user('Fix the bug') })
  st.request('session/close', { sessionId = created.sessionId })
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(created.path))
  -- <CR> on the first entry, then a label and a fork from the tree buffer.
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes('<CR>', true, false, true), 'x', false)
  st.label(first.id, 'start')
  vim.cmd('SessionContext')
  st.fork(first.id)
  assert(st.stop() == 0, 'the daemon did not exit cleanly')
end)
if not ok then
  io.stderr:write(vim.inspect(err) .. '\n')
  vim.cmd('cquit 1')
end
vim.cmd('qall!')
