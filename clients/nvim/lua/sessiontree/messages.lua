-- Messages to the user: one line each, cut to fit the command line so that none asks to press
-- ENTER; the whole text is kept (state.log) for :checkhealth sessiontree.
local render = require('sessiontree.render')
local rpc = require('sessiontree.rpc')
local state = require('sessiontree.state')

local M = {}

local LOG_SIZE = 20

-- The columns a message has without a hit-enter prompt (v:echospace leaves room for the ruler
-- and showcmd).
local function echo_room()
  local room = vim.v.echospace
  if type(room) ~= 'number' or room <= 0 then
    room = vim.o.columns - 12
  end
  return math.max(room, 20)
end

--- Say something in one line that fits the command line, so it never asks to press ENTER; the
--- whole text (a daemon's last lines on stderr, a long path) is kept in state.log, which
--- :checkhealth sessiontree shows.
local function notify(message, level)
  level = level or vim.log.levels.INFO
  local text = 'sessiontree: ' .. message
  table.insert(state.log, { text = text, level = level })
  if #state.log > LOG_SIZE then
    table.remove(state.log, 1)
  end
  local line = text:match('^[^\n]*')
  if line ~= text then
    line = line .. ' (more: :checkhealth sessiontree)'
  end
  vim.notify(render.truncate(line, echo_room()), level)
end
M.notify = notify
M.echo_room = echo_room

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

--- Run fn, turning an error into a message instead of a Lua traceback. Returns ok, err.
function M.guard(fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok then
    report(err)
  end
  return ok, err
end

return M
