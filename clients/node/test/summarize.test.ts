// The daemon's sessiontree/summarize requests, answered by the library's summarize callback,
// and cancellation both ways: the caller cancelling a call that waits on the summary, and the
// daemon withdrawing its request (the handler's token fires).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { CancellationTokenSource, ErrorCodes, ResponseError, SessionTreeError, type CancellationToken, type SessionTreeClient } from "../src";
import type { SummarizeParams } from "../src";
import { assistant, sandbox, user, type Sandbox } from "./support";

// Keep few recent tokens, so that the conversation is summarised rather than kept (pi 1.6 prepares
// no compaction when all of it fits in the kept part).
const KEEP_LITTLE = { keepRecentTokens: 1 };

describe("summarize round trip and cancellation", () => {
  let box: Sandbox;
  let client: SessionTreeClient;
  const asked: SummarizeParams[] = [];
  // What the handler does next; each test sets it.
  let respond: (params: SummarizeParams, token: CancellationToken) => Promise<{ summary: string }>;

  before(async () => {
    box = await sandbox();
    client = await box.start({
      summarize: (params, token) => {
        asked.push(params);
        return respond(params, token);
      },
    });
  });
  after(() => box.cleanup());

  async function conversation(): Promise<{ sessionId: string; path: string; ids: string[] }> {
    const { sessionId, path } = await client.create({ cwd: "/work/summaries" });
    const appended = await client.append({
      sessionId,
      entries: [user("Read the README", 1), assistant("Done", 2), user("Now the tests", 3), assistant("Done too", 4)],
    });
    return { sessionId, path, ids: (appended.appended ?? []).map((entry) => entry.id) };
  }

  it("compact: the handler gets pi's prompt and its text becomes the compaction", async () => {
    const { sessionId } = await conversation();
    respond = async (params) => ({
      summary: `${params.kind}: ${params.compaction?.historyPrompt ? "prompted" : "bare"}`,
      // A split turn needs the summary of its beginning too.
      ...(params.compaction?.turnPrefixPrompt ? { turnPrefixSummary: "the turn so far" } : {}),
    });
    asked.length = 0;
    const result = await client.compact({ sessionId, settings: KEEP_LITTLE });
    assert.equal(asked.length, 1);
    assert.equal(asked[0]?.sessionId, sessionId);
    assert.match(asked[0]?.compaction?.historyPrompt?.prompt ?? "", /Read the README/);
    assert.match(String(result.entry.summary), /^compaction: prompted/);
    const context = await client.context({ sessionId });
    assert.deepEqual(context.messages[0], {
      role: "compactionSummary",
      summary: result.entry.summary,
      tokensBefore: result.entry.tokensBefore,
      timestamp: Date.parse(String(result.entry.timestamp)),
    });
  });

  it("navigate: a branch summary of the abandoned path", async () => {
    const { sessionId, ids } = await conversation();
    respond = async (params) => ({ summary: `left ${params.branchSummary?.entryIds.length} entries` });
    const result = await client.navigate({ sessionId, targetId: ids[0]! });
    assert.equal(asked.at(-1)?.kind, "branchSummary");
    assert.equal(result.entry?.type, "branch_summary");
    assert.match(String(result.entry?.summary), /left 3 entries/);
  });

  it("cancelling compact while the summary is being written: RequestCancelled, the handler told, nothing written", async () => {
    const { sessionId, path } = await conversation();
    const before = readFileSync(path);
    let withdrawn!: () => void;
    const handlerCancelled = new Promise<void>((resolve) => (withdrawn = resolve));
    let started!: () => void;
    const handlerStarted = new Promise<void>((resolve) => (started = resolve));
    respond = (_params, token) =>
      new Promise((_resolve, reject) => {
        started();
        token.onCancellationRequested(() => {
          withdrawn();
          reject(new Error("cancelled"));
        });
      });
    const source = new CancellationTokenSource();
    const call = client.compact({ sessionId, settings: KEEP_LITTLE }, source.token);
    await handlerStarted;
    source.cancel();
    const error = await call.then(
      () => assert.fail("compact should have been cancelled"),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof SessionTreeError && error.is("RequestCancelled"), String(error));
    await handlerCancelled;
    assert.deepEqual(readFileSync(path), before);
  });

  it("an AbortSignal cancels too", async () => {
    const { sessionId } = await conversation();
    const controller = new AbortController();
    respond = () =>
      new Promise(() => {
        controller.abort();
      });
    await assert.rejects(client.compact({ sessionId, settings: KEEP_LITTLE }, controller.signal), (error: unknown) => {
      return error instanceof SessionTreeError && error.is("RequestCancelled");
    });
    // The daemon goes on serving.
    assert.equal((await client.info({ sessionId })).entryCount, 4);
  });

  it("a handler that answers RequestCancelled ends the call as cancelled", async () => {
    const { sessionId, path } = await conversation();
    const before = readFileSync(path);
    respond = () => Promise.reject(new ResponseError(ErrorCodes.RequestCancelled, "the user pressed Escape"));
    const error = await client.compact({ sessionId, settings: KEEP_LITTLE }).catch((caught: unknown) => caught);
    assert.ok(error instanceof SessionTreeError && error.is("RequestCancelled"), String(error));
    assert.deepEqual(readFileSync(path), before);
  });
});
