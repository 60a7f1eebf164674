-- The tree as buffer lines, without Neovim state: `lines(tree)` gives the text and, for each
-- line, the entry it shows. A chain of single children stays at one indent; a branch point's
-- children are indented one step, as pi draws its tree. Nesting deeper than MAX_LEVEL is elided
-- with "…" (as `sessiontree tree` does): a long session branches thousands of times.
--
-- This file is also loaded with dofile() in a libuv worker thread (see tree.lua), where only
-- plain Lua and vim.json exist: it uses nothing else of `vim` outside context_lines.
local M = {}

M.MAX_LEVEL = 20

-- One buffer line: no line breaks inside (a label may hold one).
local function one_line(text)
  return (tostring(text):gsub('[\r\n]', ' '))
end

local function describe(node)
  local text = node.preview or ''
  if node.type == 'message' then
    return (node.role or 'message') .. ': ' .. text
  end
  local kind = tostring(node.type):gsub('_', ' ')
  return text ~= '' and (kind .. ': ' .. text) or kind
end
M.describe = describe

--- tree: a session/tree result. Returns lines, ids (ids[i] is the entry on lines[i]) and the
--- index of the leaf's line (nil when there is no leaf).
function M.lines(tree)
  local nodes = tree.nodes
  local by_id, indent, on_path = {}, {}, {}
  for i = 1, #nodes do
    local node = nodes[i]
    by_id[node.id] = node
  end
  local id = tree.leafId
  while id and by_id[id] and not on_path[id] do
    on_path[id] = true
    id = by_id[id].parentId
  end
  local lines, ids, leaf = {}, {}, nil
  local max_level = M.MAX_LEVEL
  local indents = {} -- level -> its prefix, made once
  local function prefix(level)
    local text = indents[level]
    if not text then
      text = level <= max_level and string.rep('  ', level) or ('…' .. string.rep('  ', max_level))
      indents[level] = text
    end
    return text
  end
  for i = 1, #nodes do
    local node = nodes[i]
    local parent = node.depth > 0 and node.parentId and by_id[node.parentId] or nil
    local level = 0
    if parent then
      level = (indent[parent.id] or 0) + (parent.childCount > 1 and 1 or 0)
    end
    indent[node.id] = level
    local line = prefix(level) .. (on_path[node.id] and '● ' or '○ ') .. describe(node)
    if node.label then
      line = line .. ' [' .. node.label .. ']'
    end
    if node.id == tree.leafId then
      line = line .. ' ← leaf'
      leaf = i
    end
    lines[i] = one_line(line)
    ids[i] = node.id
  end
  return lines, ids, leaf
end

--- The answer to a session/tree request, as the JSON-RPC message's text, made into lines. For
--- the worker thread: returns only strings and numbers.
---   true, lines (joined by "\n"), ids (joined by "\n"), count, leaf index or 0
---   false, error code, error message
function M.from_body(body)
  local message = vim.json.decode(body, { luanil = { object = true } })
  if message.error then
    return false, message.error.code or -32603, tostring(message.error.message)
  end
  local lines, ids, leaf = M.lines(message.result)
  return true, table.concat(lines, '\n'), table.concat(ids, '\n'), #lines, leaf or 0
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
