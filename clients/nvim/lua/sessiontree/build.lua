-- A session/tree answer made into buffer lines without holding up the editor.
--
-- A tree of 100,000 entries is a 23 MB answer: decoding it and making its lines takes most of a
-- second of Lua. A small answer is done at once; a large one (handed over undecoded, see
-- rpc.lua's `raw`) goes to a libuv worker thread, which decodes it with vim.json and runs
-- render.lua there, and the lines come back as one string that is split on the main loop in
-- slices, each a few milliseconds long.
local uv = vim.uv or vim.loop
local render = require('sessiontree.render')

local M = {}

M.SLICE = 10000 -- lines split per turn of the main loop
M.use_threads = true -- false: decode and render large trees on the main loop too
M.stats = { threaded = 0, here = 0 } -- trees made in the worker thread, on the main loop

local render_path = debug.getinfo(render.lines, 'S').source:sub(2)

-- Runs in the worker thread: no upvalues (it is sent as bytecode), only plain Lua and vim.json.
local function work(job, path, body)
  local ok, a, b, c, d, e = pcall(function()
    return dofile(path).from_body(body)
  end)
  if not ok then
    return job, 'crash', tostring(a)
  end
  if not a then
    return job, 'error', b, c
  end
  return job, 'ok', b, c, d, e
end

local worker, jobs, next_job = nil, {}, 0

local function start_worker()
  if worker == nil and uv.new_work then
    local ok, w = pcall(uv.new_work, work, function(job, status, ...)
      local args = { n = select('#', ...), ... }
      vim.schedule(function()
        local callback = jobs[job]
        jobs[job] = nil
        if callback then
          callback(status, unpack(args, 1, args.n))
        end
      end)
    end)
    worker = ok and w or false
  end
  return worker
end

--- Split text on "\n" in slices, then on_done(list).
local function split_sliced(text, on_done)
  local list, n, pos = {}, 0, 1
  local find, sub = string.find, string.sub
  local function step()
    local stop_at = n + M.SLICE
    while n < stop_at do
      local nl = find(text, '\n', pos, true)
      n = n + 1
      if not nl then
        list[n] = sub(text, pos)
        return on_done(list)
      end
      list[n] = sub(text, pos, nl - 1)
      pos = nl + 1
    end
    vim.schedule(step)
  end
  if text == '' then
    return on_done({})
  end
  step()
end

--- tree: a decoded session/tree result, or body: the whole JSON-RPC answer undecoded.
--- on_done(err, lines, ids, leaf) on the main loop; err: {code, message}.
function M.lines(tree, body, on_done)
  if tree then
    M.stats.here = M.stats.here + 1
    local lines, ids, leaf = render.lines(tree)
    return on_done(nil, lines, ids, leaf)
  end
  local function finish(status, a, b, c, d)
    if status == 'error' then
      return on_done({ code = a, message = b })
    elseif status == 'crash' then
      return on_done({ code = -32603, message = 'could not draw the tree: ' .. tostring(a) })
    end
    local lines_text, ids_text, leaf = a, b, d
    split_sliced(lines_text, function(lines)
      split_sliced(ids_text, function(ids)
        on_done(nil, lines, ids, leaf ~= 0 and leaf or nil)
      end)
    end)
  end
  local w = M.use_threads and start_worker()
  if not w then
    -- No worker threads: do it here.
    M.stats.here = M.stats.here + 1
    local ok, good, a, b, c, d = pcall(render.from_body, body)
    if not ok then
      return finish('crash', good)
    elseif not good then
      return finish('error', a, b)
    end
    return finish('ok', a, b, c, d)
  end
  M.stats.threaded = M.stats.threaded + 1
  next_job = next_job + 1
  jobs[next_job] = finish
  w:queue(next_job, render_path, body)
end

return M
