-- :checkhealth sessiontree — the daemon command, the daemon's version and protocol version, the
-- sessions root. Neovim 0.10+ reports through vim.health.start/ok/…, 0.7–0.9 through
-- health#report_* (vim.health.report_* in 0.8 and 0.9). A health check runs synchronously, so
-- this waits (at most 10 s) for the daemon to answer `initialize`; the plugin's commands never do.
local rpc = require('sessiontree.rpc')

local M = {}

local function reporter(new)
  local h = vim.health or {}
  return h[new] or h['report_' .. new] or function(...)
    vim.fn['health#report_' .. new](...)
  end
end

local start = reporter('start')
local ok = reporter('ok')
local info = reporter('info')
local warn = reporter('warn')
local error_ = reporter('error')

-- Where the daemon will keep sessions, the way it decides (`--sessions-dir`, then
-- $SESSIONTREE_SESSIONS_DIR, then pi's own directory), and why.
local function expected_root(cmd)
  for i = 1, #cmd - 1 do
    if cmd[i] == '--sessions-dir' then
      return cmd[i + 1], 'the --sessions-dir of the command'
    end
  end
  local env = vim.env.SESSIONTREE_SESSIONS_DIR
  if env and env ~= '' then
    return env, '$SESSIONTREE_SESSIONS_DIR'
  end
  return vim.fn.expand('~/.pi/agent/sessions'), "pi's default"
end

local function check_daemon()
  start('sessiontree')
  info('Neovim ' .. rpc.nvim_version())
  local st = require('sessiontree')
  local cmd = rpc.command(st.config.cmd)
  if st.config.sessions_dir then
    vim.list_extend(cmd, { '--sessions-dir', vim.fn.fnamemodify(st.config.sessions_dir, ':p') })
  end
  local shown = table.concat(cmd, ' ')
  local exe = vim.fn.exepath(cmd[1])
  if exe == '' then
    error_('daemon command not found: `' .. shown .. '`', {
      'Install the daemon from a checkout of sessiontree (it is not on PyPI): `pipx install ~/src/sessiontree`'
        .. ' puts `sessiontree` on PATH (see clients/nvim/README.md)',
      "or set $SESSIONTREE_COMMAND, or require('sessiontree').setup({ cmd = { ... } })",
    })
    return
  end
  ok('daemon command: `' .. shown .. '` (' .. exe .. ')')

  local client = st.state.client
  local own = false
  if not (client and client:alive()) then
    local err
    client, err = rpc.start({ cmd = st.config.cmd, sessions_dir = st.config.sessions_dir, index_dir = st.config.index_dir })
    if not client then
      error_(err)
      return
    end
    own = true
  end
  local ready = client:wait_ready(rpc.TIMEOUT_MS)
  if not ready then
    local why = client.init_error and client.init_error.message
      or client.exit_text and ('it exited: ' .. client.exit_text)
      or 'no answer in ' .. rpc.TIMEOUT_MS .. ' ms'
    error_('the daemon did not start: ' .. why, client:stderr_tail(5))
    if own then
      client:kill()
    end
    return
  end
  local result = client.initialize_result or {}
  local server = result.serverInfo or {}
  local caps = ((result.capabilities or {}).experimental or {}).sessiontree or {}
  ok(string.format(
    'daemon %s %s (pid %d%s)',
    tostring(server.name or '?'),
    tostring(server.version or '?'),
    client.pid,
    own and ', started for this check' or ', running'
  ))
  local protocol = tostring(caps.protocolVersion)
  if protocol:match('^1%.') then
    ok('protocol version ' .. protocol .. ', session file format ' .. tostring(caps.formatVersion))
  else
    error_('protocol version ' .. protocol .. ': this plugin speaks 1.x', { 'Use a sessiontree daemon of protocol 1.x' })
  end

  local root, why = client.sessions_root, 'as the daemon reports it'
  if not root then
    root, why = expected_root(cmd)
  end
  if vim.fn.isdirectory(root) == 1 then
    ok('sessions root: ' .. root .. ' (' .. why .. ')')
  else
    warn('sessions root: ' .. root .. ' (' .. why .. ') does not exist yet', {
      'pi creates it with its first session; or set one with setup({ sessions_dir = ... })',
    })
  end
  local session = st.state.session
  if session then
    info('open session: ' .. session.path)
  end
  if own then
    client:stop(3000)
  end
end

-- Messages are cut to one line when they are said; here they are whole.
local function recent_messages()
  local log = require('sessiontree').state.log
  if #log > 0 then
    start('sessiontree: recent messages')
    for _, message in ipairs(log) do
      info(message.text)
    end
  end
end

function M.check()
  check_daemon()
  recent_messages()
end

return M
