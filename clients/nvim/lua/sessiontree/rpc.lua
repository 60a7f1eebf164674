-- The daemon over its standard input and output, for Neovim 0.7 to 0.11: spawn, LSP framing,
-- asynchronous requests.
--
-- This is libuv (vim.uv, vim.loop before 0.10) rather than vim.lsp.rpc.start, whose signature
-- changed in 0.10 (start(cmd, args, dispatchers) became start(cmd_list, dispatchers)) and whose
-- client lost its pid and kept the daemon's standard error to itself. libuv's spawn and pipes are
-- the same from 0.7 to 0.11, so one code path serves every version, and it gives what the plugin
-- needs: the process id, how the daemon ended (code or signal) with the last lines it wrote on
-- standard error, `$/cancelRequest`, and answers of megabytes framed in linear time (a tree of
-- 100,000 entries is over 20 MB) and handed over undecoded when the caller asks for that.
--
-- Every callback runs on the main loop (vim.schedule), never in a libuv callback. Two things of
-- Neovim's JSON to mind: an empty Lua table is encoded as `[]`, so empty objects are
-- vim.empty_dict(); and answers are decoded with JSON null in objects turned into nil, so a
-- `leafId: null` reads as an absent field.
local uv = vim.uv or vim.loop

local M = {}

-- Error codes of this client (the daemon's own are in protocol.md).
M.DAEMON_EXITED = -32099 -- the daemon is not running (it exited, or could not start)
M.REQUEST_CANCELLED = -32800
M.METHOD_NOT_FOUND = -32601
-- How long the synchronous helpers (scripts, tests, :checkhealth, leaving Neovim) wait.
M.TIMEOUT_MS = 10000
-- Answers at least this long whose request asked for `raw` are not decoded here.
M.RAW_THRESHOLD = 64 * 1024
local STDERR_LINES = 20

local DECODE_OPTS = { luanil = { object = true } }

--- The daemon command: `cmd` if given, else $SESSIONTREE_COMMAND (words), else
--- $SESSIONTREE_PYTHON -m sessiontree serve, else `sessiontree serve` from PATH.
function M.command(cmd)
  if cmd and #cmd > 0 then
    return vim.deepcopy(cmd)
  end
  local env = vim.env.SESSIONTREE_COMMAND
  if env and env:match('%S') then
    return vim.split(vim.trim(env), '%s+')
  end
  local python = vim.env.SESSIONTREE_PYTHON
  if python and python:match('%S') then
    return { python, '-m', 'sessiontree', 'serve' }
  end
  return { 'sessiontree', 'serve' }
end

--- An error value as the callbacks receive it (and request_sync raises it).
--- The running Neovim's version, e.g. "0.11.4".
function M.nvim_version()
  local v = vim.version()
  return string.format('%d.%d.%d', v.major, v.minor, v.patch)
end

local function rpc_error(code, message, data)
  return { code = code, message = message, data = data }
end
M.error = rpc_error

--- Content-Length framing: feed(chunk) calls on_body(body) for each whole message. Chunks of a
--- long body are kept in a list and joined once, so a 20 MB answer costs one copy, not hundreds.
local function framer(on_body)
  local head = '' -- bytes before a complete header block
  local parts, have, need = {}, 0, nil -- the body being read, when need is set
  return function(chunk)
    while chunk and chunk ~= '' do
      if need == nil then
        head = head .. chunk
        chunk = nil
        local stop = head:find('\r\n\r\n', 1, true)
        local sep = 4
        if not stop then
          stop = head:find('\n\n', 1, true)
          sep = 2
        end
        if not stop then
          return
        end
        local length = head:sub(1, stop - 1):lower():match('content%-length%s*:%s*(%d+)')
        local rest = head:sub(stop + sep)
        head = ''
        if length then
          need, parts, have = tonumber(length), { rest }, #rest
        else
          chunk = rest -- not a header we understand: look for the next one
        end
      else
        parts[#parts + 1] = chunk
        have = have + #chunk
        chunk = nil
      end
      if need ~= nil and have >= need then
        local all = #parts == 1 and parts[1] or table.concat(parts)
        local body = all:sub(1, need)
        chunk = all:sub(need + 1)
        parts, have, need = {}, 0, nil
        on_body(body)
      end
    end
  end
end
M._framer = framer

local function frame(message)
  local body = vim.json.encode(message)
  return 'Content-Length: ' .. #body .. '\r\n\r\n' .. body
end

local function exit_text(code, signal)
  if signal and signal ~= 0 then
    local names = { [1] = 'SIGHUP', [2] = 'SIGINT', [6] = 'SIGABRT', [9] = 'SIGKILL', [11] = 'SIGSEGV', [15] = 'SIGTERM' }
    return 'killed by ' .. (names[signal] or ('signal ' .. signal))
  end
  return 'exit code ' .. tostring(code)
end

local Client = {}
Client.__index = Client
M.Client = Client

-- `initializationOptions` of `initialize`: the index directory (false: none) and the store.
local function initialization_options(opts)
  local init_options = nil
  if opts.index_dir == false then
    init_options = { indexDir = false }
  elseif opts.index_dir then
    init_options = { indexDir = vim.fn.fnamemodify(vim.fn.expand(opts.index_dir), ':p') }
  end
  if opts.store then
    init_options = init_options or {}
    init_options.store = opts.store
  end
  return init_options
end

--- Spawn the daemon and send `initialize`. Returns the client at once (requests made before
--- the daemon answers `initialize` wait for it), or nil and a message saying why it could not
--- start. opts:
---   cmd, sessions_dir         the command (see M.command) and `--sessions-dir`
---   index_dir                 `initializationOptions.indexDir`: a directory, or false (none)
---   store                     `initializationOptions.store`: a PostgreSQL connection string
---   on_notification(method, params)
---   on_request(method, params) -> result, err   (requests from the daemon)
---   on_ready(client)          after `initialize` was answered
---   on_exit(client)           the process ended (client.exit_text says how)
function M.start(opts)
  opts = opts or {}
  local cmd = M.command(opts.cmd)
  if opts.sessions_dir then
    vim.list_extend(cmd, { '--sessions-dir', vim.fn.fnamemodify(opts.sessions_dir, ':p') })
  end
  local self = setmetatable({
    cmd = cmd,
    opts = opts,
    state = 'starting', -- then 'ready' (initialized), 'failed' (initialize refused) or 'exited'
    next_id = 0,
    callbacks = {}, -- id -> { fn = callback, raw = bool }
    queue = {}, -- requests waiting for `initialize`
    stderr_lines = {},
  }, Client)
  local program = cmd[1]
  if vim.fn.executable(program) ~= 1 then
    return nil, string.format(
      'cannot find the daemon `%s` (the command `%s`). Install sessiontree, or set $SESSIONTREE_COMMAND, '
        .. "or require('sessiontree').setup({ cmd = { ... } })",
      program,
      table.concat(cmd, ' ')
    )
  end
  self.stdin, self.stdout, self.stderr = uv.new_pipe(false), uv.new_pipe(false), uv.new_pipe(false)
  local args = vim.list_slice(cmd, 2)
  local handle, pid = uv.spawn(program, { args = args, stdio = { self.stdin, self.stdout, self.stderr } }, function(code, signal)
    self:_on_exit(code, signal)
  end)
  if not handle then
    for _, pipe in ipairs({ self.stdin, self.stdout, self.stderr }) do
      pipe:close()
    end
    return nil, string.format('cannot start the daemon `%s`: %s', table.concat(cmd, ' '), tostring(pid))
  end
  self.handle, self.pid = handle, pid
  self:_read_pipes()
  self:_initialize(initialization_options(opts))
  return self
end

-- Read the daemon's answers (framed) from stdout and its lines from stderr.
function Client:_read_pipes()
  local feed = framer(function(body)
    self:_on_body(body)
  end)
  self.stdout:read_start(function(err, chunk)
    if chunk then
      feed(chunk)
    elseif err then
      self:_stderr_line('reading the daemon: ' .. tostring(err))
    end
  end)
  local partial = ''
  self.stderr:read_start(function(_, chunk)
    if chunk then
      partial = partial .. chunk
      for line in partial:gmatch('([^\n]*)\n') do
        self:_stderr_line(line)
      end
      partial = partial:match('[^\n]*$')
    end
  end)
end

-- Send `initialize`; requests made meanwhile wait in the queue until it is answered.
function Client:_initialize(init_options)
  local opts = self.opts
  self:_send_request('initialize', {
    processId = vim.fn.getpid(),
    clientInfo = { name = 'sessiontree.nvim', version = M.nvim_version() },
    capabilities = vim.empty_dict(),
    initializationOptions = init_options,
  }, function(err, result)
    if err then
      self.state = 'failed'
      self.init_error = err
      self:_flush_queue(err)
      return
    end
    self.state = 'ready'
    self.initialize_result = result
    self:notify('initialized', vim.empty_dict())
    self:_flush_queue(nil)
    if opts.on_ready then
      opts.on_ready(self)
    end
  end)
end

function Client:_stderr_line(line)
  local root = line:match('serving sessions under (.-) %(durability')
  if root then
    self.sessions_root = root
  end
  table.insert(self.stderr_lines, line)
  if #self.stderr_lines > STDERR_LINES then
    table.remove(self.stderr_lines, 1)
  end
end

--- The daemon's last lines on standard error (a few), for error messages.
function Client:stderr_tail(n)
  local lines = {}
  for i = math.max(1, #self.stderr_lines - (n or 5) + 1), #self.stderr_lines do
    local line = vim.trim(self.stderr_lines[i])
    if line ~= '' then
      table.insert(lines, line)
    end
  end
  return lines
end

function Client:_on_exit(code, signal)
  self.exit_code, self.exit_signal = code, signal
  for _, pipe in ipairs({ self.stdin, self.stdout, self.stderr }) do
    if not pipe:is_closing() then
      pipe:close()
    end
  end
  if not self.handle:is_closing() then
    self.handle:close()
  end
  vim.schedule(function()
    self.state = 'exited'
    self.exit_text = exit_text(code, signal)
    local message = 'the daemon exited (' .. self.exit_text .. ')'
    local tail = self:stderr_tail(3)
    if #tail > 0 then
      message = message .. ': ' .. table.concat(tail, ' | ')
    end
    local err = rpc_error(M.DAEMON_EXITED, message)
    self.exit_error = err
    if self.opts.on_exit then
      self.opts.on_exit(self)
    end
    self:_flush_queue(err)
    local callbacks = self.callbacks
    self.callbacks = {}
    for _, entry in pairs(callbacks) do
      entry.fn(err, nil)
    end
  end)
end

--- True while the process runs (it may still be starting).
function Client:alive()
  return self.state == 'starting' or self.state == 'ready'
end

function Client:_write(message)
  if self.exit_code ~= nil or self.stdin:is_closing() then
    return false
  end
  self.stdin:write(frame(message))
  return true
end

-- Decode a message; for an answer to a `raw` request, pass the body on undecoded (a cheap look at
-- its start finds the id: the daemon writes `{"jsonrpc":"2.0","id":N,...`).
function Client:_on_body(body)
  if #body >= M.RAW_THRESHOLD then
    local id = tonumber(body:sub(1, 64):match('^%s*{%s*"jsonrpc"%s*:%s*"2%.0"%s*,%s*"id"%s*:%s*(%d+)%s*,'))
    local entry = id and self.callbacks[id]
    if entry and entry.raw then
      vim.schedule(function()
        if self.callbacks[id] == entry then
          self.callbacks[id] = nil
          entry.fn(nil, nil, body)
        end
      end)
      return
    end
  end
  vim.schedule(function()
    local ok, message = pcall(vim.json.decode, body, DECODE_OPTS)
    if not ok or type(message) ~= 'table' then
      self:_stderr_line('sessiontree.nvim: not JSON from the daemon: ' .. body:sub(1, 200))
      return
    end
    self:_dispatch(message, body)
  end)
end

function Client:_dispatch(message, body)
  if message.method ~= nil and message.id ~= nil then
    local handler = self.opts.on_request
    local result, err
    if handler then
      local ok, r, e = pcall(handler, message.method, message.params)
      if ok then
        result, err = r, e
      else
        err = rpc_error(-32603, tostring(r))
      end
    else
      err = rpc_error(M.METHOD_NOT_FOUND, 'sessiontree.nvim does not answer ' .. message.method)
    end
    local reply = { jsonrpc = '2.0', id = message.id }
    if err then
      reply.error = err
    else
      reply.result = result == nil and vim.NIL or result
    end
    self:_write(reply)
  elseif message.method ~= nil then
    if self.opts.on_notification then
      self.opts.on_notification(message.method, message.params)
    end
  elseif message.id ~= nil then
    local entry = self.callbacks[message.id]
    if entry then
      self.callbacks[message.id] = nil
      if message.error then
        entry.fn(rpc_error(message.error.code, message.error.message, message.error.data), nil)
      elseif entry.raw then
        entry.fn(nil, nil, body)
      else
        entry.fn(nil, message.result)
      end
    end
  end
end

function Client:_send_request(method, params, callback, raw)
  self.next_id = self.next_id + 1
  local id = self.next_id
  local message = { jsonrpc = '2.0', id = id, method = method }
  if params ~= nil then
    message.params = params
  end
  self.callbacks[id] = { fn = callback, raw = raw }
  if not self:_write(message) then
    self.callbacks[id] = nil
    vim.schedule(function()
      callback(self.exit_error or rpc_error(M.DAEMON_EXITED, 'the daemon is not running'), nil)
    end)
  end
  return id
end

function Client:_flush_queue(err)
  local queue = self.queue
  self.queue = {}
  for _, request in ipairs(queue) do
    if not request.cancelled then
      if err then
        request.callback(err, nil)
      else
        request.id = self:_send_request(request.method, request.params, request.callback, request.raw)
      end
    end
  end
end

--- Send a request; callback(err, result) runs on the main loop with the daemon's answer (err:
--- {code, message, data}). opts.raw: an answer of RAW_THRESHOLD bytes or more is passed as
--- callback(nil, nil, body), the whole JSON-RPC message undecoded. Returns a handle for cancel().
function Client:request(method, params, callback, opts)
  local raw = opts and opts.raw or false
  if self.state == 'starting' and method ~= 'initialize' then
    local request = { method = method, params = params, callback = callback, raw = raw }
    table.insert(self.queue, request)
    return request
  end
  if self.state == 'failed' or self.state == 'exited' then
    local err = self.state == 'failed' and self.init_error or self.exit_error
    vim.schedule(function()
      callback(err, nil)
    end)
    return {}
  end
  return { id = self:_send_request(method, params, callback, raw) }
end

--- Forget a request's answer (its callback is not called) and tell the daemon with
--- `$/cancelRequest`, which stops it when it has not started yet.
function Client:cancel(handle)
  if not handle then
    return
  end
  handle.cancelled = true
  if handle.id and self.callbacks[handle.id] then
    self.callbacks[handle.id] = nil
    self:notify('$/cancelRequest', { id = handle.id })
  end
end

--- True while the request's answer has not arrived (and it was not cancelled).
function Client:pending(handle)
  if not handle or handle.cancelled then
    return false
  end
  if handle.id == nil then
    return self.state == 'starting'
  end
  return self.callbacks[handle.id] ~= nil
end

function Client:notify(method, params)
  local message = { jsonrpc = '2.0', method = method }
  if params ~= nil then
    message.params = params
  end
  return self:_write(message)
end

--- A request, waiting for its answer: for scripts, tests and :checkhealth, never for the editor's
--- own commands. Returns the result; raises the daemon's error as {code=..., message=..., data=...}.
function Client:request_sync(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  local handle = self:request(method, params, function(e, r)
    done, err, result = true, e, r
  end)
  if not vim.wait(timeout_ms or M.TIMEOUT_MS, function()
    return done
  end, 5) then
    self:cancel(handle)
    error(rpc_error(M.DAEMON_EXITED, 'no answer to ' .. method .. ' in ' .. (timeout_ms or M.TIMEOUT_MS) .. ' ms'))
  end
  if err then
    error(err)
  end
  return result
end

--- Wait (main loop running) until `initialize` is answered; returns true when it succeeded.
function Client:wait_ready(timeout_ms)
  vim.wait(timeout_ms or M.TIMEOUT_MS, function()
    return self.state ~= 'starting'
  end, 5)
  return self.state == 'ready'
end

--- shutdown, exit, and wait up to timeout_ms for the process to end (then SIGTERM it). For
--- leaving Neovim and for scripts. Returns the exit code.
function Client:stop(timeout_ms)
  timeout_ms = timeout_ms or M.TIMEOUT_MS
  if self.exit_code == nil then
    local answered = false
    if self.state == 'ready' then
      self:request('shutdown', nil, function()
        answered = true
        self:notify('exit')
      end)
      vim.wait(timeout_ms, function()
        return answered or self.exit_code ~= nil
      end, 5)
    end
    if not answered then
      self:notify('exit')
    end
    if not vim.wait(timeout_ms, function()
      return self.exit_code ~= nil
    end, 5) then
      self:kill('sigterm')
      vim.wait(1000, function()
        return self.exit_code ~= nil
      end, 5)
    end
  end
  -- Let the exit callbacks run before returning.
  vim.wait(1000, function()
    return self.state == 'exited'
  end, 5)
  return self.exit_code
end

function Client:kill(signal)
  if self.handle and not self.handle:is_closing() then
    self.handle:kill(signal or 'sigterm')
  end
end

return M
