-- The commands: open a session, show its tree and context, move the leaf, label, fork (asking
-- first), pick a session, export.
local render = require('sessiontree.render')
local state = require('sessiontree.state')
local messages = require('sessiontree.messages')
local buffers = require('sessiontree.buffers')
local daemon = require('sessiontree.daemon')
local tree = require('sessiontree.tree')
local notify, report, echo_room = messages.notify, messages.report, messages.echo_room
local scratch, set_lines, fire, show = buffers.scratch, buffers.set_lines, buffers.fire, buffers.show
local tree_buf, tree_message = buffers.tree_buf, buffers.tree_message
local no_session, entry_for_move, keep_unfolded_after_cursor = daemon.no_session, tree.entry_for_move, tree.keep_unfolded_after_cursor

local M = {}

local function st() -- the plugin's API (init.lua), looked up when called: modules call each other through it
  return require('sessiontree')
end

--- Open a session file and watch it for other writers; on_open(session) when it is open.
function M.open(path, on_open)
  path = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  local client = st().client()
  client:request('session/open', { path = path }, function(err, opened)
    if err then
      if tree_buf() and state.tree.shown == nil then
        if state.session then
          st().refresh({ replace = true }) -- the tree of the session still open
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
      leafId = opened.leafId,
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
    st().refresh({ replace = true })
    if on_open then
      on_open(state.session)
    end
  end)
end

--- :SessionOpen {file}: open it and show its tree.
function M.open_and_show(path)
  st().client() -- fails here, before the buffer changes, when the daemon cannot start
  local buf = st().tree_buffer()
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
  local buf = st().tree_buffer()
  if state.tree.shown ~= session.path then
    tree_message(string.format('Loading the tree of %s (%d entries)…', session.path, session.entryCount or 0))
    st().refresh({ replace = true })
  elseif not (session.client and session.client:alive()) then
    st().refresh({ replace = true })
  end
  return buf
end

--- The answer's handler for a request that may move the leaf: note the leaf, then draw the tree
--- again with the cursor on `entry_id`.
local function redraw_at(session, entry_id)
  return function(err, result)
    if err then
      return report(err)
    end
    session.leafId = result.leafId
    st().refresh({ replace = true, entry = entry_id })
  end
end

-- Said after each move of the leaf: pi's file has no record of the leaf; the move shows there
-- (for pi and every other reader) only when an entry is appended below it.
M.LEAF_MOVED = 'leaf moved; pi sees it only once an entry follows it'

--- Move the leaf to an entry.
function M.branch(entry_id)
  if not entry_id then
    return
  end
  st().with_session(function(session, client)
    local redraw = redraw_at(session, entry_id)
    client:request('session/branch', { sessionId = session.sessionId, entryId = entry_id }, function(err, result)
      redraw(err, result)
      if not err then
        notify(M.LEAF_MOVED)
      end
    end)
  end)
end

--- Set an entry's label; empty text clears it.
function M.label(entry_id, text)
  st().with_session(function(session, client)
    local params = { sessionId = session.sessionId, targetId = entry_id }
    text = vim.trim(text or '')
    if text ~= '' then
      params.label = text
    end
    client:request('session/label', params, redraw_at(session, entry_id))
  end)
end

--- Ask yes or no (in one line); yes without asking when setup({ confirm = false }).
local function confirmed(question)
  if not st().config.confirm then
    return true
  end
  return vim.fn.confirm(render.truncate(question, echo_room()), '&Yes\n&No', 2) == 1
end

-- The entry under the cursor, in a few words, for a question about it.
local function short(row)
  return '"' .. render.truncate(render.describe(row), 32) .. '"'
end

--- `l`: ask for the label of the entry under the cursor (its label as the default) and set it;
--- an empty answer (or <Esc>) cancels.
function M.label_prompt()
  local id = entry_for_move()
  if not id then
    return
  end
  local row = st().row_at_cursor()
  vim.ui.input({ prompt = 'Label (empty cancels): ', default = row.label }, function(text)
    if text and vim.trim(text) ~= '' then
      st().guard(function()
        keep_unfolded_after_cursor()
        M.label(id, text)
      end)
    end
  end)
end

--- `L`: clear the label of the entry under the cursor, once confirmed.
function M.unlabel_prompt()
  local id = entry_for_move()
  if not id then
    return
  end
  local row = st().row_at_cursor()
  if not row.label then
    return notify('this entry has no label')
  end
  if confirmed('Clear the label [' .. render.truncate(row.label, 24) .. '] of ' .. short(row) .. '?') then
    keep_unfolded_after_cursor()
    M.label(id, '')
  end
end

--- `f`: fork at the entry under the cursor, once confirmed.
function M.fork_prompt()
  local id = entry_for_move()
  if id and confirmed('Fork at ' .. short(st().row_at_cursor()) .. ' into a new session file?') then
    M.fork(id)
  end
end

--- Fork at an entry into a new file, and show the new session.
function M.fork(entry_id)
  if not entry_id then
    return
  end
  st().with_session(function(session, client)
    client:request('session/fork', { sessionId = session.sessionId, entryId = entry_id }, function(err, forked)
      if err then
        return report(err)
      end
      M.open(forked.path, function()
        notify('forked into ' .. vim.fn.fnamemodify(forked.path, ':t'))
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
  st().with_session(function(s, client)
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
  st().request('session/list', vim.empty_dict(), function(err, result)
    if err then
      return report(err)
    end
    if #result.sessions == 0 then
      return notify('no sessions under the sessions root')
    end
    vim.ui.select(result.sessions, {
      prompt = 'Open session',
      format_item = function(s)
        local agent = (s.agent and s.agent ~= 'pi') and ('[' .. s.agent .. ', read-only]  ') or ''
        return agent .. (s.name or s.firstMessage or s.path) .. '  ' .. (s.cwd or '') .. '  ' .. (s.modified or '')
      end,
    }, function(choice)
      if choice then
        st().guard(M.open_and_show, choice.path)
      end
    end)
  end)
end


M.EXPORT_FORMATS = { 'markdown', 'html' }
M.EXPORT_SCOPES = { 'path', 'tree' }

--- :SessionExport {markdown|html} [path|tree] [file]: the open session as a document
--- (session/export), written to `file` (default: the session's name, or its id, with .md or
--- .html, in the current directory). on_done(file), when given, after the file is written.
function M.export(format, scope, file, on_done)
  if not vim.tbl_contains(M.EXPORT_FORMATS, format) then
    error({ message = 'export: the format is markdown or html, not ' .. vim.inspect(format) })
  end
  scope = scope or 'path'
  if not vim.tbl_contains(M.EXPORT_SCOPES, scope) then
    error({ message = 'export: the scope is path or tree, not ' .. vim.inspect(scope) })
  end
  st().with_session(function(session, client)
    local params = { sessionId = session.sessionId, format = format, scope = scope }
    client:request('session/export', params, function(err, result)
      if err then
        return report(err)
      end
      local target = file and vim.fn.expand(file) or require('sessiontree.search').export_name(session, format)
      target = vim.fn.fnamemodify(target, ':p')
      local out, open_err = io.open(target, 'wb')
      if not out then
        return report({ message = 'export: cannot write ' .. target .. ': ' .. tostring(open_err) })
      end
      local ok, write_err = out:write(result.content)
      out:close()
      if not ok then
        return report({ message = 'export: cannot write ' .. target .. ': ' .. tostring(write_err) })
      end
      local what = scope == 'tree' and 'the whole tree' or 'the path to the leaf'
      notify(string.format('exported to %s (%s, %s)', vim.fn.fnamemodify(target, ':~:.'), format, what))
      if on_done then
        on_done(target)
      end
    end)
  end)
end

--- The arguments of :SessionExport: format, then path|tree (optional), then the file (optional).
function M.export_command(fargs)
  local format, scope, rest = fargs[1], nil, 2
  if vim.tbl_contains(M.EXPORT_SCOPES, fargs[2] or '') then
    scope, rest = fargs[2], 3
  end
  local file = #fargs >= rest and table.concat(vim.list_slice(fargs, rest), ' ') or nil
  M.export(format, scope, file)
end

return M
