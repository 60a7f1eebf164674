-- Text of the tree and context buffers, without Neovim state. A tree line is one row of
-- session/treeView: `indent` two spaces per branch point above it (deeper than MAX_LEVEL is
-- elided with "…"), `●` on the path from the root to the leaf and `○` off it, the entry as
-- "role: preview" (or "type: preview"), its label in brackets, `← leaf` on the leaf. A run row
-- (entries that each have one child and nothing to show) reads "… 4,998 entries from" and its
-- first entry. A row not loaded yet is PENDING.
local M = {}

M.MAX_LEVEL = 20
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
    else
      text = '…' .. string.rep('  ', M.MAX_LEVEL)
    end
    prefixes[indent] = text
  end
  return text
end

--- A session/treeView row (an entry, or a run of entries) as one line.
function M.row_line(row)
  local parts = { prefix(row.indent or 0), row.onLeafPath and '● ' or '○ ' }
  if row.run then
    parts[#parts + 1] = '… ' .. M.thousands(row.run.count) .. ' entries from '
  end
  parts[#parts + 1] = describe(row)
  if row.label then
    parts[#parts + 1] = ' [' .. row.label .. ']'
  end
  if row.leaf then
    parts[#parts + 1] = ' ← leaf'
  end
  return one_line(table.concat(parts))
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
