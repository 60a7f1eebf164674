-- The daemon over vim.lsp.rpc (Neovim 0.7+): spawn, LSP lifecycle, blocking requests.
--
-- vim.lsp.rpc.start is used rather than vim.lsp.start_client: sessiontree is not a language
-- server for buffers, and the raw RPC client sends exactly what we give it. Two things of
-- Neovim's JSON to mind: an empty Lua table is encoded as `[]`, so empty objects are
-- vim.empty_dict(); and replies are decoded with JSON null in objects turned into nil, so a
-- `leafId: null` reads as an absent field.
local M = {}

local Client = {}
Client.__index = Client

M.TIMEOUT_MS = 10000

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

--- Start and initialize a daemon. opts: cmd, sessions_dir, on_notification(method, params),
--- on_request(method, params) -> result, err.
function M.start(opts)
  opts = opts or {}
  local cmd = M.command(opts.cmd)
  if opts.sessions_dir then
    vim.list_extend(cmd, { '--sessions-dir', opts.sessions_dir })
  end
  local self = setmetatable({ exit_code = nil }, Client)
  local program = table.remove(cmd, 1)
  self.rpc = vim.lsp.rpc.start(program, cmd, {
    notification = function(method, params)
      if opts.on_notification then
        opts.on_notification(method, params)
      end
    end,
    server_request = function(method, params)
      if opts.on_request then
        return opts.on_request(method, params)
      end
      return nil, vim.lsp.rpc.rpc_response_error(vim.lsp.protocol.ErrorCodes.MethodNotFound)
    end,
    on_exit = function(code)
      self.exit_code = code
    end,
  })
  if not self.rpc then
    error('sessiontree: could not start ' .. program)
  end
  self.initialize_result = self:request('initialize', {
    processId = vim.fn.getpid(),
    clientInfo = { name = 'sessiontree.nvim' },
    capabilities = vim.empty_dict(),
  })
  self.rpc.notify('initialized', vim.empty_dict())
  return self
end

--- A request, waiting for its answer. Returns the result; raises the daemon's error as
--- `{code=..., message=..., data=...}` (a table, so callers can branch on the code).
function Client:request(method, params, timeout_ms)
  local done, err, result = false, nil, nil
  local ok = self.rpc.request(method, params, function(e, r)
    err, result, done = e, r, true
  end)
  if not ok then
    error({ code = -32099, message = 'sessiontree: the daemon is not running' })
  end
  if not vim.wait(timeout_ms or M.TIMEOUT_MS, function()
    return done or self.exit_code ~= nil
  end, 5) then
    error({ code = -32099, message = 'sessiontree: no answer to ' .. method })
  end
  if not done then
    error({ code = -32099, message = 'sessiontree: the daemon exited (' .. tostring(self.exit_code) .. ')' })
  end
  if err then
    error({ code = err.code, message = err.message, data = err.data })
  end
  return result
end

--- shutdown, exit; returns the exit code.
function Client:stop()
  if self.exit_code == nil then
    pcall(self.request, self, 'shutdown')
    self.rpc.notify('exit')
    vim.wait(M.TIMEOUT_MS, function()
      return self.exit_code ~= nil
    end, 10)
  end
  return self.exit_code
end

return M
