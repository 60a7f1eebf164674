// Evaluates pi 0.73.1's own compaction and branch-summary functions on session files.
//
// Usage: node pi_compaction.mjs CASES.json
// CASES.json: [{file, leaves: [id], settings: [{enabled, reserveTokens, keepRecentTokens}],
//               windows: [n], customInstructions, branches: [{from, to, contextWindow,
//               reserveTokens, customInstructions, replaceInstructions}]}]
// stdout: one JSON document, per case {leaves: [...], branches: [...]}.
//
// The functions are imported by file path (the package root does not export them). The
// model is a stand-in registered with pi-ai: it records each request and answers with a
// text derived from the prompt (`answerFor`), which the Python side derives the same way.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const PI_DIR = join(HERE, "node_modules", "@mariozechner", "pi-coding-agent");
const load = (relative) => import(pathToFileURL(join(PI_DIR, "dist", "core", relative)).href);
const piAi = await import(pathToFileURL(join(HERE, "node_modules", "@mariozechner", "pi-ai", "dist", "index.js")).href);

const compaction = await load("compaction/index.js");
const { SessionManager, buildSessionContext } = await load("session-manager.js");

// ---------------------------------------------------------------- the stand-in model

const calls = [];

/** The stand-in's answer: the prompt's length in UTF-16 units and a digest of those units. */
function answerFor(prompt) {
  const digest = createHash("sha256").update(Buffer.from(prompt, "utf16le")).digest("hex");
  return `summary of ${prompt.length} units, sha256 ${digest}`;
}

function capture(model, context, options) {
  const prompt = context.messages[0].content[0].text;
  calls.push({ systemPrompt: context.systemPrompt, prompt, maxTokens: options?.maxTokens });
  const stream = piAi.createAssistantMessageEventStream();
  stream.end({
    role: "assistant",
    content: [{ type: "text", text: answerFor(prompt) }],
    api: "capture",
    provider: "capture",
    model: "capture",
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 },
    stopReason: "stop",
    timestamp: 0,
  });
  return stream;
}

piAi.registerApiProvider({ api: "capture", stream: capture, streamSimple: capture }, "sessiontree-tests");

const model = (contextWindow) => ({ id: "capture", api: "capture", provider: "capture", reasoning: false, contextWindow });

// ---------------------------------------------------------------- helpers

const plain = (value) => (value === undefined ? null : JSON.parse(JSON.stringify(value)));
const fileOps = (ops) => ({ read: [...ops.read], written: [...ops.written], edited: [...ops.edited] });

async function attempt(fn) {
  try {
    return { value: await fn() };
  } catch (error) {
    return { error: String(error?.message ?? error) };
  }
}

function preparationOf(prep) {
  if (!prep) return null;
  return plain({ ...prep, fileOps: fileOps(prep.fileOps) });
}

async function compactOf(prep, customInstructions) {
  calls.length = 0;
  const result = await compaction.compact(prep, model(200000), "key", undefined, customInstructions);
  return { result: plain(result), calls: plain(calls) };
}

async function leafResult(sm, leaf, testCase) {
  const path = sm.getBranch(leaf);
  const messages = buildSessionContext(sm.getEntries(), leaf).messages;
  const tokens = compaction.estimateContextTokens(messages);
  const out = {
    leaf,
    estimates: messages.map((m) => compaction.estimateTokens(m)),
    contextTokens: plain(tokens),
    shouldCompact: [],
    cuts: [],
    preparations: [],
  };
  for (const settings of testCase.settings) {
    for (const window of testCase.windows) {
      out.shouldCompact.push(compaction.shouldCompact(tokens.tokens, window, settings));
    }
    out.cuts.push(plain(compaction.findCutPoint(path, 0, path.length, settings.keepRecentTokens)));
    const prep = compaction.prepareCompaction(path, settings);
    const entry = { preparation: preparationOf(prep) };
    if (prep) Object.assign(entry, await attempt(() => compactOf(prep, testCase.customInstructions)));
    out.preparations.push(entry);
  }
  return out;
}

async function branchResult(sm, branch) {
  const { entries, commonAncestorId } = compaction.collectEntriesForBranchSummary(sm, branch.from, branch.to);
  const budget = (branch.contextWindow || 128000) - (branch.reserveTokens ?? 16384);
  const prepared = compaction.prepareBranchEntries(entries, budget);
  calls.length = 0;
  const generated = entries.length
    ? await attempt(() =>
        compaction.generateBranchSummary(entries, {
          model: model(branch.contextWindow),
          apiKey: "key",
          reserveTokens: branch.reserveTokens ?? undefined,
          customInstructions: branch.customInstructions,
          replaceInstructions: branch.replaceInstructions,
          signal: new AbortController().signal,
        }),
      )
    : { value: null };
  return {
    ...branch,
    entryIds: entries.map((e) => e.id),
    commonAncestorId,
    messages: plain(prepared.messages),
    fileOps: fileOps(prepared.fileOps),
    totalTokens: prepared.totalTokens,
    generated: plain(generated),
    calls: plain(calls),
  };
}

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const results = [];
for (const testCase of cases) {
  const sm = SessionManager.open(testCase.file);
  const leaves = [];
  for (const leaf of testCase.leaves) leaves.push(await leafResult(sm, leaf, testCase));
  const branches = [];
  for (const branch of testCase.branches) branches.push(await branchResult(sm, branch));
  results.push({ file: testCase.file, leaves, branches });
}
process.stdout.write(JSON.stringify(results));
