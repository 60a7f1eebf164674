-- :SessionSearch: the daemon's session/search, its hits in vim.ui.select, and a hit picked shown
-- in its tree (its session opened, the run it is in unfolded, the cursor on it).
local state = require('sessiontree.state')
local messages = require('sessiontree.messages')
local buffers = require('sessiontree.buffers')
local notify, report = messages.notify, messages.report
local tree_buf, tree_message = buffers.tree_buf, buffers.tree_message

local INVALID_PARAMS = -32602
local NO_INDEX = -32017
local SEARCH_LIMIT = 50

local M = {}

local function st() -- the plugin's API (init.lua), looked up when called: modules call each other through it
  return require('sessiontree')
end

local RUN_PAGE = 2000 -- entries of a run asked for at a time when looking for one of them

--- Put the tree's cursor on an entry of the open session (a search hit): when the entry is in a
--- run, the run is unfolded and the cursor goes to the entry's own line.
function M.reveal(entry_id)
  st().with_session(function(session, client)
    local function draw_at(reveal)
      if state.session == session and tree_buf() then
        st().refresh({ replace = true, reveal = reveal })
      end
    end
    client:request('session/treeView', { sessionId = session.sessionId, reveal = entry_id, limit = 1 }, function(err, found)
      if err then
        return report(err)
      elseif state.session ~= session then
        return
      end
      local row = found.rows[1]
      if not (row and row.run) then
        return draw_at({ id = entry_id })
      elseif row.id == entry_id then
        return draw_at({ id = entry_id, run = row.id, offset = 0 })
      end
      -- Where the entry is in the run: its entries a page at a time until it turns up.
      local function look(offset)
        local params = { sessionId = session.sessionId, run = row.id, offset = offset, limit = RUN_PAGE }
        client:request('session/treeView', params, function(e, page)
          if e then
            return report(e)
          elseif state.session ~= session then
            return
          end
          for k, entry in ipairs(page.rows) do
            if entry.id == entry_id then
              return draw_at({ id = entry_id, run = row.id, offset = page.offset + k - 1 })
            end
          end
          if #page.rows > 0 and page.offset + #page.rows < page.total then
            look(page.offset + #page.rows)
          else
            draw_at({ id = entry_id }) -- not there any more (the tree changed): on its row
          end
        end)
      end
      look(0)
    end)
  end)
end

--- Open the session of a search hit (unless it is the open one) and show its tree with the cursor
--- on the hit's entry.
function M.open_hit(hit)
  st().client()
  st().tree_buffer()
  local entry = hit.entryId ~= vim.NIL and hit.entryId or nil
  local session = state.session
  if session and session.path == hit.path then
    if entry then
      M.reveal(entry)
    else
      st().show_tree()
    end
    return
  end
  if state.tree.shown ~= hit.path then
    tree_message('Opening ' .. hit.path .. '…')
  end
  st().open(hit.path, function()
    if entry then
      M.reveal(entry)
    end
  end)
end

local function search_error(err, query)
  if type(err) == 'table' and err.code == INVALID_PARAMS then
    err = { message = 'search: the query ' .. vim.inspect(query) .. ' is not valid: ' .. tostring(err.message) }
  elseif type(err) == 'table' and err.code == NO_INDEX then
    err = {
      message = 'search needs an index directory, and the daemon has none it can write ('
        .. tostring(err.message) .. "); set one with require('sessiontree').setup({ index_dir = ... })",
    }
  end
  report(err)
end

--- :SessionSearch {query}: search every session under the root (session/search; opts.syntax
--- "plain" by default, "fts" for FTS5 syntax) and pick a hit in vim.ui.select; the hit's session
--- opens with the cursor on its entry. A newer search cancels an older one still waiting.
--- opts.on_hits(hits), when given, is called with the hits before the picker (for scripts).
function M.search(query, opts)
  opts = opts or {}
  query = vim.trim(query or '')
  if query == '' then
    return notify('search: nothing to search for')
  end
  local client = st().client()
  local previous = state.search_request
  if previous and previous.client:alive() then
    previous.client:cancel(previous.handle)
  end
  local request = { client = client }
  state.search_request = request
  local params = { query = query, syntax = opts.syntax or 'plain', limit = opts.limit or SEARCH_LIMIT }
  request.handle = client:request('session/search', params, function(err, result)
    if state.search_request ~= request then
      return -- a newer search replaced this one
    end
    state.search_request = nil
    if err then
      return search_error(err, query)
    end
    local hits = result.hits
    if opts.on_hits then
      opts.on_hits(hits)
    end
    if #hits == 0 then
      return notify('search: nothing matches ' .. vim.inspect(query))
    end
    local more = result.cursor ~= nil and result.cursor ~= vim.NIL and ' (the first ' .. #hits .. ')' or ''
    vim.ui.select(hits, {
      prompt = 'Sessions matching ' .. query .. more,
      kind = 'sessiontree_search',
      format_item = require('sessiontree.search').format_hit,
    }, function(hit)
      if hit then
        st().guard(M.open_hit, hit)
      end
    end)
  end)
  return request
end

--- :SessionSearch without a query: ask for one.
function M.search_prompt()
  vim.ui.input({ prompt = 'Search sessions: ' }, function(text)
    if text and vim.trim(text) ~= '' then
      st().guard(M.search, text)
    end
  end)
end

return M
