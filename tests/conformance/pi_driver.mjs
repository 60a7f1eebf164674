// Runs conformance scenarios against pi's own SessionManager, repeatably.
//
// Usage: node pi_driver.mjs SCENARIOS.json
// The file holds one scenario or a list of them; stdout gets one JSON document:
// a list of {name, results: [{op, value} | {op, error}]} in scenario and op order.
//
// pi draws entry ids from crypto.randomUUID, session ids from pi-ai's uuidv7 (0.x: uuid's
// v7) and times from `new Date()`. The first two are ESM named imports, which cannot be
// patched from outside, so a module hook swaps them for seeded stand-ins, but only for
// session-manager.js. `Date` is replaced globally by a fake clock.
import { existsSync, readFileSync } from "node:fs";
import { register } from "node:module";
import { pathToFileURL } from "node:url";
import { PI_SCOPE, piCore } from "./pi_package.mjs";

const SESSION_MANAGER = piCore("session-manager.js");
const MESSAGES = piCore("messages.js");

// ---------------------------------------------------------------- seeded stand-ins

const FAKE_CRYPTO = `export const randomUUID = (...a) => globalThis.__piFakes.randomUUID(...a);`;
const FAKE_UUID = `export const v7 = (...a) => globalThis.__piFakes.v7(...a);
export const v4 = (...a) => globalThis.__piFakes.randomUUID(...a);`;

// pi-ai stays itself but for uuidv7: the stand-in re-exports the real module.
const FAKE_PI_AI = (realUrl) =>
  `export * from ${JSON.stringify(realUrl)}; export const uuidv7 = (...a) => globalThis.__piFakes.v7(...a);`;

const HOOKS = `
const subst = ${JSON.stringify({ crypto: FAKE_CRYPTO, "node:crypto": FAKE_CRYPTO, uuid: FAKE_UUID })};
const piAi = ${JSON.stringify(PI_SCOPE + "/pi-ai")};
const fakePiAi = ${FAKE_PI_AI.toString()};
const data = (src) => ({ url: "data:text/javascript," + encodeURIComponent(src), shortCircuit: true });
export async function resolve(specifier, context, next) {
  const parent = context.parentURL ?? "";
  if (parent.endsWith("/dist/core/session-manager.js")) {
    if (Object.hasOwn(subst, specifier)) return data(subst[specifier]);
    if (specifier === piAi) return data(fakePiAi((await next(specifier, context)).url));
  }
  return next(specifier, context);
}`;

register("data:text/javascript," + encodeURIComponent(HOOKS), import.meta.url);

/** mulberry32: small, fast and good enough to draw ids from a seed. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function uuidFrom(rand, version) {
  const bytes = Array.from({ length: 16 }, () => Math.floor(rand() * 256));
  bytes[6] = (bytes[6] & 0x0f) | (version << 4);
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const RealDate = Date;
const fakes = {
  rand: prng(1),
  idScript: [],
  sessionIdScript: [],
  clockNow: 0,
  clockStep: 1,
  clockScript: [],
  randomUUID() {
    // A scripted id only fixes the first 8 characters, which is all pi keeps.
    if (fakes.idScript.length) return fakes.idScript.shift() + uuidFrom(fakes.rand, 4).slice(8);
    return uuidFrom(fakes.rand, 4);
  },
  v7() {
    if (fakes.sessionIdScript.length) return fakes.sessionIdScript.shift();
    return uuidFrom(fakes.rand, 7);
  },
  tick() {
    if (fakes.clockScript.length) return RealDate.parse(fakes.clockScript.shift());
    const t = fakes.clockNow;
    fakes.clockNow += fakes.clockStep;
    return t;
  },
};
globalThis.__piFakes = fakes;

class FakeDate extends RealDate {
  constructor(...args) {
    if (args.length === 0) super(fakes.tick());
    else super(...args);
  }
  static now() {
    return fakes.tick();
  }
}
globalThis.Date = FakeDate;

function resetFakes(scenario) {
  const clock = scenario.clock ?? {};
  fakes.rand = prng(scenario.seed ?? 1);
  fakes.idScript = [...(scenario.idScript ?? [])];
  fakes.sessionIdScript = [...(scenario.sessionIdScript ?? [])];
  fakes.clockNow = RealDate.parse(clock.start ?? "2025-01-01T00:00:00.000Z");
  fakes.clockStep = clock.stepMs ?? 1;
  fakes.clockScript = [...(clock.script ?? [])];
}

const { SessionManager, buildSessionContext } = await import(pathToFileURL(SESSION_MANAGER).href);
const { convertToLlm } = await import(pathToFileURL(MESSAGES).href);
{
  // Refuse to run unseeded: a stand-in that did not take would make every run differ.
  resetFakes({ idScript: ["abcdef01"], sessionIdScript: ["probe"] });
  const probe = SessionManager.inMemory("/");
  const id = probe.appendMessage({ role: "user", content: "", timestamp: 0 });
  if (id !== "abcdef01" || probe.getSessionId() !== "probe" || probe.getHeader().timestamp !== "2025-01-01T00:00:00.000Z") {
    throw new Error("seeded crypto/uuid/Date stand-ins are not in effect");
  }
}

// ---------------------------------------------------------------- probes

/** JSON round trip: drops `undefined` exactly as pi's file writer does. */
const plain = (value) => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

function contexts(sm) {
  const entries = sm.getEntries();
  const byLeaf = {};
  for (const entry of entries) byLeaf[entry.id] = plain(buildSessionContext(entries, entry.id, sm.byId));
  return {
    byLeaf,
    default: { leafId: sm.getLeafId() ?? null, context: plain(sm.buildSessionContext()) },
    null: plain(buildSessionContext(entries, null, sm.byId)),
  };
}

/** getTree flattened depth-first, children in pi's (timestamp-sorted) order. */
function tree(sm) {
  const out = [];
  const stack = sm
    .getTree()
    .map((node) => [node, 0])
    .reverse();
  while (stack.length) {
    const [node, depth] = stack.pop();
    const { id, parentId, type, timestamp } = node.entry;
    const row = { id, parentId: parentId ?? null, type, timestamp, depth, childCount: node.children.length };
    if (node.label !== undefined) row.label = node.label;
    if (node.labelTimestamp !== undefined) row.labelTimestamp = node.labelTimestamp;
    out.push(row);
    for (let i = node.children.length - 1; i >= 0; i--) stack.push([node.children[i], depth + 1]);
  }
  return out;
}

/** convertToLlm of every context: what the daemon's `format: "llm"` must give. */
function llmContexts(sm, ctx) {
  const llm = (c) => plain(convertToLlm(c.messages));
  return {
    byLeaf: Object.fromEntries(Object.entries(ctx.byLeaf).map(([id, c]) => [id, llm(c)])),
    default: llm(ctx.default.context),
  };
}

function inspect(path) {
  const sm = SessionManager.open(path);
  const ctx = contexts(sm);
  return {
    file: sm.getSessionFile(),
    header: plain(sm.getHeader()),
    leaf: sm.getLeafId() ?? null,
    name: sm.getSessionName() ?? null,
    entries: plain(sm.getEntries()),
    contexts: ctx,
    llm: llmContexts(sm, ctx),
    tree: tree(sm),
    raw: existsSync(path) ? readFileSync(path, "utf8") : null,
  };
}

// ---------------------------------------------------------------- ops

/** A SessionInfo as the daemon's session/list spells it. */
const listed = (i) => ({
  path: i.path,
  id: i.id,
  cwd: i.cwd,
  name: i.name ?? null,
  parentSession: i.parentSessionPath ?? null,
  created: i.created.toISOString(),
  modified: i.modified.toISOString(),
  messageCount: i.messageCount,
  firstMessage: i.firstMessage,
});

/** Scenario refs: {"$ref": i} = i-th entry id the scenario created, {"$file": k} = k-th file. */
function resolveRefs(value, state) {
  if (Array.isArray(value)) return value.map((v) => resolveRefs(v, state));
  if (value && typeof value === "object") {
    if ("$ref" in value) return state.created[value.$ref];
    if ("$file" in value) return state.files[value.$file];
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolveRefs(v, state)]));
  }
  return value;
}

function created(state, id) {
  state.created.push(id);
  return id;
}

const OPS = {
  create: (s, o) => {
    s.sm = SessionManager.create(o.cwd, o.sessionDir);
    s.files.push(s.sm.getSessionFile());
    return { file: s.sm.getSessionFile(), sessionId: s.sm.getSessionId(), header: plain(s.sm.getHeader()) };
  },
  open: (s, o) => {
    s.sm = SessionManager.open(o.path);
    return { file: s.sm.getSessionFile(), leaf: s.sm.getLeafId() ?? null };
  },
  appendMessage: (s, o) => created(s, s.sm.appendMessage(o.message)),
  appendThinkingLevelChange: (s, o) => created(s, s.sm.appendThinkingLevelChange(o.thinkingLevel)),
  appendModelChange: (s, o) => created(s, s.sm.appendModelChange(o.provider, o.modelId)),
  appendCompaction: (s, o) =>
    created(s, s.sm.appendCompaction(o.summary, o.firstKeptEntryId, o.tokensBefore, o.details, o.fromHook, o.usage)),
  appendUsage: (s, o) => created(s, s.sm.appendUsage(o.kind, o.provider, o.model, o.usage, o.note).id),
  appendContextEdit: (s, o) => created(s, s.sm.appendContextEdit(o.targetId, o.replacement)),
  appendCustomEntry: (s, o) => created(s, s.sm.appendCustomEntry(o.customType, o.data)),
  appendCustomMessageEntry: (s, o) =>
    created(s, s.sm.appendCustomMessageEntry(o.customType, o.content, o.display, o.details)),
  appendSessionInfo: (s, o) => created(s, s.sm.appendSessionInfo(o.name)),
  appendLabelChange: (s, o) => created(s, s.sm.appendLabelChange(o.targetId, o.label)),
  branch: (s, o) => {
    s.sm.branch(o.id);
    return s.sm.getLeafId();
  },
  resetLeaf: (s) => {
    s.sm.resetLeaf();
    return null;
  },
  branchWithSummary: (s, o) => created(s, s.sm.branchWithSummary(o.id, o.summary, o.details, o.fromHook, o.usage)),
  createBranchedSession: (s, o) => {
    const file = s.sm.createBranchedSession(o.leafId);
    s.files.push(file);
    return { file, sessionId: s.sm.getSessionId(), header: plain(s.sm.getHeader()), leaf: s.sm.getLeafId() ?? null };
  },
  forkFrom: (s, o) => {
    s.sm = SessionManager.forkFrom(o.path, o.cwd, o.sessionDir);
    s.files.push(s.sm.getSessionFile());
    return { file: s.sm.getSessionFile(), sessionId: s.sm.getSessionId(), header: plain(s.sm.getHeader()) };
  },
  // Moves the fake clock (also backwards): siblings whose times disagree with file order.
  setClock: (_s, o) => {
    fakes.clockNow = RealDate.parse(o.at);
    if (o.stepMs !== undefined) fakes.clockStep = o.stepMs;
    return null;
  },
  file: (s) => s.sm.getSessionFile() ?? null,
  leaf: (s) => s.sm.getLeafId() ?? null,
  name: (s) => s.sm.getSessionName() ?? null,
  contexts: (s) => contexts(s.sm),
  tree: (s) => tree(s.sm),
  entries: (s) => plain(s.sm.getEntries()),
  inspect: (_s, o) => inspect(o.path),
  // SessionManager.list: what the daemon's session/list must report for the same directory.
  list: async (_s, o) => (await SessionManager.list(o.cwd, o.sessionDir)).map(listed),
  // SessionManager.listAll: what session/list without a cwd must report for the same root.
  listAll: async (_s, o) => (await SessionManager.listAll(o.sessionDir)).map(listed),
  files: (s) => [...s.files],
};

async function runScenario(scenario) {
  resetFakes(scenario);
  const state = { sm: null, created: [], files: [] };
  const results = [];
  for (const raw of scenario.ops) {
    const op = resolveRefs(raw, state);
    const fn = OPS[op.op];
    try {
      if (!fn) throw new Error(`unknown op ${op.op}`);
      results.push({ op: op.op, value: plain(await fn(state, op)) });
    } catch (err) {
      results.push({ op: op.op, error: String(err?.message ?? err) });
    }
  }
  return { name: scenario.name ?? null, created: state.created, files: state.files, results };
}

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const scenarios = Array.isArray(input) ? input : [input];
const out = [];
for (const scenario of scenarios) out.push(await runScenario(scenario));
process.stdout.write(JSON.stringify(out));
