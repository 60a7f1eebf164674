-- The tree and context buffers: made, shown, written (only the lines that changed), and the
-- window and width the tree is drawn for.
local state = require('sessiontree.state')

local HEADER_LINES = 2 -- the title and the help line, above the tree's lines
local HELP = '<CR> leaf  l label  L unlabel  f fork  c context  <Tab> fold  r redraw  ? help'

local M = {}

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
    state.tree.view, state.tree.lines, state.tree.shown = nil, {}, nil
  end
end

local function show(buf)
  if vim.api.nvim_get_current_buf() ~= buf then
    vim.api.nvim_set_current_buf(buf)
  end
  vim.wo.wrap = false
end

-- Tree lines `first` to `last` (counted after the header; last = first - 1 inserts) become
-- `new`, in the buffer and in state.tree.lines.
local function write(first, last, new)
  local buf = tree_buf()
  if not buf then
    return
  end
  local t = state.tree
  set_lines(buf, HEADER_LINES + first - 1, HEADER_LINES + last, new)
  local lines, removed, added = t.lines, last - first + 1, #new
  if removed == added then
    for k = 1, added do
      lines[first + k - 1] = new[k]
    end
    return
  end
  local result = {}
  for i = 1, first - 1 do
    result[i] = lines[i]
  end
  for k = 1, added do
    result[first - 1 + k] = new[k]
  end
  local shift = added - removed
  for i = last + 1, #lines do
    result[i + shift] = lines[i]
  end
  t.lines = result
end

-- Write the {line, text} pairs that differ from the buffer, a stretch of consecutive lines at a time.
local function write_changed(changed)
  local lines = state.tree.lines
  local i, n = 1, #changed
  while i <= n do
    local first = changed[i][1]
    if lines[first] == changed[i][2] then
      i = i + 1
    else
      local texts, j = { changed[i][2] }, i + 1
      while j <= n and changed[j][1] == first + (j - i) and lines[changed[j][1]] ~= changed[j][2] do
        texts[#texts + 1] = changed[j][2]
        j = j + 1
      end
      write(first, first + #texts - 1, texts)
      i = j
    end
  end
end

-- Draw a whole view: the header and every line, writing only the lines that changed (a new entry
-- changes a few lines, not 10,000).
local function draw(session, view)
  local buf = tree_buf()
  local t = state.tree
  local lines = view:lines()
  local header = { title(session), HELP }
  if t.shown ~= session.path then
    set_lines(buf, 0, -1, vim.list_extend(header, lines))
  else
    set_lines(buf, 0, HEADER_LINES, header)
    local old = t.lines
    local top, n_old, n_new = 1, #old, #lines
    while top <= n_old and top <= n_new and old[top] == lines[top] do
      top = top + 1
    end
    local bottom = 0 -- lines equal at the end
    while bottom < n_old - top + 1 and bottom < n_new - top + 1 and old[n_old - bottom] == lines[n_new - bottom] do
      bottom = bottom + 1
    end
    if top <= n_old or top <= n_new then
      set_lines(buf, HEADER_LINES + top - 1, HEADER_LINES + n_old - bottom, vim.list_slice(lines, top, n_new - bottom))
    end
  end
  t.view, t.lines, t.shown = view, lines, session.path
end

-- The window whose cursor the tree keeps: the current one if it shows the tree, else the first.
local function tree_window()
  local buf = tree_buf()
  if not buf then
    return nil
  end
  local current = vim.api.nvim_get_current_win()
  if vim.api.nvim_win_get_buf(current) == buf then
    return current
  end
  return vim.fn.win_findbuf(buf)[1]
end

--- The columns the tree's lines have: those of the window that shows it (less the number and
--- sign columns), else the screen's.
local function tree_width()
  local win = tree_window()
  if not win then
    return vim.o.columns
  end
  local info = vim.fn.getwininfo(win)[1]
  return vim.api.nvim_win_get_width(win) - (info and info.textoff or 0)
end

local function window_top(win)
  return vim.api.nvim_win_call(win, function()
    return vim.fn.line('w0')
  end)
end

M.HEADER_LINES = HEADER_LINES
M.scratch = scratch
M.set_lines = set_lines
M.fire = fire
M.tree_buf = tree_buf
M.title = title
M.tree_message = tree_message
M.show = show
M.write = write
M.write_changed = write_changed
M.draw = draw
M.tree_window = tree_window
M.tree_width = tree_width
M.window_top = window_top

return M
