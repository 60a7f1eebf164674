-- What each line of the tree buffer shows, without Neovim state: the rows of session/treeView
-- (positions 0 to total - 1, loaded a page at a time) and, in place of each unfolded run row,
-- the run's entries (loaded a page at a time with `run`). Lines are numbered from 1 (the first
-- line after the buffer's header); positions and offsets from 0, as the daemon counts them.
local render = require('sessiontree.render')

local M = {}

M.PAGE = 200 -- rows per session/treeView request

local View = {}
View.__index = View

--- A view of `total` rows, none loaded yet, drawn in `width` columns (nil: as long as they are).
function M.new(total, leaf_id, width)
  return setmetatable({
    total = total,
    leafId = leaf_id,
    width = width,
    rows = {}, -- position -> row
    pages = {}, -- offset -> 'loading' | 'loaded'
    runs = {}, -- the unfolded runs, by position: {id, pos, count, lastId, rows = {}, pages = {}}
  }, View)
end

--- The page that holds position `pos`.
function M.page_of(pos)
  return pos - pos % M.PAGE
end

function View:line_count()
  local n = self.total
  for _, run in ipairs(self.runs) do
    n = n + run.count - 1
  end
  return n
end

--- The unfolded run at position `pos`, if any.
function View:run_at(pos)
  for _, run in ipairs(self.runs) do
    if run.pos == pos then
      return run
    elseif run.pos > pos then
      return nil
    end
  end
end

--- The unfolded run whose first entry is `id`, if any.
function View:run_of(id)
  for _, run in ipairs(self.runs) do
    if run.id == id then
      return run
    end
  end
end

--- The line of the row at `pos` (for an unfolded run: of its first entry).
function View:line_of(pos)
  local line = pos + 1
  for _, run in ipairs(self.runs) do
    if run.pos >= pos then
      break
    end
    line = line + run.count - 1
  end
  return line
end

--- What a line shows: the position of its row, and for an entry of an unfolded run, the run and
--- the entry's offset in it. Nothing for a line outside the tree.
function View:locate(line)
  local shift = 0
  for _, run in ipairs(self.runs) do
    local first = run.pos + 1 + shift
    if line < first then
      break
    elseif line < first + run.count then
      return run.pos, run, line - first
    end
    shift = shift + run.count - 1
  end
  local pos = line - 1 - shift
  if pos >= 0 and pos < self.total then
    return pos
  end
end

--- The row a line shows (an entry of an unfolded run is a row of its own), or nil when it is
--- not loaded yet; then its position, run and offset as locate() gives them.
function View:row(line)
  local pos, run, offset = self:locate(line)
  if run then
    return run.rows[offset], pos, run, offset
  elseif pos then
    return self.rows[pos], pos
  end
end

function View:text(line)
  local row = self:row(line)
  return row and render.row_line(row, self.width) or render.PENDING
end

--- Every line, for drawing the whole buffer.
function View:lines()
  local lines, n = {}, 0
  local pending, row_line = render.PENDING, render.row_line
  local rows, runs, next_run, width = self.rows, self.runs, 1, self.width
  for pos = 0, self.total - 1 do
    local run = runs[next_run]
    if run and run.pos == pos then
      next_run = next_run + 1
      local entries = run.rows
      for offset = 0, run.count - 1 do
        local row = entries[offset]
        n = n + 1
        lines[n] = row and row_line(row, width) or pending
      end
    else
      local row = rows[pos]
      n = n + 1
      lines[n] = row and row_line(row, width) or pending
    end
  end
  return lines
end

--- Unfold the run row at `pos` (loaded): its entries take its line. Returns the run.
function View:open(pos)
  local row = self.rows[pos]
  local run = {
    id = row.id,
    pos = pos,
    count = row.run.count,
    lastId = row.run.lastId,
    rows = {},
    pages = {},
  }
  local at = #self.runs + 1
  for i, other in ipairs(self.runs) do
    if other.pos > pos then
      at = i
      break
    end
  end
  table.insert(self.runs, at, run)
  return run
end

--- Fold an unfolded run again.
function View:close(run)
  for i, other in ipairs(self.runs) do
    if other == run then
      table.remove(self.runs, i)
      return
    end
  end
end

--- Keep the rows of a page at `offset`. Returns the lines they show, as {line, text} in order
--- (an unfolded run's row shows no line of its own).
function View:put(offset, rows)
  local changed = {}
  local line = self:line_of(offset)
  for k, row in ipairs(rows) do
    local pos = offset + k - 1
    self.rows[pos] = row
    local run = self:run_at(pos)
    if run then
      line = line + run.count
    else
      changed[#changed + 1] = { line, render.row_line(row, self.width) }
      line = line + 1
    end
  end
  self.pages[offset] = 'loaded'
  return changed
end

--- Keep the rows of a page of an unfolded run; returns the lines they show as put() does.
function View:put_run(run, offset, rows)
  local changed = {}
  local line = self:line_of(run.pos) + offset
  for k, row in ipairs(rows) do
    run.rows[offset + k - 1] = row
    changed[#changed + 1] = { line + k - 1, render.row_line(row, self.width) }
  end
  run.pages[offset] = 'loaded'
  return changed
end

--- The pages to ask for so that lines `first` to `last` are loaded, each once: {offset, run}
--- (run nil for a page of rows). They are marked as loading.
function View:wanted(first, last)
  local wanted = {}
  for line = math.max(first, 1), math.min(last, self:line_count()) do
    local pos, run, offset = self:locate(line)
    local page = M.page_of(run and offset or pos)
    local pages = run and run.pages or self.pages
    if not pages[page] then
      pages[page] = 'loading'
      wanted[#wanted + 1] = { offset = page, run = run }
    end
  end
  return wanted
end

--- Forget that a page is being loaded (its request failed or was dropped).
function View:unmark(offset, run)
  local pages = run and run.pages or self.pages
  if pages[offset] == 'loading' then
    pages[offset] = nil
  end
end

return M
