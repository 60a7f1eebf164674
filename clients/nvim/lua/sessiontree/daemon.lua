-- The daemon: started on first use, started again after it exits (the open session opened in it
-- again), its notifications handed to the tree.
local rpc = require('sessiontree.rpc')
local state = require('sessiontree.state')
local messages = require('sessiontree.messages')
local notify, report = messages.notify, messages.report

local M = {}

local function st() -- the plugin's API (init.lua), looked up when called: modules call each other through it
  return require('sessiontree')
end

local function on_notification(method, params)
  local session = state.session
  if method == 'session/didChange' then
    if session and params.sessionId == session.sessionId then
      for _, entry in ipairs(params.entries or {}) do
        if entry.type == 'session_info' then
          session.name = entry.name
        end
      end
      session.leafId = params.leafId
      state.tree.mismatches = 0
      st().refresh()
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
    local message = 'the daemon exited (' .. client.exit_text .. '); the next command starts it again'
    local tail = client:stderr_tail(3)
    if #tail > 0 then
      message = message .. '\nIts last lines on stderr:\n  ' .. table.concat(tail, '\n  ')
    end
    notify(message, vim.log.levels.ERROR)
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
    cmd = st().config.cmd,
    sessions_dir = st().config.sessions_dir,
    index_dir = st().config.index_dir,
    store = st().config.store,
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
    session.leafId = opened.leafId
    client:request('session/subscribe', { sessionId = opened.sessionId }, function(e)
      if e then
        report(e)
      end
    end)
    fn(session, client)
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
    state.tree.shown, state.tree.view = nil, nil
    return code
  end
end

M.no_session = no_session

return M
