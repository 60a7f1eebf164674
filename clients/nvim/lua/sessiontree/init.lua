-- sessiontree for Neovim (0.7 to 0.11): a tree buffer of the current session, its context, and
-- the moves (switch branch, label, fork), all through the sessiontree daemon.
--
--   require('sessiontree').setup({ cmd = { 'sessiontree', 'serve' }, sessions_dir = '~/sessions' })
--   :SessionOpen path/to/session.jsonl   :SessionTree   :SessionContext
--
-- Every command is asynchronous: it shows its buffer at once ("Loading…") and fills it when the
-- daemon answers, so the editor never waits on the daemon. The tree comes from session/treeView a
-- page at a time: the page that shows the leaf first, then the pages the windows scroll to (see
-- view.lua for what each line shows). The daemon starts on first use; when it cannot be found or
-- dies, a message says so, and the next command starts it again (and opens the session again).
--
-- This module is the plugin's API: it gathers the functions of the modules that hold them
-- (state, messages, daemon, buffers, refresh, tree, commands, search_picker).
local M = {}

-- confirm: ask before a write to the session file made on one key (fork, clearing a label).
M.config = { cmd = nil, sessions_dir = nil, index_dir = nil, store = nil, confirm = true }
M.state = require('sessiontree.state')

function M.setup(opts)
  M.config = vim.tbl_extend('force', M.config, opts or {})
end

for _, module in ipairs({ 'messages', 'daemon', 'refresh', 'tree', 'commands', 'search_picker' }) do
  for name, value in pairs(require('sessiontree.' .. module)) do
    M[name] = value
  end
end

return M
