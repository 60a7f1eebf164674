-- What the plugin holds while Neovim runs: the daemon, the open session, the tree buffer and its
-- drawing, requests under way, the last messages. One table, shared by every module.
-- client: the running daemon; session: the open session {sessionId, path, name, entryCount,
-- leafId (as last heard), client (the daemon it is open in)}; tree: the tree buffer and its drawing.
return {
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
  log = {}, -- the last messages in full, newest last (shown by :checkhealth sessiontree)
}
