-- How a hit of session/search is shown in a picker, and the file name an export goes to, without
-- Neovim state.
local M = {}

M.OPEN, M.CLOSE = '«', '»'

--- The byte offset in `s` (0-based) of code point `index` (0-based; the end of `s` when past it).
--- The daemon counts code points, Lua strings are bytes; this walks UTF-8 lead bytes, so it
--- behaves the same on every Neovim (vim.str_byteindex changed its signature in 0.11).
function M.byte_of(s, index)
  local count, i, n = 0, 1, #s
  while i <= n do
    if count == index then
      return i - 1
    end
    local b = s:byte(i)
    local width = b < 0x80 and 1 or b >= 0xF0 and 4 or b >= 0xE0 and 3 or b >= 0xC0 and 2 or 1
    i = i + width
    count = count + 1
  end
  return n
end

--- The snippet with each highlighted [start, end) code-point range marked «…».
function M.mark(snippet, highlights)
  snippet = snippet or ''
  local ranges = {}
  for _, h in ipairs(highlights or {}) do
    local first, last = tonumber(h[1]), tonumber(h[2])
    if first and last and last > first then
      ranges[#ranges + 1] = { M.byte_of(snippet, first), M.byte_of(snippet, last) }
    end
  end
  table.sort(ranges, function(a, b)
    return a[1] < b[1]
  end)
  local parts, at = {}, 0
  for _, r in ipairs(ranges) do
    if r[1] >= at then -- overlapping ranges: the first one wins
      parts[#parts + 1] = snippet:sub(at + 1, r[1])
      parts[#parts + 1] = M.OPEN .. snippet:sub(r[1] + 1, r[2]) .. M.CLOSE
      at = r[2]
    end
  end
  parts[#parts + 1] = snippet:sub(at + 1)
  return table.concat(parts)
end

--- `2026-01-01T00:02:05.000Z` as `2026-01-01 00:02`.
function M.time(timestamp)
  if type(timestamp) ~= 'string' then
    return '?'
  end
  local day, clock = timestamp:match('^(%d%d%d%d%-%d%d%-%d%d)T(%d%d:%d%d)')
  return day and (day .. ' ' .. clock) or timestamp
end

--- One line for a hit: `role · time · snippet  —  file (project)`.
function M.format_hit(hit)
  local what = hit.role
  if what == nil or what == vim.NIL then
    what = hit.type or '?'
  end
  local cwd = hit.cwd
  if cwd == vim.NIL or cwd == nil or cwd == '' then
    cwd = '?'
  end
  return string.format(
    '%s · %s · %s  —  %s (%s)',
    what,
    M.time(hit.timestamp),
    M.mark(hit.snippet, hit.highlights),
    vim.fn.fnamemodify(hit.path or '', ':t'),
    cwd
  )
end

--- A file name for an exported session: its name (or id) made safe, with the format's extension.
function M.export_name(session, format)
  local base = session.name
  if base == nil or base == vim.NIL or vim.trim(base) == '' then
    base = session.sessionId
  end
  base = vim.trim(base):gsub('[/\\%c:*?"<>|]', '-')
  return base .. (format == 'html' and '.html' or '.md')
end

return M
