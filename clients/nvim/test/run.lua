-- Headless test of the plugin against the real daemon, on any Neovim from 0.7 to 0.11:
--   nvim --headless -u NONE -c "luafile clients/nvim/test/run.lua"
-- Asserts on what a user sees (the tree and context buffers, messages, :checkhealth) and, through
-- the daemon or the file, on what the commands did; exits 0 when all pass. The commands are
-- asynchronous: the test (only the test) waits with vim.wait for the buffers to change. Headless,
-- the main loop does not run between keys, so no CursorMoved fires by itself: after moving the
-- cursor the test fires it (settle()), as the main loop would for a user.
-- The daemon: $SESSIONTREE_COMMAND, $SESSIONTREE_PYTHON, else the repository's .venv, else python3.
local here = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h')
local plugin_dir = vim.fn.fnamemodify(here, ':h')
local repo = vim.fn.fnamemodify(plugin_dir, ':h:h')
vim.opt.runtimepath:prepend(plugin_dir)
vim.cmd('runtime plugin/sessiontree.lua')
local uv = vim.uv or vim.loop

local failures, passed = {}, 0
local function out(text)
  io.stdout:write(text .. '\n')
end

-- Messages the plugin gives the user. Each must fit the command line (one line, no wider than
-- v:echospace), or Neovim would stop and ask to press ENTER: those that do not are kept in `too_long`.
local messages, too_long = {}, {}
vim.notify = function(message, level)
  table.insert(messages, { message = message, level = level })
  if message:find('\n') or vim.fn.strdisplaywidth(message) > vim.v.echospace then
    table.insert(too_long, { message = message, columns = vim.o.columns, echospace = vim.v.echospace })
  end
end
local function messages_matching(pattern)
  local found = {}
  for _, m in ipairs(messages) do
    if m.message:find(pattern) then
      table.insert(found, m)
    end
  end
  return found
end

local function test(name, fn)
  local ok, err = xpcall(fn, debug.traceback)
  if ok then
    passed = passed + 1
    out('ok - ' .. name)
  else
    table.insert(failures, name)
    out('not ok - ' .. name .. '\n' .. tostring(type(err) == 'table' and vim.inspect(err) or err))
    out('  messages: ' .. vim.inspect(messages))
  end
end

local function eq(expected, got, what)
  if not vim.deep_equal(expected, got) then
    error(string.format('%s:\n  expected %s\n  got      %s', what or 'values differ', vim.inspect(expected), vim.inspect(got)), 2)
  end
end

-- How long the test waits for the plugin: generous, since CI runs on two busy cores and a bound is
-- only reached when something is wrong; a test's first wait includes the daemon's start-up.
local WAIT_MS = 60000

--- Wait (the test only) until fn() is true; fail with what() otherwise.
local function wait_for(description, fn, timeout_ms)
  if not vim.wait(timeout_ms or WAIT_MS, fn, 10) then
    error('timed out waiting for ' .. description, 2)
  end
end

local function command()
  if (vim.env.SESSIONTREE_COMMAND or '') ~= '' or (vim.env.SESSIONTREE_PYTHON or '') ~= '' then
    return nil -- rpc.command reads the environment
  end
  local venv = repo .. '/.venv/bin/python'
  return { vim.fn.executable(venv) == 1 and venv or 'python3', '-m', 'sessiontree', 'serve' }
end

local function read_entries(path)
  local entries = {}
  for _, line in ipairs(vim.fn.readfile(path)) do
    table.insert(entries, vim.json.decode(line))
  end
  return entries
end

local function buffer_lines(buf)
  return vim.api.nvim_buf_get_lines(buf or 0, 0, -1, false)
end

local function tree_lines()
  return vim.list_slice(buffer_lines(), 3)
end

local function press(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'x', false)
end

local function cursor_to(text)
  for number, line in ipairs(buffer_lines()) do
    if line:find(text, 1, true) then
      vim.api.nvim_win_set_cursor(0, { number, 0 })
      return
    end
  end
  error('no line with ' .. text .. ' in ' .. vim.inspect(buffer_lines()), 2)
end

local function has_line(text)
  return function()
    return vim.tbl_contains(buffer_lines(), text)
  end
end

--- Wait until line `number` of the current buffer reads `text`.
local function wait_line(number, text)
  if not vim.wait(WAIT_MS, function()
    return buffer_lines()[number] == text
  end, 10) then
    error(string.format('timed out waiting for line %d to read %q; it reads %q', number, text, tostring(buffer_lines()[number])), 2)
  end
end

--- What the main loop does after a key that moved the cursor (headless, nothing does it).
local function settle()
  vim.cmd('doautocmd <nomodeline> CursorMoved')
end

--- Answer the plugin's next yes/no questions (vim.fn.confirm, which headless Neovim answers with
--- its default) with `yes`; returns the questions asked.
local function answer_confirm(yes)
  local asked = {}
  vim.fn.confirm = function(question, choices, default)
    table.insert(asked, { question = question, choices = choices, default = default })
    return yes and 1 or 2
  end
  return asked
end

local function cursor_line()
  return vim.api.nvim_win_get_cursor(0)[1]
end

-- Wide enough for the whole of every line and message of the tests below but the ones about
-- width, which make it 80.
vim.o.columns = 200
local root = vim.fn.tempname() .. '-sessions'
vim.fn.mkdir(root, 'p')
root = vim.fn.resolve(root)
-- The daemons' index sidecars (for sessions of 1,000+ entries) go here, not to the user's cache.
local cache = vim.fn.tempname() .. '-cache'
vim.env.XDG_CACHE_HOME = cache
local st = require('sessiontree')
local rpc = require('sessiontree.rpc')
-- session/search needs an index directory: one of its own, given to the daemon as
-- initializationOptions.indexDir.
local index_dir = cache .. '/index'
st.setup({ cmd = command(), sessions_dir = root, index_dir = index_dir })
out('# Neovim ' .. rpc.nvim_version())

local function user(text)
  return { type = 'message', message = { role = 'user', content = text, timestamp = 1735689600000 } }
end
local function assistant(text)
  return {
    type = 'message',
    message = { role = 'assistant', content = { { type = 'text', text = text } }, timestamp = 1735689600000 },
  }
end
local function leaf_id()
  return st.request_sync('session/info', { sessionId = st.state.session.sessionId }).leafId
end

-- A second daemon writes the session, as another program would.
local other = assert(rpc.start({ cmd = command(), sessions_dir = root }))
local created = other:request_sync('session/create', { cwd = '/work/nvim' })
local batch = other:request_sync('session/append', {
  sessionId = created.sessionId,
  entries = { user('Hello'), assistant('Hi there'), user('Fix the bug') },
})
local ids = {}
for _, entry in ipairs(batch.appended) do
  table.insert(ids, entry.id)
end
other:request_sync('session/setName', { sessionId = created.sessionId, name = 'Demo' })

test('session/list with an empty object (vim.empty_dict), not an array', function()
  local sessions = st.request_sync('session/list', vim.empty_dict()).sessions
  eq(1, #sessions, 'sessions listed')
  eq('Demo', sessions[1].name)
end)

test(':SessionOpen shows the tree buffer at once, then the tree of the file', function()
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(created.path))
  -- The command has returned before the daemon answered: the buffer says what is coming.
  eq(true, vim.api.nvim_buf_get_name(0):match('sessiontree://tree$') ~= nil, 'the tree buffer is current')
  eq({ 'Opening ' .. created.path .. '…' }, buffer_lines(), 'before the answer')
  wait_for('the tree', has_line('● session info: name: Demo ← leaf'))
  local lines = buffer_lines()
  eq('Session Demo  (' .. created.path .. ')', lines[1], 'title')
  eq({
    '● user: Hello',
    '● … 2 entries from assistant: Hi there',
    '● session info: name: Demo ← leaf',
  }, tree_lines(), 'tree lines')
  eq(5, vim.api.nvim_win_get_cursor(0)[1], 'the cursor on the leaf')
end)

test('<CR> on an entry moves the leaf (as the daemon says); the next append branches there', function()
  cursor_to('user: Hello')
  press('<CR>')
  wait_for('the leaf marker to move', has_line('● user: Hello ← leaf'))
  eq(ids[1], leaf_id(), 'leaf after <CR>')
  st.request_sync('session/append', { sessionId = st.state.session.sessionId, entry = user('Another way') })
  press('r')
  wait_for('the new entry', has_line('  ● user: Another way ← leaf'))
  eq({
    '● user: Hello',
    '  ○ assistant: Hi there',
    '  ○ user: Fix the bug',
    '  ○ session info: name: Demo',
    '  ● user: Another way ← leaf',
  }, tree_lines(), 'tree after branching')
end)

test('l labels the entry under the cursor: in the buffer and in the file', function()
  cursor_to('user: Hello')
  press('lstart<CR>')
  io.stdout:write('\n') -- after the prompt's echo
  wait_for('the label', has_line('● user: Hello [start]'))
  local labels = {}
  for _, entry in ipairs(read_entries(created.path)) do
    if entry.type == 'label' then
      table.insert(labels, { entry.targetId, entry.label })
    end
  end
  eq({ { ids[1], 'start' } }, labels, 'label entries in the file')
end)

test('the tree follows another daemon appending (session/didChange)', function()
  local opened = other:request_sync('session/open', { path = created.path })
  other:request_sync('session/append', { sessionId = opened.sessionId, entry = assistant('From elsewhere'), parentId = leaf_id() })
  wait_for('the redraw', has_line('  ● assistant: From elsewhere ← leaf'), 5000)
end)

test('the tree follows another process writing the file', function()
  local leaf = leaf_id()
  local line = vim.json.encode({
    type = 'message',
    id = 'feed0001',
    parentId = leaf,
    timestamp = '2026-01-01T00:00:00.000Z',
    message = { role = 'user', content = 'Written by a script', timestamp = 1767225600000 },
  })
  local file = assert(io.open(created.path, 'a'))
  file:write(line .. '\n')
  file:close()
  wait_for('the redraw', has_line('  ● user: Written by a script ← leaf'), 5000)
  eq('feed0001', leaf_id(), 'the leaf followed the other writer')
end)

test('a hidden tree buffer is brought up to date when shown again', function()
  vim.cmd('enew')
  local opened = other:request_sync('session/open', { path = created.path })
  other:request_sync('session/append', { sessionId = opened.sessionId, entry = assistant('While hidden'), parentId = leaf_id() })
  wait_for('the change to be noted', function()
    return st.state.tree.stale
  end, 5000)
  vim.cmd('SessionTree')
  wait_for('the redraw', has_line('  ● assistant: While hidden ← leaf'), 5000)
  vim.cmd('bwipeout #')
end)

test(':SessionContext shows what the model sees', function()
  vim.cmd('SessionContext')
  eq({ 'Loading the context at the leaf…' }, buffer_lines(), 'before the answer')
  wait_for('the context', function()
    return buffer_lines()[1] == 'user: Hello'
  end)
  eq({ 'user: Hello', 'user: Another way', 'assistant: From elsewhere', 'user: Written by a script', 'assistant: While hidden' }, buffer_lines(), 'context lines')
end)

test('a newer request replaces an older one: the older answer is dropped', function()
  local client = st.client()
  local first, second = nil, nil
  local handle = client:request('session/context', { sessionId = st.state.session.sessionId }, function(_, r)
    first = r
  end)
  client:cancel(handle)
  client:request('session/info', { sessionId = st.state.session.sessionId }, function(_, r)
    second = r
  end)
  wait_for('the newer answer', function()
    return second ~= nil
  end)
  vim.wait(100) -- a quiet spell on purpose: a callback of the cancelled request would come in it
  eq(nil, first, 'the cancelled request called back')
  eq(false, client:pending(handle), 'still pending')
end)

test('f forks at the entry under the cursor into a new file and shows it', function()
  vim.cmd('SessionTree')
  wait_for('the tree', has_line('  ○ assistant: Hi there'))
  cursor_to('assistant: Hi there')
  local before = st.state.session.path
  local asked = answer_confirm(true)
  press('f')
  eq(1, #asked, 'asked before forking')
  eq('Fork at "assistant: Hi there" into a new session file?', asked[1].question)
  eq(2, asked[1].default, 'no by default')
  wait_for('the forked session', function()
    return st.state.session.path ~= before and st.state.tree.shown == st.state.session.path
  end)
  local after = st.state.session.path
  eq(true, vim.fn.filereadable(after) == 1, 'a new session file')
  local forked = read_entries(after)
  eq('session', forked[1].type)
  eq(before, forked[1].parentSession)
  eq({ ids[1], ids[2] }, { forked[2].id, forked[3].id }, 'the path to the entry, copied')
  -- The fork keeps the label of the first entry, re-created after the path: the new leaf.
  eq({ '● user: Hello [start]', '● assistant: Hi there', '● label: ' .. ids[1] .. ': start ← leaf' }, tree_lines(), 'fork tree')
  eq(1, #messages_matching('forked into'), 'a message says where')
end)

local example = root .. '/--work-example--/demo-session.jsonl'
test('the example session: the tree as :SessionOpen draws it, runs folded, the cursor on the leaf', function()
  vim.fn.mkdir(vim.fn.fnamemodify(example, ':h'), 'p')
  vim.fn.writefile(vim.fn.readfile(repo .. '/clients/examples/demo-session.jsonl', 'b'), example, 'b')
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(example))
  wait_for('the tree', function()
    return st.state.tree.shown == example
  end)
  eq('Session Empty input in the parser  (' .. example .. ')', buffer_lines()[1], 'title')
  eq({
    '● model change: anthropic/claude-sonnet-4-5',
    '● … 4 entries from thinking level change: thinking: medium',
    '● assistant: `parse` unpacks the first line without checking for empty input. I can either r… [diagnosis]',
    '  ○ label: f6a7b8c9: diagnosis',
    '  ○ user: Raise a ValueError with a clear message.',
    "  ○ assistant: Done: `parse('')` now raises `ValueError('empty input')`, and a test covers it.",
    '  ● user: On second thought, return an empty result instead.',
    '  ● branch summary: Tried raising ValueError on empty input; the user preferred an empty result.',
    "  ● assistant: `parse('')` now returns `('', [])`; the ValueError branch is gone.",
    "  ● compaction: ## Goal Make parser.py handle empty input. ## Progress - parse('') returns ('',…",
    '  ● … 2 entries from user: Now check the callers of parse.',
    '  ● assistant: Two callers; both already handle an empty result. ← leaf',
  }, tree_lines(), 'tree lines')
  eq(14, cursor_line(), 'the cursor on the leaf')
  cursor_to('… 4 entries')
  press('<Tab>')
  wait_line(7, "● toolResult: read: def parse(text): head, *rest = text.split('\\n') return head, rest")
  eq({
    '● model change: anthropic/claude-sonnet-4-5',
    '● thinking level change: thinking: medium',
    '● user: The tests in parser.py fail on empty input. Can you look?',
    '● assistant: Let me read the parser first. [read]',
    "● toolResult: read: def parse(text): head, *rest = text.split('\\n') return head, rest",
    '● assistant: `parse` unpacks the first line without checking for empty input. I can either r… [diagnosis]',
  }, vim.list_slice(tree_lines(), 1, 6), 'the run unfolded')
  eq(15, #tree_lines(), 'lines')
  eq(4, cursor_line(), 'the cursor on the first entry of the run')
  cursor_to('user: The tests')
  press('zc')
  eq('● … 4 entries from thinking level change: thinking: medium', buffer_lines()[4], 'folded again')
  eq(4, cursor_line(), 'the cursor on the run')
  eq(12, #tree_lines(), 'lines')
  -- A move on a run row is made on its first entry: here a label, which makes it a row of its own.
  press('lthinking<CR>')
  io.stdout:write('\n') -- after the prompt's echo
  wait_line(4, '● thinking level change: thinking: medium [thinking]')
  eq({
    '● model change: anthropic/claude-sonnet-4-5',
    '● thinking level change: thinking: medium [thinking]',
    '● … 3 entries from user: The tests in parser.py fail on empty input. Can you look?',
    '● assistant: `parse` unpacks the first line without checking for empty input. I can either r… [diagnosis]',
    '  ○ label: f6a7b8c9: diagnosis',
    '  ○ user: Raise a ValueError with a clear message.',
    "  ○ assistant: Done: `parse('')` now raises `ValueError('empty input')`, and a test covers it.",
    '  ● user: On second thought, return an empty result instead.',
    '  ● branch summary: Tried raising ValueError on empty input; the user preferred an empty result.',
    "  ● assistant: `parse('')` now returns `('', [])`; the ValueError branch is gone.",
    "  ● compaction: ## Goal Make parser.py handle empty input. ## Progress - parse('') returns ('',…",
    '  ● … 3 entries from user: Now check the callers of parse.',
    '  ● label: b2c3d4e5: thinking ← leaf',
  }, tree_lines(), 'after the label')
  eq(4, cursor_line(), 'the cursor on the labelled entry')
  local last = read_entries(example)
  eq({ 'label', 'b2c3d4e5', 'thinking' }, { last[#last].type, last[#last].targetId, last[#last].label }, 'the label entry in the file')
end)

test('search hits: the matched words marked, code points counted as the daemon counts them', function()
  local search = require('sessiontree.search')
  eq('héllo «wörld» «ä»', search.mark('héllo wörld ä', { { 12, 13 }, { 6, 11 } }), 'marked')
  eq('«日本»語', search.mark('日本語', { { 0, 2 } }), 'marked')
  eq('assistant · 2026-01-01 00:00 · a «b»  —  x.jsonl (/w)', search.format_hit({
    path = '/r/x.jsonl', cwd = '/w', role = 'assistant', type = 'message',
    timestamp = '2026-01-01T00:00:14.000Z', snippet = 'a b', highlights = { { 2, 3 } },
  }))
  eq('Empty input- a-b.md', search.export_name({ sessionId = 'x', name = 'Empty input: a/b' }, 'markdown'))
  eq('0123.html', search.export_name({ sessionId = '0123', name = vim.NIL }, 'html'))
end)

test('tree lines cut to a width in display columns: wide characters count two, the label and ← leaf stay', function()
  local render = require('sessiontree.render')
  eq('héll…', render.truncate('héllo wörld', 5))
  eq('日本語…', render.truncate('日本語テキスト', 7))
  eq('a…', render.truncate('a日本', 3), 'a wide character that does not fit is left out whole')
  local row = { indent = 1, onLeafPath = true, type = 'message', role = 'user', preview = '日本語のテキストがとても長い', label = 'ラベル', leaf = true }
  eq('  ● user: 日本語のテキ… [ラベル] ← leaf', render.row_line(row, 40), 'one column short: a wide character does not fit')
  eq(39, vim.fn.strdisplaywidth(render.row_line(row, 40)))
  eq('  ● user: 日本語のテキストがとても長い [ラベル] ← leaf', render.row_line(row, 60), 'fits: whole')
end)

--- Pick the first item vim.ui.select offers (as a user would); returns what was offered.
local function pick_first()
  local offered = {}
  local select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    vim.ui.select = select
    offered.items, offered.lines, offered.prompt = items, vim.tbl_map(opts.format_item, items), opts.prompt
    on_choice(items[1], 1)
  end
  return offered
end

test(':SessionSearch {words}: the first hit picked opens its session, the cursor on its entry (a run unfolded)', function()
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(created.path))
  wait_for('the first session', function()
    return st.state.tree.shown == created.path
  end)
  messages = {}
  local offered = pick_first()
  vim.cmd('SessionSearch read the parser')
  wait_for('the picker', function()
    return offered.items ~= nil
  end)
  local hit = offered.items[1]
  eq(example, hit.path, 'the best hit is in the example session: ' .. vim.inspect(offered.lines))
  eq('d4e5f6a7', hit.entryId, 'the hit: ' .. vim.inspect(hit))
  eq('assistant · 2026-01-01 00:00 · Let me «read» «the» «parser» first. «read» src/«parser».py  —  demo-session.jsonl (/home/user/demo)',
    offered.lines[1], 'the picker line')
  wait_for('the tree of the example session, the cursor on the hit', function()
    return st.state.tree.shown == example and st.entry_at_cursor() == hit.entryId
  end)
  eq(example, st.state.session.path, 'the session opened')
  eq('● assistant: Let me read the parser first. [read]', buffer_lines()[cursor_line()], 'the cursor line')
  eq('● user: The tests in parser.py fail on empty input. Can you look?', buffer_lines()[cursor_line() - 1],
    'the run the hit is in, unfolded')
  eq({}, messages, 'no messages')
end)

test(':SessionSearch without a query asks for one; a hit in the open session moves the cursor to it', function()
  local input = vim.ui.input
  local asked
  vim.ui.input = function(opts, on_confirm)
    vim.ui.input = input
    asked = opts.prompt
    on_confirm('callers both')
  end
  local offered = pick_first()
  vim.cmd('SessionSearch')
  eq('Search sessions: ', asked, 'the prompt')
  wait_for('the picker', function()
    return offered.items ~= nil
  end)
  eq('9d0e1f2a', offered.items[1].entryId, 'the hit')
  wait_for('the cursor on the hit', function()
    return st.entry_at_cursor() == '9d0e1f2a'
  end)
  eq('  ● assistant: Two callers; both already handle an empty result.', buffer_lines()[cursor_line()], 'the cursor line')
end)

test('a bad FTS query is reported clearly; the same words as plain text are not an error', function()
  messages = {}
  local got
  st.search('parser AND (', { syntax = 'fts', on_hits = function(hits)
    got = hits
  end })
  wait_for('the message', function()
    return #messages > 0
  end)
  eq(vim.log.levels.ERROR, messages[1].level)
  eq(true, messages[1].message:find('sessiontree: search: the query "parser AND (" is not valid: ', 1, true) == 1, messages[1].message)
  eq(nil, got, 'no hits')
  messages = {}
  local offered = pick_first()
  st.search('parser AND (', { on_hits = function(hits)
    got = hits
  end })
  wait_for('the hits', function()
    return got ~= nil
  end)
  eq({}, messages, 'no messages')
  wait_for('the picker (the first hit picked)', function()
    return offered.items ~= nil
  end)
end)

test(':SessionExport markdown {file}: the path to the leaf written there; a message says where', function()
  wait_for('the example session', function()
    return st.state.tree.shown == example
  end)
  messages = {}
  local file = vim.fn.tempname() .. '-export.md'
  vim.cmd('SessionExport markdown ' .. vim.fn.fnameescape(file))
  wait_for('the file', function()
    return vim.fn.filereadable(file) == 1 and #messages > 0
  end)
  eq('# Empty input in the parser', vim.fn.readfile(file)[1], 'the first line')
  eq('sessiontree: exported to ' .. file .. ' (markdown, the path to the leaf)', messages[1].message)
  vim.fn.delete(file)
end)

test(':SessionExport html tree: the whole tree, to the session name + .html in the current directory', function()
  local dir = vim.fn.tempname() .. '-export'
  vim.fn.mkdir(dir, 'p')
  dir = vim.fn.resolve(dir)
  local cwd = vim.fn.getcwd()
  vim.cmd('cd ' .. vim.fn.fnameescape(dir))
  messages = {}
  vim.cmd('SessionExport html tree')
  local file = dir .. '/Empty input in the parser.html'
  wait_for('the file', function()
    return vim.fn.filereadable(file) == 1 and #messages > 0
  end)
  vim.cmd('cd ' .. vim.fn.fnameescape(cwd))
  eq('<!DOCTYPE html>', vim.fn.readfile(file)[1], 'the first line')
  eq('sessiontree: exported to Empty input in the parser.html (html, the whole tree)', messages[1].message)
  messages = {}
  vim.cmd('SessionExport pdf')
  eq('sessiontree: export: the format is markdown or html, not "pdf"', messages[1] and messages[1].message)
  vim.fn.delete(dir, 'rf')
end)

test('search without an index directory (index_dir = false): a clear message', function()
  local config = vim.deepcopy(st.config)
  eq(0, st.stop(), 'the daemon exits cleanly')
  st.setup({ index_dir = false })
  messages = {}
  vim.cmd('SessionSearch parser')
  wait_for('the message', function()
    return #messages > 0
  end)
  eq(vim.log.levels.ERROR, messages[1].level)
  eq(true, messages[1].message:find('sessiontree: search needs an index directory, and the daemon has none it can write (', 1, true) == 1,
    messages[1].message)
  eq(0, st.stop(), 'the daemon exits cleanly')
  st.config = config
end)

-- A session with a long linear stretch, written here as pi writes one: a header, then 3,000
-- entries, each the child of the line before (questions and answers taking turns).
local long = root .. '/--work-long--/long.jsonl'
local LONG = 3000
local function long_id(i)
  return string.format('%08x', 0x10000000 + i)
end
do
  local lines = {
    '{"type":"session","version":3,"id":"01a233f7-0000-7000-8000-00000000a001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/long"}',
  }
  for i = 1, LONG do
    local message = i % 2 == 1 and { role = 'user', content = 'question ' .. i }
      or { role = 'assistant', content = { { type = 'text', text = 'answer ' .. i } } }
    message.timestamp = 1767225600000 + i * 1000
    lines[i + 1] = vim.json.encode({
      type = 'message',
      id = long_id(i),
      parentId = i > 1 and long_id(i - 1) or vim.NIL,
      timestamp = string.format('2026-01-01T%02d:%02d:%02d.000Z', math.floor(i / 3600), math.floor(i / 60) % 60, i % 60),
      message = message,
    })
  end
  vim.fn.mkdir(vim.fn.fnamemodify(long, ':h'), 'p')
  vim.fn.writefile(lines, long)
end

local treeview_requests = 0
do
  local request = rpc.Client.request
  rpc.Client.request = function(self, method, ...)
    if method == 'session/treeView' then
      treeview_requests = treeview_requests + 1
    end
    return request(self, method, ...)
  end
end

test('a long linear stretch is one run row; the first page shows the leaf', function()
  treeview_requests = 0
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(long))
  wait_for('the tree', function()
    return st.state.tree.shown == long
  end)
  eq({
    '● user: question 1',
    '● … 2,998 entries from assistant: answer 2',
    '● assistant: answer 3000 ← leaf',
  }, tree_lines(), 'tree lines')
  eq(5, cursor_line(), 'the cursor on the leaf')
  eq(2, treeview_requests, 'session/treeView requests: where the leaf is, and its page')
end)

test('<Tab> unfolds a run, whose entries load a page at a time as the window needs them; zc folds it', function()
  cursor_to('… 2,998 entries')
  treeview_requests = 0
  press('<Tab>')
  eq(LONG + 2, #buffer_lines(), 'the run replaced by its entries')
  eq(4, cursor_line(), 'the cursor on its first entry')
  wait_line(4, '● assistant: answer 2')
  eq({ '● user: question 1', '● assistant: answer 2', '● user: question 3' }, vim.list_slice(tree_lines(), 1, 3))
  eq('● assistant: answer 3000 ← leaf', buffer_lines()[LONG + 2])
  eq(1, treeview_requests, 'one page of the run')
  eq('·', buffer_lines()[LONG + 1], 'the end of the run, not loaded yet')
  press('G')
  settle()
  wait_line(LONG + 1, '● user: question 2999')
  eq(2, treeview_requests, 'the page at the end of the run')
  vim.api.nvim_win_set_cursor(0, { 1003, 0 })
  settle()
  wait_line(1003, '● user: question 1001')
  eq('● assistant: answer 1000', buffer_lines()[1002])
  press('zc')
  eq({
    '● user: question 1',
    '● … 2,998 entries from assistant: answer 2',
    '● assistant: answer 3000 ← leaf',
  }, tree_lines(), 'folded again')
  eq(4, cursor_line(), 'the cursor on the run')
  press('zo')
  wait_line(4, '● assistant: answer 2')
  eq(LONG + 2, #buffer_lines(), 'unfolded again')
end)

test('another writer appends at the leaf: the view follows, the unfolded run grows and stays unfolded', function()
  press('G')
  settle()
  wait_line(LONG + 1, '● user: question 2999')
  local opened = other:request_sync('session/open', { path = long })
  local appended = other:request_sync('session/append', { sessionId = opened.sessionId, entry = user('question 3001') })
  wait_for('the redraw', has_line('● user: question 3001 ← leaf'), 5000)
  eq(LONG + 3, #buffer_lines(), 'one line more')
  eq('● assistant: answer 3000', buffer_lines()[LONG + 2], 'the old leaf, now in the run')
  eq(LONG + 3, cursor_line(), 'the cursor followed the leaf')
  eq(appended.id, leaf_id(), 'the leaf, as the daemon has it')
end)

test('<CR> on an entry of an unfolded run moves the leaf there (as the daemon says); the run stays unfolded', function()
  vim.api.nvim_win_set_cursor(0, { 1003, 0 })
  settle()
  wait_line(1003, '● user: question 1001')
  press('<CR>')
  wait_line(1003, '● user: question 1001 ← leaf')
  eq(long_id(1001), leaf_id(), 'the leaf, as the daemon has it')
  eq('● assistant: answer 1000', buffer_lines()[1002])
  eq('○ assistant: answer 1002', buffer_lines()[1004], 'after the leaf: off its path')
  eq(LONG + 3, #buffer_lines(), 'still unfolded on both sides of the leaf')
  eq(1003, cursor_line(), 'the cursor stays on the entry')
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(created.path))
  wait_for('the first session again', function()
    return st.state.tree.shown == created.path
  end)
end)

-- A session twelve branch points deep (each entry of the main line has a second child), its
-- last entry a long message with a long label.
local deep = root .. '/--work-deep--/deep.jsonl'
do
  local lines = {
    '{"type":"session","version":3,"id":"01a233f7-0000-7000-8000-00000000d001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/deep"}',
  }
  local function add(id, parent, text)
    lines[#lines + 1] = vim.json.encode({
      type = 'message', id = id, parentId = parent or vim.NIL, timestamp = '2026-01-01T00:00:00.000Z',
      message = { role = 'user', content = text, timestamp = 1767225600000 },
    })
  end
  for i = 1, 13 do
    add(string.format('d%07d', i), i > 1 and string.format('d%07d', i - 1) or nil, 'step ' .. i)
    if i > 1 and i < 13 then
      add(string.format('e%07d', i), string.format('d%07d', i - 1), 'aside ' .. i)
    end
  end
  add('d9999999', 'd0000013', 'The last question, long enough that with its depth it would never fit in eighty columns at all')
  lines[#lines + 1] = vim.json.encode({
    type = 'label', id = 'd9999998', parentId = 'd9999999', timestamp = '2026-01-01T00:00:00.000Z',
    targetId = 'd9999999', label = 'a label as long as a sentence, too',
  })
  vim.fn.mkdir(vim.fn.fnamemodify(deep, ':h'), 'p')
  vim.fn.writefile(lines, deep)
end

test('a deep tree in 80 columns: indentation stops at 8 levels, the depth as a number, labels and ← leaf within the width', function()
  vim.o.columns = 80
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(deep))
  wait_for('the tree', function()
    return st.state.tree.shown == deep
  end)
  local lines = tree_lines()
  for _, line in ipairs(lines) do
    eq(true, vim.fn.strdisplaywidth(line) <= 80, 'within 80 columns: ' .. line)
  end
  eq({
    '● user: step 1',
    '  ● user: step 2',
    '    ● user: step 3',
    '      ● user: step 4',
    '        ● user: step 5',
    '          ● user: step 6',
    '            ● user: step 7',
    '              ● user: step 8',
    '                ● user: step 9',
    '            »9  ● user: step 10',
    '            »10 ● user: step 11',
    '            »11 ● user: step 12',
    '            »11 ● user: step 13',
    '            »11 ● user: The last question,… [a label as long as a sentence, too]',
    '            »11 ● label: d9999999: a label as long as a sentence, too ← leaf',
    '            »11 ○ user: aside 12',
    '            »10 ○ user: aside 11',
    '            »9  ○ user: aside 10',
    '                ○ user: aside 9',
    '              ○ user: aside 8',
  }, vim.list_slice(lines, 1, 20), 'the tree')
  -- A narrower window: the tree is drawn again for it.
  vim.o.columns = 60
  vim.cmd('doautocmd <nomodeline> VimResized')
  wait_for('the lines cut to 60 columns', function()
    return vim.fn.strdisplaywidth(tree_lines()[14]) <= 60
  end)
  for _, line in ipairs(tree_lines()) do
    eq(true, vim.fn.strdisplaywidth(line) <= 60, 'within 60 columns: ' .. line)
  end
  eq('            »11 ● user: The l… [a label as long as a sente…]', tree_lines()[14], 'the labelled entry')
  eq('            »11 ● label: d9999999: a label as long a… ← leaf', tree_lines()[15], 'the leaf')
  vim.o.columns = 200
end)

test('writes ask first: f asks yes or no, l with nothing typed cancels, L clears a label once confirmed', function()
  local before = #read_entries(deep)
  local asked = answer_confirm(false)
  cursor_to('user: step 8')
  press('f')
  eq(1, #asked, 'asked')
  vim.wait(200)
  eq(deep, st.state.session.path, 'no fork: still the same session')
  press('l<CR>')
  io.stdout:write('\n')
  vim.wait(200)
  eq(before, #read_entries(deep), 'nothing written')
  cursor_to('[a label as long')
  asked = answer_confirm(true)
  press('L')
  eq(true, asked[1] and asked[1].question:find('^Clear the label %[a label as long') ~= nil, vim.inspect(asked))
  wait_for('the label gone', function()
    return buffer_lines()[cursor_line()]:find('%[') == nil
  end)
  local last = read_entries(deep)
  eq({ 'label', 'd9999999' }, { last[#last].type, last[#last].targetId }, 'a label entry clearing it')
  eq(nil, last[#last].label, 'no label text')
end)

test("setup({ confirm = false }): f forks without asking; <CR> says pi sees the move only below it", function()
  st.setup({ confirm = false })
  local asked = answer_confirm(false)
  messages = {}
  cursor_to('user: step 8')
  press('<CR>')
  wait_for('the message', function()
    return #messages > 0
  end)
  eq('sessiontree: leaf moved; pi sees it only once an entry follows it', messages[1].message)
  cursor_to('user: step 8')
  press('f')
  wait_for('the forked session', function()
    return st.state.session.path ~= deep and st.state.tree.shown == st.state.session.path
  end)
  eq(0, #asked, 'not asked')
  st.setup({ confirm = true })
  vim.fn.delete(st.state.session.path)
end)

test('every message fits in one line of the command line (no hit-enter prompt), at 80 columns too', function()
  vim.o.columns = 80
  messages = {}
  answer_confirm(true)
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(deep))
  wait_for('the tree', function()
    return st.state.tree.shown == deep
  end)
  cursor_to('user: step 8')
  press('f') -- "forked into" and the new file's name
  wait_for('the message', function()
    return #messages_matching('forked into') == 1
  end)
  vim.fn.delete(st.state.session.path)
  vim.o.columns = 200
  eq({}, too_long, 'messages too long for the command line')
end)

test(':SessionOpen without a file picks from the sessions under the root', function()
  local select = vim.ui.select
  local offered
  vim.ui.select = function(items, opts, on_choice)
    offered = vim.tbl_map(opts.format_item, items)
    for _, item in ipairs(items) do
      if item.name == 'Demo' then
        return on_choice(item)
      end
    end
  end
  vim.cmd('SessionOpen')
  wait_for('the choice', function()
    return offered ~= nil
  end)
  vim.ui.select = select
  eq(5, #offered, 'sessions offered: ' .. vim.inspect(offered))
  wait_for('the tree of the session chosen', function()
    return st.state.tree.shown == created.path
  end)
  eq('Session Demo  (' .. created.path .. ')', buffer_lines()[1])
end)

test('errors become messages, not tracebacks; the open session stays', function()
  messages = {}
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(root .. '/missing.jsonl'))
  wait_for('the message', function()
    return #messages_matching('no session file at') == 1
  end)
  eq(vim.log.levels.ERROR, messages[1].level)
  wait_for('the tree of the open session', has_line('  ○ assistant: Hi there'))
end)

test('the daemon killed: a message says so, the next command starts it again', function()
  wait_for('the first session', function()
    return st.state.session.path == created.path
  end)
  local client = st.client()
  local pid = client.pid
  messages = {}
  uv.kill(pid, 'sigkill')
  wait_for('the message', function()
    return #messages > 0
  end)
  eq(1, #messages, 'one message')
  eq(vim.log.levels.ERROR, messages[1].level)
  eq('sessiontree: the daemon exited (killed by SIGKILL); the next command starts it again', messages[1].message:sub(1, 84))
  -- The next command: a new daemon, the session opened in it again.
  vim.cmd('SessionTree')
  wait_for('a new daemon', function()
    return st.state.session.client == st.state.client and st.state.client.state == 'ready'
  end)
  wait_for('the tree', has_line('  ○ assistant: Hi there'))
  eq(true, st.state.client.pid ~= pid, 'a new process')
  cursor_to('○ assistant: Hi there')
  press('<CR>')
  wait_for('the leaf marker', has_line('  ● assistant: Hi there ← leaf'))
  eq(ids[2], leaf_id(), 'the leaf moved, in the new daemon')
  eq({ 'sessiontree: ' .. st.LEAF_MOVED }, { messages[2].message, messages[3] }, 'no more messages but the move')
end)

test('the daemon missing: a clear message', function()
  eq(0, st.stop(), 'the daemon exits cleanly')
  local config = vim.deepcopy(st.config)
  st.setup({ cmd = { root .. '/no-such-sessiontree', 'serve' } })
  messages = {}
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(created.path))
  eq(1, #messages, 'one message')
  eq(vim.log.levels.ERROR, messages[1].level)
  local whole = 'sessiontree: cannot find the daemon `' .. root .. '/no-such-sessiontree` (the command `' .. root
    .. '/no-such-sessiontree serve --sessions-dir ' .. root .. '/`). Install sessiontree, or set '
    .. "$SESSIONTREE_COMMAND, or require('sessiontree').setup({ cmd = { ... } })"
  eq(whole, st.state.log[#st.state.log].text, 'the whole message, kept for :checkhealth')
  local shown = messages[1].message
  eq(whole:sub(1, #shown - #'…'), shown:sub(1, #shown - #'…'), 'said as one line that fits')
  st.config = config
end)

test(':checkhealth sessiontree: the command, the daemon and protocol versions, the sessions root', function()
  vim.cmd('SessionOpen ' .. vim.fn.fnameescape(created.path))
  wait_for('the tree', function()
    return st.state.tree.shown == created.path
  end)
  local init = st.state.client.initialize_result
  vim.cmd('checkhealth sessiontree')
  io.stdout:write('\n') -- after "Running healthchecks..."
  local text = table.concat(buffer_lines(), '\n')
  local function has(fragment)
    eq(true, text:find(fragment, 1, true) ~= nil, 'checkhealth shows ' .. fragment .. ':\n' .. text)
  end
  has('Neovim ' .. rpc.nvim_version())
  has('daemon command: `' .. table.concat(rpc.command(st.config.cmd), ' ') .. ' --sessions-dir ' .. root .. '/`')
  has('daemon sessiontree ' .. init.serverInfo.version .. ' (pid ' .. st.state.client.pid .. ', running)')
  has('protocol version 1.0, session file format 3')
  has('sessions root: ' .. root .. ' (as the daemon reports it)')
  has('open session: ' .. created.path)
  -- The messages said earlier, in full (said cut to one line).
  has('recent messages')
  has("or set $SESSIONTREE_COMMAND, or require('sessiontree').setup({ cmd = { ... } })")
  eq(nil, text:find('ERROR', 1, true), 'no errors:\n' .. text)
  vim.cmd('bwipeout')
end)

test(':help sessiontree: the help file has its tags (:helptags), every command, key and option found', function()
  -- A copy, so that the tags file is not written into the checkout.
  local dir = vim.fn.tempname() .. '-help'
  vim.fn.mkdir(dir .. '/doc', 'p')
  vim.fn.writefile(vim.fn.readfile(plugin_dir .. '/doc/sessiontree.txt'), dir .. '/doc/sessiontree.txt')
  vim.cmd('helptags ' .. vim.fn.fnameescape(dir .. '/doc'))
  vim.opt.runtimepath:prepend(dir)
  for _, tag in ipairs({
    'sessiontree', ':SessionOpen', ':SessionTree', ':SessionContext', ':SessionSearch', ':SessionExport',
    'sessiontree-<CR>', 'sessiontree-l', 'sessiontree-L', 'sessiontree-f', 'sessiontree-c', 'sessiontree-<Tab>',
    'sessiontree-zo', 'sessiontree-r', 'sessiontree-?', 'sessiontree-leaf', 'sessiontree-depth',
    'sessiontree-cmd', 'sessiontree-sessions_dir', 'sessiontree-index_dir', 'sessiontree-store',
    'sessiontree-confirm', 'sessiontree-health', 'sessiontree-troubleshooting', 'sessiontree-tree',
  }) do
    vim.cmd('help ' .. vim.fn.escape(tag, ' '))
    eq(dir .. '/doc/sessiontree.txt', vim.fn.resolve(vim.api.nvim_buf_get_name(0)), 'the help of ' .. tag)
    eq(true, vim.api.nvim_get_current_line():find('*' .. tag .. '*', 1, true) ~= nil, 'the cursor on ' .. tag)
    vim.cmd('helpclose')
  end
  -- `?` in the tree: the help of the tree buffer.
  vim.cmd('SessionTree')
  press('?')
  eq(dir .. '/doc/sessiontree.txt', vim.fn.resolve(vim.api.nvim_buf_get_name(0)), '? opens the help')
  eq(true, vim.api.nvim_get_current_line():find('*sessiontree-tree*', 1, true) ~= nil, 'on the tree buffer section')
  vim.cmd('helpclose')
  vim.opt.runtimepath:remove(dir)
  vim.fn.delete(dir, 'rf')
end)

local codes = { st.stop(), other:stop() }
test('both daemons exit cleanly', function()
  eq({ 0, 0 }, codes)
end)

vim.fn.delete(root, 'rf')
vim.fn.delete(cache, 'rf')
out(string.format('%d passed, %d failed', passed, #failures))
if #failures > 0 then
  vim.cmd('cquit 1')
else
  vim.cmd('qall!')
end
