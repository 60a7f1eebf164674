-- sessiontree for Neovim: a tree buffer of the current session, its context, and the moves
-- (switch branch, label, fork), all through the sessiontree daemon.
--
--   require('sessiontree').setup({ cmd = { 'python3', '-m', 'sessiontree', 'serve' } })
--   :SessionOpen path/to/session.jsonl   :SessionTree   :SessionContext
local rpc = require('sessiontree.rpc')
local render = require('sessiontree.render')

local M = {}

M.config = { cmd = nil, sessions_dir = nil }

-- client: the daemon; session: {sessionId, path}; tree: {buf, ids} of the tree buffer.
local state = { client = nil, session = nil, tree = { buf = nil, ids = {} } }
M.state = state

function M.setup(opts)
  M.config = vim.tbl_extend('force', M.config, opts or {})
end

local function notify(message, level)
  vim.notify('sessiontree: ' .. message, level or vim.log.levels.INFO)
end

local function on_notification(method, params)
  if method == 'session/didChange' and state.session and params.sessionId == state.session.sessionId then
    -- Notifications arrive in a fast event; buffers are redrawn from the main loop.
    vim.schedule(function()
      M.refresh()
    end)
  elseif method == 'window/logMessage' then
    vim.schedule(function()
      notify(params.message, vim.log.levels.WARN)
    end)
  end
end

function M.client()
  if state.client == nil or state.client.exit_code ~= nil then
    state.client = rpc.start({
      cmd = M.config.cmd,
      sessions_dir = M.config.sessions_dir,
      on_notification = on_notification,
    })
  end
  return state.client
end

function M.request(method, params)
  return M.client():request(method, params)
end

local function require_session()
  if state.session == nil then
    error({ message = 'no session is open: :SessionOpen {file}' })
  end
  return state.session
end

--- Open a session file (and watch it for other writers).
function M.open(path)
  local opened = M.request('session/open', { path = vim.fn.fnamemodify(path, ':p') })
  if state.session and state.session.sessionId ~= opened.sessionId then
    pcall(M.request, 'session/close', { sessionId = state.session.sessionId })
  end
  state.session = { sessionId = opened.sessionId, path = opened.path, name = opened.name }
  M.request('session/subscribe', { sessionId = opened.sessionId })
  M.refresh()
  return state.session
end

--- Every session under the sessions root (an empty object: vim.empty_dict, not {}).
function M.list()
  return M.request('session/list', vim.empty_dict()).sessions
end

local function scratch(name)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.api.nvim_buf_set_option(buf, 'buftype', 'nofile')
  vim.api.nvim_buf_set_option(buf, 'swapfile', false)
  return buf
end

local function set_lines(buf, lines)
  vim.api.nvim_buf_set_option(buf, 'modifiable', true)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.api.nvim_buf_set_option(buf, 'modifiable', false)
end

local HEADER_LINES = 2

local function draw_tree()
  local buf = state.tree.buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    return
  end
  local session = require_session()
  local result = M.request('session/tree', { sessionId = session.sessionId })
  local lines, ids = render.lines(result)
  local info = M.request('session/info', { sessionId = session.sessionId })
  local title = 'Session ' .. (info.name or session.sessionId) .. '  (' .. session.path .. ')'
  table.insert(lines, 1, title)
  table.insert(lines, 2, '<CR> switch  l label  f fork  c context  r refresh')
  state.tree.ids = ids
  set_lines(buf, lines)
end

--- Redraw what is shown (after our own changes or another writer's).
function M.refresh()
  if state.session then
    draw_tree()
  end
end

--- The entry on the cursor line of the tree buffer.
function M.entry_at_cursor()
  local line = vim.api.nvim_win_get_cursor(0)[1]
  return state.tree.ids[line - HEADER_LINES]
end

local function map(buf, lhs, fn)
  vim.api.nvim_buf_set_keymap(buf, 'n', lhs, '', {
    noremap = true,
    silent = true,
    callback = function()
      M.guard(fn)
    end,
  })
end

--- :SessionTree: the tree of the open session in a buffer.
function M.show_tree()
  require_session()
  local buf = scratch('sessiontree://tree')
  state.tree.buf = buf
  vim.api.nvim_set_current_buf(buf)
  map(buf, '<CR>', function()
    M.branch(M.entry_at_cursor())
  end)
  map(buf, 'l', function()
    local id = M.entry_at_cursor()
    if id then
      M.label(id, vim.fn.input('Label (empty clears): '))
    end
  end)
  map(buf, 'f', function()
    M.fork(M.entry_at_cursor())
  end)
  map(buf, 'c', function()
    M.show_context()
  end)
  map(buf, 'r', M.refresh)
  draw_tree()
  return buf
end

--- Move the leaf to an entry.
function M.branch(entry_id)
  if not entry_id then
    return
  end
  local session = require_session()
  M.request('session/branch', { sessionId = session.sessionId, entryId = entry_id })
  M.refresh()
end

--- Set an entry's label; empty text clears it.
function M.label(entry_id, text)
  local session = require_session()
  local params = { sessionId = session.sessionId, targetId = entry_id }
  text = vim.trim(text or '')
  if text ~= '' then
    params.label = text
  end
  M.request('session/label', params)
  M.refresh()
end

--- Fork at an entry into a new file, and show the new session.
function M.fork(entry_id)
  if not entry_id then
    return
  end
  local session = require_session()
  local forked = M.request('session/fork', { sessionId = session.sessionId, entryId = entry_id })
  M.open(forked.path)
  notify('forked into ' .. forked.path)
  return forked
end

--- :SessionContext: what the model sees at the leaf.
function M.show_context()
  local session = require_session()
  local context = M.request('session/context', { sessionId = session.sessionId })
  local buf = scratch('sessiontree://context')
  set_lines(buf, render.context_lines(context))
  vim.api.nvim_set_current_buf(buf)
  return buf
end

--- Run fn, turning a daemon error into a message instead of a Lua traceback.
function M.guard(fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok then
    local message = type(err) == 'table' and err.message or tostring(err)
    notify(message, vim.log.levels.ERROR)
  end
  return ok, err
end

--- :SessionOpen without a file: pick from the daemon's list.
function M.pick()
  local sessions = M.list()
  vim.ui.select(sessions, {
    prompt = 'Open session',
    format_item = function(s)
      return (s.name or s.firstMessage) .. '  ' .. s.cwd .. '  ' .. s.modified
    end,
  }, function(choice)
    if choice then
      M.guard(function()
        M.open(choice.path)
        M.show_tree()
      end)
    end
  end)
end

function M.stop()
  if state.client then
    local code = state.client:stop()
    state.client, state.session = nil, nil
    return code
  end
end

return M
