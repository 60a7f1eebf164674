// One benchmark round on pi's own SessionManager, in-process.
//
// Usage: node --expose-gc --max-old-space-size=8192 pi_bench.mjs CONFIG_JSON
//   {"mode": "session", "file": PATH, "reps": 5, "sequential": 1000, "pipelined": 10000, "payload": 1000, "skip": ["fork"]}
//   {"mode": "list", "dir": PATH, "cwd": "/bench/list"}
//   {"mode": "open", "file": PATH}   (open and reopen only)
// Prints one JSON document: {"ops": {op: {"ms": [...], "peakMb": n}}, "peakMb": n}.
// Slow operations (open, fork, reopen, appends) run once per process: the runner
// repeats whole rounds in fresh processes and takes medians. Fast ones run once to
// warm up, then `reps` times.
import { rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
// The pi the conformance suite pins (tests/conformance/package.json names it), unless told otherwise.
const PI_DIR = process.env.PI_PACKAGE_DIR ?? (await import("../conformance/pi_package.mjs")).PI_DIR;
const { SessionManager } = await import(pathToFileURL(join(PI_DIR, "dist", "core", "session-manager.js")).href);

const config = JSON.parse(process.argv[2]);
const skip = new Set(config.skip ?? []); // operations too slow to repeat at this size
const ops = {};
const TURNS = 20; // timed turns per round, as daemon_bench.py: a turn is short, its median needs samples

function peakMb() {
  return process.resourceUsage().maxRSS / 1024; // maxRSS is in KiB
}

function collect() {
  globalThis.gc?.();
}

/** Time `fn` once in milliseconds; garbage from earlier steps is collected first, untimed. */
async function timeOnce(fn) {
  collect();
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

function record(op, ms) {
  ops[op] = { ms, peakMb: peakMb() };
}

async function repeated(op, fn, reps, firstOp) {
  const first = await timeOnce(fn); // warm-up
  if (firstOp) record(firstOp, [first]);
  const ms = [];
  for (let i = 0; i < reps; i++) ms.push(await timeOnce(fn));
  record(op, ms);
}

function message(payload, n) {
  const text = `message ${n} `.padEnd(payload, "lorem ipsum dolor sit amet ");
  return { role: "user", content: [{ type: "text", text }], timestamp: 1767225600000 + n };
}

/** A turn as an agent appends it: the user's message, the reply with a tool call, its result. */
function turnMessages(payload, n) {
  const user = message(payload, n);
  const call = { type: "toolCall", id: `call-${n}`, name: "read", arguments: { path: `src/file${n}.ts` } };
  const assistant = {
    role: "assistant", content: [{ type: "text", text: user.content[0].text }, call], api: "anthropic-messages",
    provider: "anthropic", model: "claude-sonnet-4-5", stopReason: "toolUse", timestamp: 1767225600000 + n + 1,
    usage: { input: 1000, output: 250, cacheRead: 0, cacheWrite: 0, totalTokens: 1250 },
  };
  const result = {
    role: "toolResult", toolCallId: call.id, toolName: "read", content: [{ type: "text", text: user.content[0].text }],
    isError: false, timestamp: 1767225600000 + n + 2,
  };
  return [user, assistant, result];
}

/** createBranchedSession switches the manager to the new file: put the old session back. */
function forkAndRestore(sm, leafId) {
  const saved = { fileEntries: sm.fileEntries, sessionId: sm.sessionId, sessionFile: sm.sessionFile, flushed: sm.flushed };
  const forked = sm.createBranchedSession(leafId);
  Object.assign(sm, saved);
  sm._buildIndex();
  return forked;
}

async function sessionRound() {
  const file = config.file;
  let sm;
  record("open", [await timeOnce(() => { sm = SessionManager.open(file); })]);
  const leafId = sm.getLeafId();
  await repeated("context", () => sm.buildSessionContext(), config.reps, "context_first");
  await repeated("tree", () => sm.getTree(), config.reps, "tree_first");
  await repeated("path", () => sm.getBranch(leafId), config.reps);
  if (!skip.has("fork")) {
    let forked;
    record("fork", [await timeOnce(() => { forked = forkAndRestore(sm, leafId); })]);
    if (forked) rmSync(forked, { force: true });
  }
  sm = null;
  collect();
  record("reopen", [await timeOnce(() => { sm = SessionManager.open(file); })]);

  let n = 0;
  const afterAppend = [];
  sm.appendMessage(message(config.payload, n++));
  sm.buildSessionContext(); // warm-up
  for (let i = 0; i < config.reps; i++) {
    sm.appendMessage(message(config.payload, n++));
    afterAppend.push(await timeOnce(() => sm.buildSessionContext()));
  }
  record("context_after_append", afterAppend);

  // The agent's turn: its three messages appended, then the context of the next model request.
  const turns = [];
  for (let i = 0; i <= TURNS; i++) {
    const turn = turnMessages(config.payload, n);
    n += 3;
    const ms = await timeOnce(() => {
      for (const m of turn) sm.appendMessage(m);
      return sm.buildSessionContext();
    });
    if (i) turns.push(ms); // the first one warms up
  }
  record("turn", turns);

  const batch = (count) => Array.from({ length: count }, () => message(config.payload, n++));
  const sequential = batch(config.sequential);
  record("append_seq", [await timeOnce(() => { for (const m of sequential) sm.appendMessage(m); })]);
  // In-process there is nothing to pipeline: the same calls, ten times as many.
  const pipelined = batch(config.pipelined);
  record("append_pipelined", [await timeOnce(() => { for (const m of pipelined) sm.appendMessage(m); })]);
}

async function listRound() {
  let sessions;
  record("list", [await timeOnce(async () => { sessions = await SessionManager.list(config.cwd, config.dir); })]);
  ops.list.count = sessions.length;
}

async function openRound() {
  let sm;
  record("open", [await timeOnce(() => { sm = SessionManager.open(config.file); })]);
  sm = null;
  collect();
  record("reopen", [await timeOnce(() => { sm = SessionManager.open(config.file); })]);
}

if (config.mode === "list") await listRound();
else if (config.mode === "open") await openRound();
else await sessionRound();
process.stdout.write(JSON.stringify({ ops, peakMb: peakMb() }) + "\n");
