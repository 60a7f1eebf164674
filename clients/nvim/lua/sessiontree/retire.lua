-- :SessionTrash, :SessionArchive and :SessionRestore: retiring a session file and bringing it back.
-- The daemon moves the file (to the trash, or to .archive/ beside it; never deleting it) and closes
-- the session; a confirmation comes first (vim.fn.confirm), and the tree buffer then says where
-- the file went.
local M = {}

local function st()
  return require('sessiontree')
end

local WAYS = {
  trash = {
    method = 'session/trash',
    question = 'Move the session %s to the trash? (:SessionRestore brings it back)',
    done = 'moved to the trash: %s',
  },
  archive = {
    method = 'session/archive',
    question = 'Archive the session %s (to .archive/ beside it)? (:SessionRestore brings it back)',
    done = 'archived: %s',
  },
}

--- The confirmation: a function(question) returning true to go on (tests replace it).
M.confirm = function(question)
  return vim.fn.confirm(question, '&Yes\n&No', 2) == 1
end

local function target_of(path)
  if path ~= nil and path ~= '' then
    return vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  end
  local session = st().state.session
  if session == nil then
    error({ message = 'no session is open: :SessionOpen {file}, or name the file' })
  end
  return session.path
end

--- The session of `moved.path` is closed by the daemon: forget it, and say so in the tree buffer.
local function forget(moved, text)
  local state = st().state
  if state.session == nil or state.session.path ~= moved.path then
    return
  end
  state.session = nil
  state.tree.shown = nil
  local buf = state.tree.buf
  if buf and vim.api.nvim_buf_is_valid(buf) then
    vim.bo[buf].modifiable = true
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, { text, '', ':SessionRestore ' .. moved.path .. ' brings it back' })
    vim.bo[buf].modifiable = false
  end
end

--- Move the open session's file (or `path`) to the trash or the archive (`way`), once confirmed.
function M.retire(way, path)
  local w = WAYS[way]
  local target = target_of(path)
  if not M.confirm(string.format(w.question, vim.fn.fnamemodify(target, ':t'))) then
    vim.notify('sessiontree: nothing moved')
    return
  end
  st().request(w.method, { path = target }, function(err, moved)
    if err then
      return st().report(err)
    end
    local text = string.format(w.done, moved.movedTo)
    forget(moved, text)
    vim.notify('sessiontree: ' .. text)
  end)
end

--- Put a trashed or archived session back (`path`: where it was, or where it lies now) and show it.
function M.restore(path)
  local target = target_of(path)
  st().request('session/restore', { path = target }, function(err, restored)
    if err then
      return st().report(err)
    end
    vim.notify('sessiontree: restored ' .. restored.path)
    st().open_and_show(restored.path)
  end)
end

--- The user commands (plugin/sessiontree.lua calls this once).
function M.register()
  local function guarded(fn)
    return function(args)
      st().guard(fn, args.args)
    end
  end
  vim.api.nvim_create_user_command('SessionTrash', guarded(function(path)
    M.retire('trash', path)
  end), { nargs = '?', complete = 'file', desc = 'Move the open session (or a file) to the trash, once confirmed' })
  vim.api.nvim_create_user_command('SessionArchive', guarded(function(path)
    M.retire('archive', path)
  end), { nargs = '?', complete = 'file', desc = 'Move the open session (or a file) to .archive/ beside it, once confirmed' })
  vim.api.nvim_create_user_command('SessionRestore', guarded(M.restore), {
    nargs = 1,
    complete = 'file',
    desc = 'Bring a trashed or archived session back and show it',
  })
end

return M
