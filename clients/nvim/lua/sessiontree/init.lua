-- sessiontree for Neovim (0.7 to 0.11): a tree buffer of the current session, its context, and
-- the moves (switch branch, label, fork), all through the sessiontree daemon.
--
--   require('sessiontree').setup({ cmd = { 'sessiontree', 'serve' }, sessions_dir = '~/sessions' })
--   :SessionOpen path/to/session.jsonl   :SessionTree   :SessionContext
--
-- Every command is asynchronous: it shows its buffer at once ("Loading…") and fills it when the
-- daemon answers, so the editor never waits on the daemon. The daemon starts on first use; when it
-- cannot be found or dies, a message says so, and the next command starts it again (and opens the
-- session again).
local rpc = require('sessiontree.rpc')
local build = require('sessiontree.build')

local M = {}

M.config = { cmd = nil, sessions_dir = nil }

local HEADER_LINES = 2
local HELP = '<CR> switch  l label  f fork  c context  r refresh'

-- client: the running daemon; session: the open session {sessionId, path, name, entryCount,
-- client (the daemon it is open in)}; tree: the tree buffer and its drawing.
local state = {
  client = nil,
  session = nil,
  tree = {
    buf = nil,
    ids = {}, -- ids[i]: the entry on line HEADER_LINES + i
    shown = nil, -- the session whose tree the buffer holds
    generation = 0, -- of the last refresh started
    floor = 0, -- answers of older refreshes than this are not drawn (the user changed something since)
    painted = 0, -- the generation drawn last
    busy = false, -- a refresh is under way
    stale = false, -- changed while no window showed it: refreshed when one does
    dirty = false, -- something changed while it was
    request = nil,
    client = nil,
  },
  context_request = nil,
}
M.state = state

function M.setup(opts)
  M.config = vim.tbl_extend('force', M.config, opts or {})
end

local function notify(message, level)
  vim.notify('sessiontree: ' .. message, level or vim.log.levels.INFO)
end

--- Report a failed request. A request that failed because the daemon exited is not reported
--- again: its exit was.
local function report(err)
  if type(err) ~= 'table' then
    err = { message = tostring(err) }
  end
  if err.code == rpc.DAEMON_EXITED and err.reported then
    return
  end
  err.reported = true
  notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
end
M.report = report

local function on_notification(method, params)
  local session = state.session
  if method == 'session/didChange' then
    if session and params.sessionId == session.sessionId then
      for _, entry in ipairs(params.entries or {}) do
        if entry.type == 'session_info' then
          session.name = entry.name
        end
      end
      M.refresh()
    end
  elseif method == 'window/logMessage' then
    notify(params.message, vim.log.levels.WARN)
  end
end

local function on_exit(client)
  if client == state.client and not state.stopping then
    if client.exit_error then
      client.exit_error.reported = true
    end
    local message = 'the daemon exited (' .. client.exit_text .. ')'
    local tail = client:stderr_tail(3)
    if #tail > 0 then
      message = message .. ':\n  ' .. table.concat(tail, '\n  ')
    end
    notify(message .. '\nIt starts again with the next command.', vim.log.levels.ERROR)
  end
end

--- The running daemon, started if it is not running. Raises {code, message} when it cannot start.
function M.client()
  local client = state.client
  if client and client:alive() then
    return client
  end
  if client and client.state == 'failed' then
    client:kill()
  end
  local started, err = rpc.start({
    cmd = M.config.cmd,
    sessions_dir = M.config.sessions_dir,
    on_notification = on_notification,
    on_exit = on_exit,
  })
  if not started then
    error({ code = rpc.DAEMON_EXITED, message = err })
  end
  state.client = started
  return started
end

--- An asynchronous request to the daemon: callback(err, result) on the main loop. Returns the
--- request's handle (for client:cancel).
function M.request(method, params, callback)
  local client = M.client()
  return client:request(method, params, callback or function(err)
    if err then
      report(err)
    end
  end)
end

--- A request that waits for its answer, for scripts and tests (not for the editor's commands).
function M.request_sync(method, params, timeout_ms)
  return M.client():request_sync(method, params, timeout_ms)
end

local function no_session()
  return { message = 'no session is open: :SessionOpen {file}' }
end

--- Run fn(session, client) with the open session in a running daemon: when the daemon was
--- restarted since the session was opened, open its file again first (if that fails, the error
--- is reported and on_error(err) called).
function M.with_session(fn, on_error)
  local session = state.session
  if session == nil then
    error(no_session())
  end
  local client = M.client()
  if session.client == client then
    return fn(session, client)
  end
  client:request('session/open', { path = session.path }, function(err, opened)
    if err or state.session ~= session then
      if err then
        report(err)
      end
      if on_error then
        on_error(err)
      end
      return
    end
    session.sessionId, session.name, session.client = opened.sessionId, opened.name, client
    client:request('session/subscribe', { sessionId = opened.sessionId }, function(e)
      if e then
        report(e)
      end
    end)
    fn(session, client)
  end)
end

-- Buffers --------------------------------------------------------------------------------------

local function scratch(name, filetype)
  local buf = vim.fn.bufnr(name)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(true, true)
    vim.api.nvim_buf_set_name(buf, name)
  end
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].undolevels = -1
  vim.bo[buf].filetype = filetype
  return buf
end

local function set_lines(buf, first, last, lines)
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
end

local function fire(pattern)
  vim.api.nvim_exec_autocmds('User', { pattern = pattern, modeline = false })
end

local function tree_buf()
  local buf = state.tree.buf
  if buf and vim.api.nvim_buf_is_valid(buf) then
    return buf
  end
end

local function title(session)
  return 'Session ' .. (session.name or session.sessionId) .. '  (' .. session.path .. ')'
end

--- Show a message instead of the tree (opening, loading, an error).
local function tree_message(text)
  local buf = tree_buf()
  if buf then
    set_lines(buf, 0, -1, { text })
    state.tree.ids, state.tree.shown = {}, nil
  end
end

local function show(buf)
  if vim.api.nvim_get_current_buf() ~= buf then
    vim.api.nvim_set_current_buf(buf)
  end
  vim.wo.wrap = false
end

-- Replace the tree lines with `lines`, writing only the lines that changed (a new entry of a long
-- session changes a few lines, not 100,000), keeping the cursor where it was.
local function paint(session, lines, ids, leaf)
  local buf = tree_buf()
  if not buf then
    return
  end
  local t = state.tree
  local first_time = t.shown ~= session.path
  local new = { title(session), HELP }
  if first_time then
    vim.list_extend(new, lines)
    set_lines(buf, 0, -1, new)
  else
    set_lines(buf, 0, HEADER_LINES, new)
    local old = t.ids
    local old_lines = vim.api.nvim_buf_get_lines(buf, HEADER_LINES, -1, false)
    local top, n_old, n_new = 1, #old_lines, #lines
    while top <= n_old and top <= n_new and old_lines[top] == lines[top] and old[top] == ids[top] do
      top = top + 1
    end
    local bottom = 0 -- lines equal at the end
    while bottom < n_old - top + 1 and bottom < n_new - top + 1
      and old_lines[n_old - bottom] == lines[n_new - bottom] and old[n_old - bottom] == ids[n_new - bottom] do
      bottom = bottom + 1
    end
    if top <= n_old or top <= n_new then
      set_lines(buf, HEADER_LINES + top - 1, HEADER_LINES + n_old - bottom, vim.list_slice(lines, top, n_new - bottom))
    end
  end
  t.ids, t.shown = ids, session.path
  if first_time and leaf then
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      vim.api.nvim_win_set_cursor(win, { HEADER_LINES + leaf, 0 })
    end
  end
  fire('SessionTreeDrawn')
end

--- Draw the tree again from the daemon (errors are reported, not raised). A tree buffer that no
--- window shows is only marked stale, and drawn when a window shows it again. Changes that
--- arrive while a refresh is under way are gathered into one more refresh when it ends;
--- opts.replace (the user changed something) cancels the one under way instead, and its answer
--- is not drawn.
function M.refresh(opts)
  local t = state.tree
  if not (state.session and tree_buf()) then
    return
  end
  local replace = opts and opts.replace
  if not replace and #vim.fn.win_findbuf(t.buf) == 0 then
    t.stale = true
    return
  end
  t.stale = false
  if t.busy and not replace then
    t.dirty = true
    return
  end
  if t.busy and t.request and t.client then
    t.client:cancel(t.request)
  end
  t.generation = t.generation + 1
  local generation = t.generation
  if replace then
    t.floor = generation
  end
  t.busy, t.dirty, t.request = true, false, nil
  local function done()
    if generation == t.generation then
      t.busy, t.request = false, nil
      if t.dirty then
        M.refresh()
      end
    end
  end
  local ok, err = pcall(M.with_session, function(session, client)
    t.client = client
    client:request('session/info', { sessionId = session.sessionId }, function(e, info)
      local buf = tree_buf()
      if not e and info and state.session == session then
        session.name = info.name
        if buf and t.shown == session.path then
          set_lines(buf, 0, 1, { title(session) })
        end
      end
    end)
    t.request = client:request('session/tree', { sessionId = session.sessionId }, function(e, tree, body)
      t.request = nil
      if e then
        if generation >= t.floor then
          report(e)
        end
        return done()
      end
      build.lines(tree, body, function(build_err, lines, ids, leaf)
        if build_err then
          report(build_err)
        elseif generation >= t.floor and generation > t.painted and state.session == session then
          t.painted = generation
          paint(session, lines, ids, leaf)
        end
        done()
      end)
    end, { raw = true })
  end, done)
  if not ok then
    t.busy = false
    report(err)
  end
end

--- The entry on the cursor line of the tree buffer.
function M.entry_at_cursor()
  local line = vim.api.nvim_win_get_cursor(0)[1]
  return state.tree.ids[line - HEADER_LINES]
end

--- Run fn, turning an error into a message instead of a Lua traceback. Returns ok, err.
function M.guard(fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok then
    report(err)
  end
  return ok, err
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

--- The tree buffer, made current, with its keys.
function M.tree_buffer()
  local buf = scratch('sessiontree://tree', 'sessiontree')
  if state.tree.buf ~= buf then
    state.tree.buf, state.tree.shown, state.tree.ids = buf, nil, {}
    vim.api.nvim_create_autocmd('BufWinEnter', {
      buffer = buf,
      callback = function()
        if state.tree.stale then
          M.refresh({ replace = true })
        end
      end,
    })
  end
  show(buf)
  map(buf, '<CR>', function()
    M.branch(M.entry_at_cursor())
  end)
  map(buf, 'l', function()
    local id = M.entry_at_cursor()
    if id then
      vim.ui.input({ prompt = 'Label (empty clears): ' }, function(text)
        if text then
          M.guard(M.label, id, text)
        end
      end)
    end
  end)
  map(buf, 'f', function()
    M.fork(M.entry_at_cursor())
  end)
  map(buf, 'c', function()
    M.show_context()
  end)
  map(buf, 'r', function()
    M.refresh({ replace = true })
  end)
  return buf
end

-- Commands -------------------------------------------------------------------------------------

--- Open a session file and watch it for other writers; on_open(session) when it is open.
function M.open(path, on_open)
  path = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  local client = M.client()
  client:request('session/open', { path = path }, function(err, opened)
    if err then
      if tree_buf() and state.tree.shown == nil then
        if state.session then
          M.refresh({ replace = true }) -- the tree of the session still open
        else
          tree_message('Could not open ' .. path .. ': ' .. tostring(err.message))
        end
      end
      return report(err)
    end
    local previous = state.session
    if previous and previous.client == client and previous.sessionId ~= opened.sessionId then
      client:request('session/close', { sessionId = previous.sessionId }, function() end)
    end
    state.session = {
      sessionId = opened.sessionId,
      path = opened.path,
      name = opened.name,
      entryCount = opened.entryCount,
      client = client,
    }
    client:request('session/subscribe', { sessionId = opened.sessionId }, function(e)
      if e then
        report(e)
      end
    end)
    if state.tree.shown ~= opened.path then
      tree_message(string.format('Loading the tree of %s (%d entries)…', opened.path, opened.entryCount or 0))
    end
    M.refresh({ replace = true })
    if on_open then
      on_open(state.session)
    end
  end)
end

--- :SessionOpen {file}: open it and show its tree.
function M.open_and_show(path)
  M.client() -- fails here, before the buffer changes, when the daemon cannot start
  local buf = M.tree_buffer()
  if state.tree.shown == nil or state.session == nil
    or state.tree.shown ~= vim.fn.fnamemodify(vim.fn.expand(path), ':p') then
    tree_message('Opening ' .. path .. '…')
  end
  M.open(path)
  return buf
end

--- :SessionTree: the tree of the open session, shown at once. The buffer follows the session
--- (session/didChange) while a window shows it, and is brought up to date when one shows it
--- again; a new buffer, or one whose daemon has exited, is loaded again.
function M.show_tree()
  local session = state.session
  if session == nil then
    error(no_session())
  end
  local buf = M.tree_buffer()
  if state.tree.shown ~= session.path then
    tree_message(string.format('Loading the tree of %s (%d entries)…', session.path, session.entryCount or 0))
    M.refresh({ replace = true })
  elseif not (session.client and session.client:alive()) then
    M.refresh({ replace = true })
  end
  return buf
end

--- Move the leaf to an entry.
function M.branch(entry_id)
  if not entry_id then
    return
  end
  M.with_session(function(session, client)
    client:request('session/branch', { sessionId = session.sessionId, entryId = entry_id }, function(err)
      if err then
        return report(err)
      end
      M.refresh({ replace = true })
    end)
  end)
end

--- Set an entry's label; empty text clears it.
function M.label(entry_id, text)
  M.with_session(function(session, client)
    local params = { sessionId = session.sessionId, targetId = entry_id }
    text = vim.trim(text or '')
    if text ~= '' then
      params.label = text
    end
    client:request('session/label', params, function(err)
      if err then
        return report(err)
      end
      M.refresh({ replace = true })
    end)
  end)
end

--- Fork at an entry into a new file, and show the new session.
function M.fork(entry_id)
  if not entry_id then
    return
  end
  M.with_session(function(session, client)
    client:request('session/fork', { sessionId = session.sessionId, entryId = entry_id }, function(err, forked)
      if err then
        return report(err)
      end
      M.open(forked.path, function()
        notify('forked into ' .. forked.path)
      end)
    end)
  end)
end

--- :SessionContext: what the model sees at the leaf. A newer :SessionContext cancels an older
--- one still waiting.
function M.show_context()
  local session = state.session
  if session == nil then
    error(no_session())
  end
  local buf = scratch('sessiontree://context', 'sessiontreecontext')
  show(buf)
  set_lines(buf, 0, -1, { 'Loading the context at the leaf…' })
  M.with_session(function(s, client)
    if state.context_request then
      state.context_request.client:cancel(state.context_request.handle)
    end
    local request = { client = client }
    state.context_request = request
    request.handle = client:request('session/context', { sessionId = s.sessionId }, function(err, context)
      if state.context_request == request then
        state.context_request = nil
      end
      if err then
        if vim.api.nvim_buf_is_valid(buf) then
          set_lines(buf, 0, -1, { 'Could not build the context: ' .. tostring(err.message) })
        end
        return report(err)
      end
      if vim.api.nvim_buf_is_valid(buf) then
        set_lines(buf, 0, -1, require('sessiontree.render').context_lines(context))
        fire('SessionContextDrawn')
      end
    end)
  end)
  return buf
end

--- :SessionOpen without a file: pick from the daemon's list.
function M.pick()
  M.request('session/list', vim.empty_dict(), function(err, result)
    if err then
      return report(err)
    end
    if #result.sessions == 0 then
      return notify('no sessions under the sessions root')
    end
    vim.ui.select(result.sessions, {
      prompt = 'Open session',
      format_item = function(s)
        return (s.name or s.firstMessage or s.path) .. '  ' .. (s.cwd or '') .. '  ' .. (s.modified or '')
      end,
    }, function(choice)
      if choice then
        M.guard(M.open_and_show, choice.path)
      end
    end)
  end)
end

--- Shut the daemon down (waiting for it at most timeout_ms); returns its exit code.
function M.stop(timeout_ms)
  local client = state.client
  if client then
    state.stopping = true
    local code = client:stop(timeout_ms)
    state.stopping = false
    state.client, state.session = nil, nil
    state.tree.shown = nil
    return code
  end
end

return M
