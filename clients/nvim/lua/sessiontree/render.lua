-- Text of the tree and context buffers, without Neovim state. A tree line is one row of
-- session/treeView: `indent` two spaces per branch point above it, `●` on the path from the root to
-- the leaf and `○` off it, the entry as "role: preview" (or "type: preview"), its label in
-- brackets, `← leaf` on the leaf. Deeper than MAX_LEVEL branch points, the indentation stops
-- growing and the depth is written as a number (`»23`), so a deep row costs no more columns than
-- a row at MAX_LEVEL. Given a width, the preview (then the label) is cut short so that the line,
-- its label and `← leaf` fit in it. A run row (entries that each have one child and nothing to
-- show) reads "… 4,998 entries from" and its first entry. A row not loaded yet is PENDING.
local M = {}

M.MAX_LEVEL = 8 -- branch points drawn as indentation; deeper ones as a number
M.PENDING = '·'

-- One buffer line: no line breaks inside (a label may hold one).
local function one_line(text)
  return (tostring(text):gsub('[\r\n]', ' '))
end

local function describe(row)
  local text = row.preview or ''
  if row.type == 'message' then
    return (row.role or 'message') .. ': ' .. text
  end
  local kind = tostring(row.type):gsub('_', ' ')
  return text ~= '' and (kind .. ': ' .. text) or kind
end
M.describe = describe

--- 4998 -> "4,998".
function M.thousands(n)
  local text = tostring(math.floor(n))
  local head, tail = text:match('^(%-?%d)(%d*)$')
  if not head then
    return text
  end
  return head .. tail:reverse():gsub('(%d%d%d)', '%1,'):reverse()
end

local prefixes = {} -- indent -> its prefix, made once
local function prefix(indent)
  local text = prefixes[indent]
  if not text then
    if indent <= M.MAX_LEVEL then
      text = string.rep('  ', indent)
    else -- as wide as MAX_LEVEL's indentation (up to depth 99): two levels' columns hold the number
      local depth = '»' .. indent
      text = string.rep('  ', M.MAX_LEVEL - 2) .. depth .. string.rep(' ', math.max(1, 4 - vim.fn.strchars(depth)))
    end
    prefixes[indent] = text
  end
  return text
end

local ELLIPSIS = '…'

--- The display columns of `text` (ASCII: its length, without asking Neovim).
function M.width(text)
  if not text:find('[\128-\255]') then
    return #text
  end
  return vim.api.nvim_strwidth(text)
end

--- `text` cut to at most `width` display columns, ending in "…" when it was cut. One pass over
--- its characters: a tree page cuts up to 200 lines.
function M.truncate(text, width)
  if M.width(text) <= width then
    return text
  elseif width <= 0 then
    return ''
  end
  local ascii = (text:find('[\128-\255]') or #text + 1) - 1 -- the ASCII head: a column a byte
  if ascii >= width - 1 then
    return text:sub(1, width - 1) .. ELLIPSIS
  end
  local used, stop, at = ascii, ascii, ascii + 1
  for char in text:sub(at):gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    local w = #char == 1 and 1 or vim.api.nvim_strwidth(char)
    if used + w + 1 > width then
      break
    end
    used, stop = used + w, at + #char - 1
    at = at + #char
  end
  return text:sub(1, stop) .. ELLIPSIS
end

--- A session/treeView row (an entry, or a run of entries) as one line, at most `width` display
--- columns when a width is given: the preview gives way first, then the label; the marker and
--- `← leaf` always show.
function M.row_line(row, width)
  local head = prefix(row.indent or 0) .. (row.onLeafPath and '● ' or '○ ')
  local body = one_line(describe(row))
  if row.run then
    body = '… ' .. M.thousands(row.run.count) .. ' entries from ' .. body
  end
  local label = row.label and one_line(' [' .. row.label .. ']') or ''
  local leaf = row.leaf and ' ← leaf' or ''
  local line = head .. body .. label .. leaf
  if not width or M.width(line) <= width then
    return line
  end
  local room = width - M.width(head .. leaf)
  local min_body = math.min(M.width(body), 12) -- "user: Hello…": the kind stays readable
  if label ~= '' and min_body + M.width(label) > room then
    label = ' [' .. M.truncate(one_line(row.label), math.max(room - min_body - 3, 1)) .. ']'
  end
  body = M.truncate(body, math.max(room - M.width(label), 0))
  return head .. body .. label .. leaf
end

--- context: a session/context result. One or more lines per message.
function M.context_lines(context)
  local lines = {}
  for _, message in ipairs(context.messages) do
    local text = message.summary or message.content
    if type(text) == 'table' then
      local parts = {}
      for _, block in ipairs(text) do
        if type(block) == 'table' and block.type == 'text' then
          table.insert(parts, block.text)
        elseif type(block) == 'table' and block.type == 'toolCall' then
          table.insert(parts, '[tool call ' .. tostring(block.name) .. ']')
        end
      end
      text = table.concat(parts, ' ')
    end
    local body = vim.split(tostring(text or ''), '\n', { plain = true })
    table.insert(lines, message.role .. ': ' .. body[1])
    for i = 2, #body do
      table.insert(lines, '  ' .. body[i])
    end
  end
  return lines
end

return M
