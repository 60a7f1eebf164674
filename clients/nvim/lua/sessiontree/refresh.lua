-- Drawing the tree from the daemon: the pages of session/treeView a window shows, asked for in
-- a few requests at once, then drawn in one go with the cursor kept on its entry (see view.lua
-- for what each line shows). Scrolling loads the pages that come into view.
local View = require('sessiontree.view')
local state = require('sessiontree.state')
local messages = require('sessiontree.messages')
local buffers = require('sessiontree.buffers')
local notify, report = messages.notify, messages.report
local HEADER_LINES, tree_buf, set_lines, fire = buffers.HEADER_LINES, buffers.tree_buf, buffers.set_lines, buffers.fire
local title, draw, write_changed = buffers.title, buffers.draw, buffers.write_changed
local tree_window, tree_width, window_top = buffers.tree_window, buffers.tree_width, buffers.window_top

local ENTRY_NOT_FOUND = -32011
local INVALID_PARAMS = -32602

local M = {}

local function st() -- the plugin's API (init.lua), looked up when called: modules call each other through it
  return require('sessiontree')
end

-- Answers that disagree mean the tree changed between them (another writer): the tree is drawn
-- again. When that happens again and again without a change notified or a key pressed, the
-- daemon is at fault: said once, and the tree is left as it is until `r`.
local MAX_MISMATCHES = 5
local function changed_meanwhile()
  local t = state.tree
  t.mismatches = t.mismatches + 1
  if t.mismatches == MAX_MISMATCHES + 1 then
    notify('the daemon keeps sending pages of the tree that disagree with each other; '
      .. 'the tree may be out of date (r draws it again)', vim.log.levels.WARN)
  end
  return t.mismatches <= MAX_MISMATCHES
end

-- A page of session/treeView that arrived for `view` fits it: same leaf, same number of rows
-- (of the run, for a run's page). Otherwise the tree changed since the view was made.
local function fits(view, result, run)
  return result.leafId == view.leafId and result.total == (run and run.count or view.total)
end

--- Load the pages of rows the windows showing the tree need: what they show, a screen above and
--- a screen below. Runs on scrolling and cursor moves; never waits.
function M.load_visible()
  local t, session, buf = state.tree, state.session, tree_buf()
  local view = t.view
  if not (view and session and buf and t.shown == session.path) then
    return
  end
  local client = session.client
  if not (client and client:alive()) then
    return
  end
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    local top, cursor = window_top(win), vim.api.nvim_win_get_cursor(win)[1]
    local height = vim.api.nvim_win_get_height(win)
    local first = math.min(top, cursor) - HEADER_LINES - height
    local last = math.max(top + height, cursor) - HEADER_LINES + height
    for _, want in ipairs(view:wanted(first, last)) do
      local run = want.run
      client:request('session/treeView', {
        sessionId = session.sessionId,
        offset = want.offset,
        limit = View.PAGE,
        run = run and run.id or nil,
      }, function(err, result)
        if t.view ~= view or state.session ~= session then
          return -- a newer drawing replaced this view
        end
        view:unmark(want.offset, run)
        if err and not (err.code == INVALID_PARAMS or err.code == ENTRY_NOT_FOUND) then
          return report(err)
        elseif run and view:run_of(run.id) ~= run then
          return -- folded meanwhile
        elseif err or not fits(view, result, run) then
          if changed_meanwhile() then -- the tree changed since the view was drawn (a run is gone)
            M.refresh()
          end
          return
        end
        if run then
          write_changed(view:put_run(run, want.offset, result.rows))
        else
          write_changed(view:put(want.offset, result.rows))
        end
        fire('SessionTreePage')
      end)
    end
  end
end

-- Where a redraw puts the cursor: on the entry it is on (at the same height in the window), on
-- the leaf when it is on the leaf (the leaf may have moved) or when the tree is drawn anew, on
-- opts.entry after a move on that entry.
local function anchor_for(session, opts)
  local t = state.tree
  local view, win = t.view, tree_window()
  if opts.reveal then -- an entry found elsewhere (a search hit), in an unfolded run or not
    if opts.reveal.run then
      t.open[opts.reveal.run] = true
    end
    return { id = opts.reveal.id, run = opts.reveal.run, offset = opts.reveal.offset }
  end
  if opts.reveal_leaf or not view or t.shown ~= session.path or not win then
    return { id = session.leafId, leaf = true }
  end
  local cursor = vim.api.nvim_win_get_cursor(win)[1]
  local anchor = { screen = cursor - window_top(win) }
  local row, pos, run, offset = view:row(cursor - HEADER_LINES)
  if opts.entry then
    anchor.id = opts.entry -- the entry a move was made on: a row of its own now
  elseif not pos then
    anchor.header, anchor.top = cursor, window_top(win)
  elseif row and row.leaf then
    anchor.id, anchor.leaf = session.leafId, true
  elseif run then
    anchor.id, anchor.run, anchor.offset = row and row.id or run.id, run.id, offset
  elseif row then
    anchor.id = row.id
  else
    anchor.pos = pos
  end
  return anchor
end

-- A refresh under way is a job: {generation, session, client}. Only the newest job (the tree's
-- generation) acts on its answers.
local function current(job)
  return job.generation == state.tree.generation
end

-- The job is over: a change that came meanwhile starts the next refresh.
local function done(job)
  local t = state.tree
  if current(job) then
    t.busy, t.requests = false, {}
    if t.dirty then
      M.refresh()
    end
  end
end

-- Ask for every session/treeView in `asks` ({key, params}) at once; after(answers) when all have
-- answered (answers[key] = {err, result}), if the job is still the newest.
local function ask_all(job, asks, after)
  local t, answers, waiting = state.tree, {}, #asks
  if waiting == 0 then
    return after(answers)
  end
  for _, ask in ipairs(asks) do
    ask.params.sessionId = job.session.sessionId
    table.insert(t.requests, job.client:request('session/treeView', ask.params, function(err, result)
      answers[ask.key] = { err = err, result = result }
      waiting = waiting - 1
      if waiting == 0 and current(job) then
        local ok, e = pcall(after, answers)
        if not ok then
          report({ message = 'could not draw the tree: ' .. tostring(e) })
          done(job)
        end
      end
    end))
  end
end

-- The first requests: where the cursor's entry is (and its page), where the unfolded runs are.
local function where_asks(anchor, open_ids)
  local asks = {}
  if anchor.id then
    table.insert(asks, { key = 'anchor', params = { reveal = anchor.id, limit = 1 } })
    table.insert(asks, { key = 'page', params = { reveal = anchor.id, limit = View.PAGE } })
  else
    table.insert(asks, { key = 'page', params = { offset = View.page_of(anchor.pos or 0), limit = View.PAGE } })
  end
  for _, id in ipairs(open_ids) do
    table.insert(asks, { key = 'open ' .. id, params = { reveal = id, limit = 1 } })
  end
  return asks
end

-- A new view from the first answers: the page, the unfolded runs that are still runs.
local function view_of(page, answers, open_ids)
  local t = state.tree
  local view = View.new(page.total, page.leafId, tree_width())
  view:put(page.offset, page.rows)
  for _, id in ipairs(open_ids) do
    local found = answers['open ' .. id].result
    local row = found.rows[1]
    if row and row.id == id and row.run then
      view.rows[found.offset] = row
      view:open(found.offset)
    else
      t.open[id] = nil
    end
  end
  return view
end

-- The line of the cursor's entry in the new view (nil: on the header); after a move inside an
-- unfolded run, the rest of the run is unfolded too.
local function anchor_line(view, anchor, answers, total)
  local t = state.tree
  if not anchor.id then
    if not anchor.header and total > 0 then
      return view:line_of(math.min(anchor.pos or 0, total - 1))
    end
    return nil
  end
  local found = answers.anchor.result
  local row = found.rows[1]
  if not row then
    return nil
  end
  view.rows[found.offset] = view.rows[found.offset] or row
  local line = view:line_of(found.offset)
  local run = view:run_at(found.offset)
  if run and run.id == anchor.run then -- still in the unfolded run it was in
    line = line + math.min(anchor.offset, run.count - 1)
  end
  if t.unfold_after == anchor.id then -- the rest of the run the entry was in, unfolded
    t.unfold_after = nil
    local after = view.rows[found.offset + 1]
    if row.id == anchor.id and after and after.run and not view:run_at(found.offset + 1) then
      view:open(found.offset + 1)
      t.open[after.id] = true
    end
  end
  return line
end

-- Where the cursor and the window's top go, and the lines to load: what the window will show.
local function screen_for(anchor, line)
  local win = tree_window()
  local height = win and vim.api.nvim_win_get_height(win) or 50
  local cursor, top
  if anchor.header then
    cursor, top = anchor.header, anchor.top
  elseif line then
    cursor = HEADER_LINES + line
    top = anchor.screen and math.max(1, cursor - anchor.screen) or nil
  end
  if top then
    return { cursor = cursor, top = top, first = top - HEADER_LINES, last = top - HEADER_LINES + height }
  end
  return { cursor = cursor, first = (line or 1) - height, last = (line or 1) + height }
end

-- Write the view into the buffer and put the cursor (in every window that shows the tree).
local function paint(job, view, screen)
  local t = state.tree
  if job.generation < t.floor or job.generation <= t.painted or state.session ~= job.session or not tree_buf() then
    return done(job)
  end
  t.painted = job.generation
  draw(job.session, view)
  if screen.cursor then
    local cursor = math.min(screen.cursor, vim.api.nvim_buf_line_count(t.buf))
    for _, w in ipairs(vim.fn.win_findbuf(t.buf)) do
      if screen.top then
        vim.api.nvim_win_call(w, function()
          vim.fn.winrestview({ lnum = cursor, col = 0, topline = screen.top })
        end)
      else
        vim.api.nvim_win_set_cursor(w, { cursor, 0 })
      end
    end
  end
  fire('SessionTreeDrawn')
  done(job)
  M.load_visible()
end

-- 2. The other pages the window shows, then 3. paint.
local function load_rest(job, view, screen)
  local t = state.tree
  local wanted = view:wanted(screen.first, screen.last)
  local asks = {}
  for i, want in ipairs(wanted) do
    asks[i] = { key = i, params = { offset = want.offset, limit = View.PAGE, run = want.run and want.run.id or nil } }
  end
  ask_all(job, asks, function(pages)
    for i, want in ipairs(wanted) do
      local answer = pages[i]
      if answer.err and not (answer.err.code == INVALID_PARAMS or answer.err.code == ENTRY_NOT_FOUND) then
        report(answer.err)
        return done(job)
      elseif answer.err or not fits(view, answer.result, want.run) then
        t.dirty = changed_meanwhile() -- the tree changed meanwhile (a run is gone): again
        return done(job)
      end
      if want.run then
        view:put_run(want.run, want.offset, answer.result.rows)
      else
        view:put(want.offset, answer.result.rows)
      end
    end
    paint(job, view, screen)
  end)
end

-- 1. Where things are: the cursor's entry (and its page), the unfolded runs; then the rest.
local function locate(job, anchor, retried)
  local t, session = state.tree, job.session
  local open_ids = vim.tbl_keys(t.open)
  table.sort(open_ids)
  ask_all(job, where_asks(anchor, open_ids), function(answers)
    for _, answer in pairs(answers) do
      if answer.err then
        if answer.err.code == ENTRY_NOT_FOUND and not retried then
          t.open = {} -- ids of another version of the file: start from the leaf
          return locate(job, { id = session.leafId, leaf = true }, true)
        end
        if job.generation >= t.floor then
          report(answer.err)
        end
        return done(job)
      end
    end
    local page = answers.page.result
    for _, answer in pairs(answers) do
      if answer.result.total ~= page.total or answer.result.leafId ~= page.leafId then
        t.dirty = changed_meanwhile() -- the tree changed between two answers: again
        return done(job)
      end
    end
    session.leafId = page.leafId
    if anchor.leaf and anchor.id ~= page.leafId and not retried then
      return locate(job, { id = page.leafId, leaf = true }, true)
    end
    local view = view_of(page, answers, open_ids)
    local line = anchor_line(view, anchor, answers, page.total)
    load_rest(job, view, screen_for(anchor, line))
  end)
end

-- The session's name may have changed (session_info): the title follows.
local function retitle(session, client)
  client:request('session/info', { sessionId = session.sessionId }, function(e, info)
    local buf = tree_buf()
    if not e and info and state.session == session then
      session.name = info.name
      if buf and state.tree.shown == session.path then
        set_lines(buf, 0, 1, { title(session) })
      end
    end
  end)
end

--- Draw the tree again from the daemon (errors are reported, not raised). A tree buffer that no
--- window shows is only marked stale, and drawn when a window shows it again. Changes that
--- arrive while a refresh is under way are gathered into one more refresh when it ends;
--- opts.replace (the user changed something) cancels the one under way instead, and its answer
--- is not drawn. opts.reveal_leaf: put the cursor on the leaf (else it stays on its entry);
--- opts.entry: on this entry; opts.reveal = {id, run, offset}: on this entry, unfolding the run
--- (its first entry's id) it is the offset-th entry of.
---
--- A refresh asks, in one go, where the cursor's entry and the unfolded runs are now and the page
--- around the cursor's entry; then the other pages the window shows; then draws them all at once.
function M.refresh(opts)
  opts = opts or {}
  local t = state.tree
  if not (state.session and tree_buf()) then
    return
  end
  local replace = opts.replace
  if not replace and #vim.fn.win_findbuf(t.buf) == 0 then
    t.stale = true
    return
  end
  t.stale = false
  if t.busy and not replace then
    t.dirty = true
    return
  end
  if t.busy and t.client then
    for _, handle in ipairs(t.requests) do
      t.client:cancel(handle)
    end
  end
  t.generation = t.generation + 1
  local job = { generation = t.generation }
  if replace then
    t.floor, t.mismatches = job.generation, 0
  end
  t.busy, t.dirty, t.requests = true, false, {}
  local ok, err = pcall(st().with_session, function(session, client)
    t.client, job.session, job.client = client, session, client
    retitle(session, client)
    if t.shown ~= session.path then
      t.open = {}
    end
    local anchor = anchor_for(session, opts)
    locate(job, anchor, false)
    if t.unfold_after ~= anchor.id then
      t.unfold_after = nil
    end
  end, function()
    done(job)
  end)
  if not ok then
    t.busy = false
    report(err)
  end
end

return M
