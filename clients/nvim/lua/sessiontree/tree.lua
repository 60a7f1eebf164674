-- The tree buffer's keys: the row under the cursor, unfolding and folding runs, and the mappings.
local render = require('sessiontree.render')
local state = require('sessiontree.state')
local messages = require('sessiontree.messages')
local buffers = require('sessiontree.buffers')
local notify = messages.notify
local HEADER_LINES, tree_buf, write, show = buffers.HEADER_LINES, buffers.tree_buf, buffers.write, buffers.show
local scratch, tree_width = buffers.scratch, buffers.tree_width

local M = {}

local function st() -- the plugin's API (init.lua), looked up when called: modules call each other through it
  return require('sessiontree')
end

--- The row on the cursor line of the tree buffer (an entry, or a run: its first entry's id),
--- nil when none; then its position, and for an entry of an unfolded run, the run and its offset.
function M.row_at_cursor()
  local t = state.tree
  if not (t.view and t.shown and tree_buf() and vim.api.nvim_get_current_buf() == t.buf) then
    return nil
  end
  return t.view:row(vim.api.nvim_win_get_cursor(0)[1] - HEADER_LINES)
end

--- The entry on the cursor line of the tree buffer (a run's first entry on a run row).
function M.entry_at_cursor()
  local row = M.row_at_cursor()
  return row and row.id
end

--- The entry on the cursor line for a move on it, or nil with a message saying why not.
local function entry_for_move()
  local row, pos = M.row_at_cursor()
  if row then
    return row.id
  elseif pos then
    notify('this row is not loaded yet: try again in a moment')
  end
end

--- Before a move that makes the cursor's entry a row of its own (the leaf, a label): when it is
--- in an unfolded run, the rest of the run after it (the next row then) stays unfolded too.
local function keep_unfolded_after_cursor()
  local row, _, run, offset = M.row_at_cursor()
  if row and run then
    local after = run.rows[offset + 1]
    if after then
      state.tree.open[after.id] = true
    end
    state.tree.unfold_after = row.id
  end
end

--- Unfold the run on the cursor line: its entries replace it, loaded a page at a time.
function M.unfold()
  local t = state.tree
  local row, pos, run = M.row_at_cursor()
  if run or not pos then
    return
  elseif not row then
    return notify('this row is not loaded yet: try again in a moment')
  elseif not row.run then
    return -- an entry: nothing to unfold
  end
  local line = t.view:line_of(pos)
  local opened = t.view:open(pos)
  t.open[row.id] = true
  local pending = {}
  for i = 1, opened.count do
    pending[i] = render.PENDING
  end
  write(line, line, pending)
  vim.api.nvim_win_set_cursor(0, { HEADER_LINES + line, 0 })
  if t.busy then
    t.dirty = true
  end
  st().load_visible()
end

--- Fold the unfolded run the cursor is in back into one row.
function M.fold()
  local t = state.tree
  local _, _, run = M.row_at_cursor()
  if not run then
    return
  end
  local line = t.view:line_of(run.pos)
  t.view:close(run)
  t.open[run.id] = nil
  write(line, line + run.count - 1, { render.row_line(t.view.rows[run.pos], t.view.width) })
  vim.api.nvim_win_set_cursor(0, { HEADER_LINES + line, 0 })
  if t.busy then
    t.dirty = true
  end
  st().load_visible()
end

--- Unfold the run row on the cursor line, or fold the unfolded run the cursor is in.
function M.toggle()
  local _, _, run = M.row_at_cursor()
  if run then
    M.fold()
  else
    M.unfold()
  end
end

local function map(buf, lhs, fn)
  vim.api.nvim_buf_set_keymap(buf, 'n', lhs, '', {
    noremap = true,
    silent = true,
    callback = function()
      st().guard(fn)
    end,
  })
end

--- The tree buffer, made current, with its keys.
function M.tree_buffer()
  local buf = scratch('sessiontree://tree', 'sessiontree')
  if state.tree.buf ~= buf then
    state.tree.buf, state.tree.shown, state.tree.view, state.tree.lines = buf, nil, nil, {}
    vim.api.nvim_create_autocmd('BufWinEnter', {
      buffer = buf,
      callback = function()
        if state.tree.stale then
          st().refresh({ replace = true })
        else
          st().guard(st().load_visible)
        end
      end,
    })
    vim.api.nvim_create_autocmd('CursorMoved', {
      buffer = buf,
      callback = function()
        st().guard(st().load_visible)
      end,
    })
    -- Scrolling (or resizing) a window that shows the tree, current or not.
    local events = { 'WinScrolled', 'VimResized' }
    if vim.fn.exists('##WinResized') == 1 then
      table.insert(events, 'WinResized')
    end
    vim.api.nvim_create_autocmd(events, {
      group = vim.api.nvim_create_augroup('sessiontree_scroll', { clear = true }),
      callback = function()
        if state.tree.buf == buf and vim.api.nvim_buf_is_valid(buf) and #vim.fn.win_findbuf(buf) > 0 then
          local view = state.tree.view
          if view and view.width ~= tree_width() then
            st().refresh() -- the lines are cut to the window's width: drawn again for the new one
          else
            st().guard(st().load_visible)
          end
        end
      end,
    })
  end
  show(buf)
  map(buf, '<CR>', function()
    keep_unfolded_after_cursor()
    st().branch(entry_for_move())
  end)
  map(buf, 'l', st().label_prompt)
  map(buf, 'L', st().unlabel_prompt)
  map(buf, 'f', st().fork_prompt)
  map(buf, '?', function()
    vim.cmd('help sessiontree-tree')
  end)
  map(buf, 'c', function()
    st().show_context()
  end)
  map(buf, 'r', function()
    st().refresh({ replace = true })
  end)
  for _, lhs in ipairs({ '<Tab>', 'za' }) do
    map(buf, lhs, M.toggle)
  end
  map(buf, 'zo', M.unfold)
  map(buf, 'zc', M.fold)
  return buf
end

M.entry_for_move = entry_for_move
M.keep_unfolded_after_cursor = keep_unfolded_after_cursor

return M
