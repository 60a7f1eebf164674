// Evaluates the pinned pi's own compaction and branch-summary functions on session files.
//
// Usage: node pi_compaction.mjs CASES.json
// CASES.json: [{file, leaves: [id], settings: [{enabled, reserveTokens, keepRecentTokens}],
//               windows: [n], customInstructions, branches: [{from, to, contextWindow,
//               reserveTokens, customInstructions, replaceInstructions}]}]
// stdout: one JSON line per case, {file, leaves: [...], branches: [...]}.
//
// The functions are imported by file path (the package root does not export them all). The
// model is a stand-in registered with pi-ai: it records each request (pi sends the system prompt
// as a leading system message, normalizeContext) and answers with a text and a usage derived
// from the prompt (`answerFor`, `usageFor`), which the Python side derives the same way.
// What pi's SessionManager writes for a compaction or branch summary is taken from an in-memory
// twin of the session, so the file itself is never written.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { PI_AI_DIR, piCore } from "./pi_package.mjs";

const load = (relative) => import(pathToFileURL(piCore(relative)).href);
const piAi = await import(pathToFileURL(join(PI_AI_DIR, "dist", "index.js")).href);
const piCompat = await import(pathToFileURL(join(PI_AI_DIR, "dist", "compat.js")).href);

const compaction = await load("compaction/index.js");
const { SessionManager, buildSessionContext, buildSessionProjection } = await load("session-manager.js");

// ---------------------------------------------------------------- the stand-in model

const calls = [];

/** The stand-in's answer: the prompt's length in UTF-16 units and a digest of those units. */
function answerFor(prompt) {
  const digest = createHash("sha256").update(Buffer.from(prompt, "utf16le")).digest("hex");
  return `summary of ${prompt.length} units, sha256 ${digest}`;
}

/** The stand-in's usage: the prompt's length as input; combineUsage reads `cost`. */
function usageFor(prompt) {
  const cost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 };
  return { input: prompt.length, output: 11, cacheRead: 0, cacheWrite: 0, totalTokens: prompt.length + 11, cost };
}

function capture(model, context, options) {
  const [system, user, ...rest] = context.messages;
  const prompt = user.content[0].text;
  // The user message's timestamp is the time of the call: 0 here, as the daemon sends it. Its
  // text is the prompt, recorded once (as "<prompt>" here).
  const userText = { ...user, content: [{ ...user.content[0], text: "<prompt>" }, ...user.content.slice(1)] };
  const messages = [system, { ...userText, timestamp: 0 }, ...rest];
  calls.push({
    systemPrompt: system.role === "system" ? system.content : null,
    prompt,
    messages,
    reasoning: options?.reasoning ?? null,
    maxTokens: options?.maxTokens ?? null,
    hasSystemPromptField: "systemPrompt" in context,
  });
  const stream = piAi.createAssistantMessageEventStream();
  stream.end({
    role: "assistant",
    content: [{ type: "text", text: answerFor(prompt) }],
    api: "capture",
    provider: "capture",
    model: "capture",
    usage: usageFor(prompt),
    stopReason: "stop",
    timestamp: 0,
  });
  return stream;
}

piCompat.registerApiProvider({ api: "capture", stream: capture, streamSimple: capture }, "sessiontree-tests");

const model = (contextWindow) => ({
  id: "capture",
  api: "capture",
  provider: "capture",
  reasoning: true,
  contextWindow,
  maxTokens: 32000,
});

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

/** An entry as written, less what differs from run to run: its id, parent and time. The
 *  checkpoint's time is given as its distance from the entry's (pi: the same instant). */
function writtenOf(entry) {
  const { id, parentId, timestamp, ...rest } = plain(entry);
  if (rest.systemMessage) rest.systemMessage.timestamp -= Date.parse(timestamp);
  return { keys: Object.keys(plain(entry)), ...rest };
}

/** A twin of the session in memory: pi's own append functions write to it, never to the file. */
function twinOf(sm) {
  return SessionManager.inMemory(sm.getCwd(), undefined, plain(sm.fileEntries));
}

async function compactOf(prep, customInstructions, thinkingLevel) {
  calls.length = 0;
  const result = await compaction.compact(prep, model(200000), "key", undefined, customInstructions, undefined, thinkingLevel);
  return { result: plain(result), calls: plain(calls) };
}

function appendedCompaction(twin, leaf, result) {
  twin.branch(leaf);
  const id = twin.appendCompaction(result.summary, result.firstKeptEntryId, result.tokensBefore, result.details, false, result.usage);
  return writtenOf(twin.getEntry(id));
}

async function leafResult(sm, twin, leaf, testCase) {
  const path = sm.getBranch(leaf);
  const context = buildSessionContext(sm.getEntries(), leaf);
  const projection = buildSessionProjection(sm.getEntries(), leaf);
  const tokens = compaction.estimateContextTokens(context.messages);
  const projected = compaction.estimateProjectedContextTokens(projection, path);
  const out = {
    leaf,
    thinkingLevel: context.thinkingLevel,
    estimates: context.messages.map((m) => compaction.estimateTokens(m)),
    contextTokens: plain(tokens),
    projectedTokens: plain(projected),
    shouldCompact: [],
    cuts: [],
    preparations: [],
  };
  for (const settings of testCase.settings) {
    for (const window of testCase.windows) {
      out.shouldCompact.push(compaction.shouldCompact(projected.tokens, window, settings));
    }
    out.cuts.push(plain(compaction.findCutPoint(path, 0, path.length, settings.keepRecentTokens)));
    const prep = compaction.prepareCompaction(path, settings);
    const entry = { preparation: preparationOf(prep) };
    if (prep) {
      Object.assign(entry, await attempt(() => compactOf(prep, testCase.customInstructions, context.thinkingLevel)));
      if (entry.value) entry.written = appendedCompaction(twin, leaf, entry.value.result);
    }
    out.preparations.push(entry);
  }
  return out;
}

async function branchResult(sm, twin, branch) {
  const { entries, commonAncestorId } = compaction.collectEntriesForBranchSummary(sm, branch.from, branch.to);
  const budget = (branch.contextWindow || 128000) - (branch.reserveTokens ?? 16384);
  const prepared = compaction.prepareBranchEntries(entries, budget);
  const thinkingLevel = buildSessionContext(sm.getEntries(), branch.from).thinkingLevel;
  calls.length = 0;
  const generated = entries.length
    ? await attempt(() =>
        compaction.generateBranchSummary(entries, {
          model: model(branch.contextWindow),
          apiKey: "key",
          thinkingLevel,
          reserveTokens: branch.reserveTokens ?? undefined,
          customInstructions: branch.customInstructions,
          replaceInstructions: branch.replaceInstructions,
          signal: new AbortController().signal,
        }),
      )
    : { value: null };
  let written = null;
  const result = generated.value;
  if (result?.summary) {
    // navigateTree: the summary goes at the landing entry; fromId is the leaf left behind.
    const target = sm.getEntry(branch.to);
    const userSide = (target.type === "message" && target.message.role === "user") || target.type === "custom_message";
    twin.branch(branch.from);
    const details = { readFiles: result.readFiles || [], modifiedFiles: result.modifiedFiles || [] };
    const id = twin.branchWithSummary(userSide ? target.parentId : branch.to, result.summary, details, false, result.usage);
    written = writtenOf(twin.getEntry(id));
  }
  return {
    ...branch,
    thinkingLevel,
    entryIds: entries.map((e) => e.id),
    commonAncestorId,
    messages: plain(prepared.messages),
    fileOps: fileOps(prepared.fileOps),
    totalTokens: prepared.totalTokens,
    generated: plain(generated),
    written,
    calls: plain(calls),
  };
}

// One line per case: a single document for many sessions would pass V8's longest string.
const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
for (const testCase of cases) {
  const sm = SessionManager.open(testCase.file);
  const twin = twinOf(sm);
  const leaves = [];
  for (const leaf of testCase.leaves) leaves.push(await leafResult(sm, twin, leaf, testCase));
  const branches = [];
  for (const branch of testCase.branches) branches.push(await branchResult(sm, twin, branch));
  const line = `${JSON.stringify({ file: testCase.file, leaves, branches })}\n`;
  if (!process.stdout.write(line)) await new Promise((resolve) => process.stdout.once("drain", resolve));
}
