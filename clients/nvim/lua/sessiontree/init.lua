-- sessiontree for Neovim (0.7 to 0.11): a tree buffer of the current session, its context, and
-- the moves (switch branch, label, fork), all through the sessiontree daemon.
--
--   require('sessiontree').setup({ cmd = { 'sessiontree', 'serve' }, sessions_dir = '~/sessions' })
--   :SessionOpen path/to/session.jsonl   :SessionTree   :SessionContext
--
-- Every command is asynchronous: it shows its buffer at once ("Loading…") and fills it when the
-- daemon answers, so the editor never waits on the daemon. The tree comes from session/treeView a
-- page at a time: the page that shows the leaf first, then the pages the windows scroll to (see
-- view.lua for what each line shows). The daemon starts on first use; when it cannot be found or
-- dies, a message says so, and the next command starts it again (and opens the session again).
local rpc = require('sessiontree.rpc')
local render = require('sessiontree.render')
local View = require('sessiontree.view')

local M = {}

M.config = { cmd = nil, sessions_dir = nil, index_dir = nil, store = nil }

local HEADER_LINES = 2
local HELP = '<CR> switch  l label  f fork  c context  <Tab> unfold/fold  r refresh'
local ENTRY_NOT_FOUND = -32011
local INVALID_PARAMS = -32602

-- client: the running daemon; session: the open session {sessionId, path, name, entryCount,
-- leafId (as last heard), client (the daemon it is open in)}; tree: the tree buffer and its drawing.
local state = {
  client = nil,
  session = nil,
  tree = {
    buf = nil,
    view = nil, -- what the buffer shows (view.lua), nil before the first drawing of a session
    lines = {}, -- the buffer's lines after the header, as last written
    open = {}, -- first entries of the runs shown unfolded (kept across redraws)
    unfold_after = nil, -- an entry moved on in an unfolded run: the rest of the run stays unfolded
    shown = nil, -- the session whose tree the buffer holds
    generation = 0, -- of the last refresh started
    floor = 0, -- answers of older refreshes than this are not drawn (the user changed something since)
    painted = 0, -- the generation drawn last
    busy = false, -- a refresh is under way
    stale = false, -- changed while no window showed it: refreshed when one does
    dirty = false, -- something changed while it was
    requests = {}, -- of the refresh under way
    mismatches = 0, -- answers that disagreed since the last change notified or key pressed
    client = nil,
  },
  context_request = nil,
}
M.state = state

function M.setup(opts)
  M.config = vim.tbl_extend('force', M.config, opts or {})
end

local function notify(message, level)
  vim.notify('sessiontree: ' .. message, level or vim.log.levels.INFO)
end

--- Report a failed request. A request that failed because the daemon exited is not reported
--- again: its exit was.
local function report(err)
  if type(err) ~= 'table' then
    err = { message = tostring(err) }
  end
  if err.code == rpc.DAEMON_EXITED and err.reported then
    return
  end
  err.reported = true
  notify(err.message or vim.inspect(err), vim.log.levels.ERROR)
end
M.report = report

local function on_notification(method, params)
  local session = state.session
  if method == 'session/didChange' then
    if session and params.sessionId == session.sessionId then
      for _, entry in ipairs(params.entries or {}) do
        if entry.type == 'session_info' then
          session.name = entry.name
        end
      end
      session.leafId = params.leafId
      state.tree.mismatches = 0
      M.refresh()
    end
  elseif method == 'window/logMessage' then
    notify(params.message, vim.log.levels.WARN)
  end
end

local function on_exit(client)
  if client == state.client and not state.stopping then
    if client.exit_error then
      client.exit_error.reported = true
    end
    local message = 'the daemon exited (' .. client.exit_text .. ')'
    local tail = client:stderr_tail(3)
    if #tail > 0 then
      message = message .. ':\n  ' .. table.concat(tail, '\n  ')
    end
    notify(message .. '\nIt starts again with the next command.', vim.log.levels.ERROR)
  end
end

--- The running daemon, started if it is not running. Raises {code, message} when it cannot start.
function M.client()
  local client = state.client
  if client and client:alive() then
    return client
  end
  if client and client.state == 'failed' then
    client:kill()
  end
  local started, err = rpc.start({
    cmd = M.config.cmd,
    sessions_dir = M.config.sessions_dir,
    index_dir = M.config.index_dir,
    store = M.config.store,
    on_notification = on_notification,
    on_exit = on_exit,
  })
  if not started then
    error({ code = rpc.DAEMON_EXITED, message = err })
  end
  state.client = started
  return started
end

--- An asynchronous request to the daemon: callback(err, result) on the main loop. Returns the
--- request's handle (for client:cancel).
function M.request(method, params, callback)
  local client = M.client()
  return client:request(method, params, callback or function(err)
    if err then
      report(err)
    end
  end)
end

--- A request that waits for its answer, for scripts and tests (not for the editor's commands).
function M.request_sync(method, params, timeout_ms)
  return M.client():request_sync(method, params, timeout_ms)
end

local function no_session()
  return { message = 'no session is open: :SessionOpen {file}' }
end

--- Run fn(session, client) with the open session in a running daemon: when the daemon was
--- restarted since the session was opened, open its file again first (if that fails, the error
--- is reported and on_error(err) called).
function M.with_session(fn, on_error)
  local session = state.session
  if session == nil then
    error(no_session())
  end
  local client = M.client()
  if session.client == client then
    return fn(session, client)
  end
  client:request('session/open', { path = session.path }, function(err, opened)
    if err or state.session ~= session then
      if err then
        report(err)
      end
      if on_error then
        on_error(err)
      end
      return
    end
    session.sessionId, session.name, session.client = opened.sessionId, opened.name, client
    session.leafId = opened.leafId
    client:request('session/subscribe', { sessionId = opened.sessionId }, function(e)
      if e then
        report(e)
      end
    end)
    fn(session, client)
  end)
end

-- Buffers --------------------------------------------------------------------------------------

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

local function window_top(win)
  return vim.api.nvim_win_call(win, function()
    return vim.fn.line('w0')
  end)
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
  local generation = t.generation
  if replace then
    t.floor, t.mismatches = generation, 0
  end
  t.busy, t.dirty, t.requests = true, false, {}
  local function current()
    return generation == t.generation
  end
  local function done()
    if current() then
      t.busy, t.requests = false, {}
      if t.dirty then
        M.refresh()
      end
    end
  end

  -- Ask for everything in `asks` ({key, params}) at once; then(answers) when all have answered
  -- (answers[key] = {err, result}).
  local function ask_all(session, client, asks, after)
    local answers, waiting = {}, #asks
    if waiting == 0 then
      return after(answers)
    end
    for _, ask in ipairs(asks) do
      ask.params.sessionId = session.sessionId
      table.insert(t.requests, client:request('session/treeView', ask.params, function(err, result)
        answers[ask.key] = { err = err, result = result }
        waiting = waiting - 1
        if waiting == 0 and current() then
          local ok, e = pcall(after, answers)
          if not ok then
            report({ message = 'could not draw the tree: ' .. tostring(e) })
            done()
          end
        end
      end))
    end
  end

  local function start(session, client, anchor, retried)
    -- 1. Where things are: the cursor's entry (and its page), the unfolded runs.
    local asks = {}
    if anchor.id then
      table.insert(asks, { key = 'anchor', params = { reveal = anchor.id, limit = 1 } })
      table.insert(asks, { key = 'page', params = { reveal = anchor.id, limit = View.PAGE } })
    else
      table.insert(asks, { key = 'page', params = { offset = View.page_of(anchor.pos or 0), limit = View.PAGE } })
    end
    local open_ids = vim.tbl_keys(t.open)
    table.sort(open_ids)
    for _, id in ipairs(open_ids) do
      table.insert(asks, { key = 'open ' .. id, params = { reveal = id, limit = 1 } })
    end
    ask_all(session, client, asks, function(answers)
      for _, answer in pairs(answers) do
        if answer.err then
          if answer.err.code == ENTRY_NOT_FOUND and not retried then
            t.open = {} -- ids of another version of the file: start from the leaf
            return start(session, client, { id = session.leafId, leaf = true }, true)
          end
          if generation >= t.floor then
            report(answer.err)
          end
          return done()
        end
      end
      local page = answers.page.result
      for _, answer in pairs(answers) do
        if answer.result.total ~= page.total or answer.result.leafId ~= page.leafId then
          t.dirty = changed_meanwhile() -- the tree changed between two answers: again
          return done()
        end
      end
      session.leafId = page.leafId
      if anchor.leaf and anchor.id ~= page.leafId and not retried then
        return start(session, client, { id = page.leafId, leaf = true }, true)
      end
      local view = View.new(page.total, page.leafId)
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
      local line -- the cursor's line in the tree, nil: on the header
      if anchor.id then
        local found = answers.anchor.result
        local row = found.rows[1]
        if row then
          view.rows[found.offset] = view.rows[found.offset] or row
          line = view:line_of(found.offset)
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
        end
      elseif not anchor.header and page.total > 0 then
        line = view:line_of(math.min(anchor.pos or 0, page.total - 1))
      end
      -- 2. The rest of what the window shows.
      local win = tree_window()
      local height = win and vim.api.nvim_win_get_height(win) or 50
      local cursor, top
      if anchor.header then
        cursor, top = anchor.header, anchor.top
      elseif line then
        cursor = HEADER_LINES + line
        top = anchor.screen and math.max(1, cursor - anchor.screen) or nil
      end
      local first, last
      if top then
        first, last = top - HEADER_LINES, top - HEADER_LINES + height
      else
        first, last = (line or 1) - height, (line or 1) + height
      end
      local wanted = view:wanted(first, last)
      asks = {}
      for i, want in ipairs(wanted) do
        local params = { offset = want.offset, limit = View.PAGE, run = want.run and want.run.id or nil }
        asks[i] = { key = i, params = params }
      end
      ask_all(session, client, asks, function(pages)
        for i, want in ipairs(wanted) do
          local answer = pages[i]
          if answer.err and not (answer.err.code == INVALID_PARAMS or answer.err.code == ENTRY_NOT_FOUND) then
            report(answer.err)
            return done()
          elseif answer.err or not fits(view, answer.result, want.run) then
            t.dirty = changed_meanwhile() -- the tree changed meanwhile (a run is gone): again
            return done()
          end
          if want.run then
            view:put_run(want.run, want.offset, answer.result.rows)
          else
            view:put(want.offset, answer.result.rows)
          end
        end
        -- 3. Draw.
        if generation < t.floor or generation <= t.painted or state.session ~= session or not tree_buf() then
          return done()
        end
        t.painted = generation
        draw(session, view)
        if cursor then
          cursor = math.min(cursor, vim.api.nvim_buf_line_count(t.buf))
          for _, w in ipairs(vim.fn.win_findbuf(t.buf)) do
            if top then
              vim.api.nvim_win_call(w, function()
                vim.fn.winrestview({ lnum = cursor, col = 0, topline = top })
              end)
            else
              vim.api.nvim_win_set_cursor(w, { cursor, 0 })
            end
          end
        end
        fire('SessionTreeDrawn')
        done()
        M.load_visible()
      end)
    end)
  end

  local ok, err = pcall(M.with_session, function(session, client)
    t.client = client
    client:request('session/info', { sessionId = session.sessionId }, function(e, info)
      local buf = tree_buf()
      if not e and info and state.session == session then
        session.name = info.name
        if buf and t.shown == session.path then
          set_lines(buf, 0, 1, { title(session) })
        end
      end
    end)
    if t.shown ~= session.path then
      t.open = {}
    end
    local anchor = anchor_for(session, opts)
    start(session, client, anchor, false)
    if t.unfold_after ~= anchor.id then
      t.unfold_after = nil
    end
  end, done)
  if not ok then
    t.busy = false
    report(err)
  end
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
  M.load_visible()
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
  write(line, line + run.count - 1, { render.row_line(t.view.rows[run.pos]) })
  vim.api.nvim_win_set_cursor(0, { HEADER_LINES + line, 0 })
  if t.busy then
    t.dirty = true
  end
  M.load_visible()
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

--- Run fn, turning an error into a message instead of a Lua traceback. Returns ok, err.
function M.guard(fn, ...)
  local ok, err = pcall(fn, ...)
  if not ok then
    report(err)
  end
  return ok, err
end

local function map(buf, lhs, fn)
  vim.api.nvim_buf_set_keymap(buf, 'n', lhs, '', {
    noremap = true,
    silent = true,
    callback = function()
      M.guard(fn)
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
          M.refresh({ replace = true })
        else
          M.guard(M.load_visible)
        end
      end,
    })
    vim.api.nvim_create_autocmd('CursorMoved', {
      buffer = buf,
      callback = function()
        M.guard(M.load_visible)
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
          M.guard(M.load_visible)
        end
      end,
    })
  end
  show(buf)
  map(buf, '<CR>', function()
    keep_unfolded_after_cursor()
    M.branch(entry_for_move())
  end)
  map(buf, 'l', function()
    local id = entry_for_move()
    if id then
      vim.ui.input({ prompt = 'Label (empty clears): ' }, function(text)
        if text then
          M.guard(function()
            keep_unfolded_after_cursor()
            M.label(id, text)
          end)
        end
      end)
    end
  end)
  map(buf, 'f', function()
    M.fork(entry_for_move())
  end)
  map(buf, 'c', function()
    M.show_context()
  end)
  map(buf, 'r', function()
    M.refresh({ replace = true })
  end)
  for _, lhs in ipairs({ '<Tab>', 'za' }) do
    map(buf, lhs, M.toggle)
  end
  map(buf, 'zo', M.unfold)
  map(buf, 'zc', M.fold)
  return buf
end

-- Commands -------------------------------------------------------------------------------------

--- Open a session file and watch it for other writers; on_open(session) when it is open.
function M.open(path, on_open)
  path = vim.fn.fnamemodify(vim.fn.expand(path), ':p')
  local client = M.client()
  client:request('session/open', { path = path }, function(err, opened)
    if err then
      if tree_buf() and state.tree.shown == nil then
        if state.session then
          M.refresh({ replace = true }) -- the tree of the session still open
        else
          tree_message('Could not open ' .. path .. ': ' .. tostring(err.message))
        end
      end
      return report(err)
    end
    local previous = state.session
    if previous and previous.client == client and previous.sessionId ~= opened.sessionId then
      client:request('session/close', { sessionId = previous.sessionId }, function() end)
    end
    state.session = {
      sessionId = opened.sessionId,
      path = opened.path,
      name = opened.name,
      entryCount = opened.entryCount,
      leafId = opened.leafId,
      client = client,
    }
    client:request('session/subscribe', { sessionId = opened.sessionId }, function(e)
      if e then
        report(e)
      end
    end)
    if state.tree.shown ~= opened.path then
      tree_message(string.format('Loading the tree of %s (%d entries)…', opened.path, opened.entryCount or 0))
    end
    M.refresh({ replace = true })
    if on_open then
      on_open(state.session)
    end
  end)
end

--- :SessionOpen {file}: open it and show its tree.
function M.open_and_show(path)
  M.client() -- fails here, before the buffer changes, when the daemon cannot start
  local buf = M.tree_buffer()
  if state.tree.shown == nil or state.session == nil
    or state.tree.shown ~= vim.fn.fnamemodify(vim.fn.expand(path), ':p') then
    tree_message('Opening ' .. path .. '…')
  end
  M.open(path)
  return buf
end

--- :SessionTree: the tree of the open session, shown at once. The buffer follows the session
--- (session/didChange) while a window shows it, and is brought up to date when one shows it
--- again; a new buffer, or one whose daemon has exited, is loaded again.
function M.show_tree()
  local session = state.session
  if session == nil then
    error(no_session())
  end
  local buf = M.tree_buffer()
  if state.tree.shown ~= session.path then
    tree_message(string.format('Loading the tree of %s (%d entries)…', session.path, session.entryCount or 0))
    M.refresh({ replace = true })
  elseif not (session.client and session.client:alive()) then
    M.refresh({ replace = true })
  end
  return buf
end

--- The answer's handler for a request that may move the leaf: note the leaf, then draw the tree
--- again with the cursor on `entry_id`.
local function redraw_at(session, entry_id)
  return function(err, result)
    if err then
      return report(err)
    end
    session.leafId = result.leafId
    M.refresh({ replace = true, entry = entry_id })
  end
end

--- Move the leaf to an entry.
function M.branch(entry_id)
  if not entry_id then
    return
  end
  M.with_session(function(session, client)
    client:request('session/branch', { sessionId = session.sessionId, entryId = entry_id }, redraw_at(session, entry_id))
  end)
end

--- Set an entry's label; empty text clears it.
function M.label(entry_id, text)
  M.with_session(function(session, client)
    local params = { sessionId = session.sessionId, targetId = entry_id }
    text = vim.trim(text or '')
    if text ~= '' then
      params.label = text
    end
    client:request('session/label', params, redraw_at(session, entry_id))
  end)
end

--- Fork at an entry into a new file, and show the new session.
function M.fork(entry_id)
  if not entry_id then
    return
  end
  M.with_session(function(session, client)
    client:request('session/fork', { sessionId = session.sessionId, entryId = entry_id }, function(err, forked)
      if err then
        return report(err)
      end
      M.open(forked.path, function()
        notify('forked into ' .. forked.path)
      end)
    end)
  end)
end

--- :SessionContext: what the model sees at the leaf. A newer :SessionContext cancels an older
--- one still waiting.
function M.show_context()
  local session = state.session
  if session == nil then
    error(no_session())
  end
  local buf = scratch('sessiontree://context', 'sessiontreecontext')
  show(buf)
  set_lines(buf, 0, -1, { 'Loading the context at the leaf…' })
  M.with_session(function(s, client)
    if state.context_request then
      state.context_request.client:cancel(state.context_request.handle)
    end
    local request = { client = client }
    state.context_request = request
    request.handle = client:request('session/context', { sessionId = s.sessionId }, function(err, context)
      if state.context_request == request then
        state.context_request = nil
      end
      if err then
        if vim.api.nvim_buf_is_valid(buf) then
          set_lines(buf, 0, -1, { 'Could not build the context: ' .. tostring(err.message) })
        end
        return report(err)
      end
      if vim.api.nvim_buf_is_valid(buf) then
        set_lines(buf, 0, -1, require('sessiontree.render').context_lines(context))
        fire('SessionContextDrawn')
      end
    end)
  end)
  return buf
end

--- :SessionOpen without a file: pick from the daemon's list.
function M.pick()
  M.request('session/list', vim.empty_dict(), function(err, result)
    if err then
      return report(err)
    end
    if #result.sessions == 0 then
      return notify('no sessions under the sessions root')
    end
    vim.ui.select(result.sessions, {
      prompt = 'Open session',
      format_item = function(s)
        local agent = (s.agent and s.agent ~= 'pi') and ('[' .. s.agent .. ', read-only]  ') or ''
        return agent .. (s.name or s.firstMessage or s.path) .. '  ' .. (s.cwd or '') .. '  ' .. (s.modified or '')
      end,
    }, function(choice)
      if choice then
        M.guard(M.open_and_show, choice.path)
      end
    end)
  end)
end

-- Search and export -----------------------------------------------------------------------------

local NO_INDEX = -32017
local SEARCH_LIMIT = 50
local RUN_PAGE = 2000 -- entries of a run asked for at a time when looking for one of them

--- Put the tree's cursor on an entry of the open session (a search hit): when the entry is in a
--- run, the run is unfolded and the cursor goes to the entry's own line.
function M.reveal(entry_id)
  M.with_session(function(session, client)
    local function draw_at(reveal)
      if state.session == session and tree_buf() then
        M.refresh({ replace = true, reveal = reveal })
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
  M.client()
  M.tree_buffer()
  local entry = hit.entryId ~= vim.NIL and hit.entryId or nil
  local session = state.session
  if session and session.path == hit.path then
    if entry then
      M.reveal(entry)
    else
      M.show_tree()
    end
    return
  end
  if state.tree.shown ~= hit.path then
    tree_message('Opening ' .. hit.path .. '…')
  end
  M.open(hit.path, function()
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
  local client = M.client()
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
        M.guard(M.open_hit, hit)
      end
    end)
  end)
  return request
end

--- :SessionSearch without a query: ask for one.
function M.search_prompt()
  vim.ui.input({ prompt = 'Search sessions: ' }, function(text)
    if text and vim.trim(text) ~= '' then
      M.guard(M.search, text)
    end
  end)
end

M.EXPORT_FORMATS = { 'markdown', 'html' }
M.EXPORT_SCOPES = { 'path', 'tree' }

--- :SessionExport {markdown|html} [path|tree] [file]: the open session as a document
--- (session/export), written to `file` (default: the session's name, or its id, with .md or
--- .html, in the current directory). on_done(file), when given, after the file is written.
function M.export(format, scope, file, on_done)
  if not vim.tbl_contains(M.EXPORT_FORMATS, format) then
    error({ message = 'export: the format is markdown or html, not ' .. vim.inspect(format) })
  end
  scope = scope or 'path'
  if not vim.tbl_contains(M.EXPORT_SCOPES, scope) then
    error({ message = 'export: the scope is path or tree, not ' .. vim.inspect(scope) })
  end
  M.with_session(function(session, client)
    local params = { sessionId = session.sessionId, format = format, scope = scope }
    client:request('session/export', params, function(err, result)
      if err then
        return report(err)
      end
      local target = file and vim.fn.expand(file) or require('sessiontree.search').export_name(session, format)
      target = vim.fn.fnamemodify(target, ':p')
      local out, open_err = io.open(target, 'wb')
      if not out then
        return report({ message = 'export: cannot write ' .. target .. ': ' .. tostring(open_err) })
      end
      local ok, write_err = out:write(result.content)
      out:close()
      if not ok then
        return report({ message = 'export: cannot write ' .. target .. ': ' .. tostring(write_err) })
      end
      notify(string.format('exported the %s as %s to %s', scope == 'tree' and 'whole tree' or 'path to the leaf', format, target))
      if on_done then
        on_done(target)
      end
    end)
  end)
end

--- The arguments of :SessionExport: format, then path|tree (optional), then the file (optional).
function M.export_command(fargs)
  local format, scope, rest = fargs[1], nil, 2
  if vim.tbl_contains(M.EXPORT_SCOPES, fargs[2] or '') then
    scope, rest = fargs[2], 3
  end
  local file = #fargs >= rest and table.concat(vim.list_slice(fargs, rest), ' ') or nil
  M.export(format, scope, file)
end

--- Shut the daemon down (waiting for it at most timeout_ms); returns its exit code.
function M.stop(timeout_ms)
  local client = state.client
  if client then
    state.stopping = true
    local code = client:stop(timeout_ms)
    state.stopping = false
    state.client, state.session = nil, nil
    state.tree.shown, state.tree.view = nil, nil
    return code
  end
end

return M
