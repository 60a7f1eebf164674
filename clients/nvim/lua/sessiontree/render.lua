-- The tree as buffer lines, without Neovim state: `lines(tree)` gives the text and, for each
-- line, the entry it shows. A chain of single children stays at one indent; a branch point's
-- children are indented one step, as pi draws its tree.
local M = {}

local function describe(node)
  local text = node.preview or ''
  if node.type == 'message' then
    return (node.role or 'message') .. ': ' .. text
  end
  local kind = node.type:gsub('_', ' ')
  return text ~= '' and (kind .. ': ' .. text) or kind
end
M.describe = describe

--- tree: a session/tree result. Returns lines, ids (ids[i] is the entry on lines[i]).
function M.lines(tree)
  local by_id, indent, on_path = {}, {}, {}
  for _, node in ipairs(tree.nodes) do
    by_id[node.id] = node
  end
  local id = tree.leafId
  while id and by_id[id] and not on_path[id] do
    on_path[id] = true
    id = by_id[id].parentId
  end
  local lines, ids = {}, {}
  for _, node in ipairs(tree.nodes) do
    local parent = node.depth > 0 and node.parentId and by_id[node.parentId] or nil
    local level = 0
    if parent then
      level = (indent[parent.id] or 0) + (parent.childCount > 1 and 1 or 0)
    end
    indent[node.id] = level
    local line = string.rep('  ', level) .. (on_path[node.id] and '● ' or '○ ') .. describe(node)
    if node.label then
      line = line .. ' [' .. node.label .. ']'
    end
    if node.id == tree.leafId then
      line = line .. ' ← leaf'
    end
    table.insert(lines, line)
    table.insert(ids, node.id)
  end
  return lines, ids
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
