// The error codes of protocol.md's table, provoked through the library: each rejects with a
// SessionTreeError named after its code, carrying the daemon's data, and changes nothing.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { ErrorCodes, SessionTreeError, type ErrorName, type SessionTreeClient } from "../src";
import { assistant, sandbox, user, type Sandbox } from "./support";

async function rejects(promise: Promise<unknown>, name: ErrorName): Promise<SessionTreeError> {
  const error = await promise.then(
    (result) => assert.fail(`expected ${name}, got ${JSON.stringify(result)}`),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof SessionTreeError, `not a SessionTreeError: ${String(error)}`);
  assert.equal(error.name, name, error.message);
  assert.equal(error.code, ErrorCodes[name]);
  assert.ok(error.is(name));
  return error;
}

describe("errors", () => {
  let box: Sandbox;
  let client: SessionTreeClient;
  let sessionId: string;
  let path: string;
  let first: string;

  before(async () => {
    box = await sandbox();
    client = await box.start();
    ({ sessionId, path } = await client.create({ cwd: "/work/errors", id: "errors-session" }));
    first = (await client.append({ sessionId, entry: user("Hello") })).id;
  });
  after(() => box.cleanup());

  it("InvalidParams names the field", async () => {
    const error = await rejects(client.append({ sessionId, entry: { type: "message" } }), "InvalidParams");
    assert.match(error.message, /entry\.message/);
    await rejects(client.raw("session/tree", {}), "InvalidParams");
  });

  it("MethodNotFound for a method the daemon does not serve", async () => {
    await rejects(client.raw("session/nonsense", {}), "MethodNotFound");
  });

  it("SessionNotFound", async () => {
    const error = await rejects(client.tree({ sessionId: "no-such-session" }), "SessionNotFound");
    assert.deepEqual(error.data, { error: "SessionNotFound", sessionId: "no-such-session" });
  });

  it("EntryNotFound names the field as sent", async () => {
    const error = await rejects(client.append({ sessionId, entry: user("x"), parentId: "deadbeef" }), "EntryNotFound");
    assert.deepEqual(error.data, { error: "EntryNotFound", entryId: "deadbeef", field: "parentId" });
    await rejects(client.context({ sessionId, leafId: "deadbeef" }), "EntryNotFound");
  });

  it("LeafConflict, and nothing is written", async () => {
    const before = readFileSync(path);
    const error = await rejects(client.append({ sessionId, entry: user("x"), expectedLeafId: null }), "LeafConflict");
    assert.deepEqual(error.data, { error: "LeafConflict", currentLeafId: first, expectedLeafId: null });
    assert.deepEqual(readFileSync(path), before);
  });

  it("PathOutsideRoot, NotASessionFile, FileNotFound", async () => {
    await rejects(client.open({ path: "../outside.jsonl" }), "PathOutsideRoot");
    mkdirSync(join(box.root, "notes"), { recursive: true });
    writeFileSync(join(box.root, "notes", "todo.jsonl"), '{"todo":"not a session"}\n');
    await rejects(client.open({ path: "notes/todo.jsonl" }), "NotASessionFile");
    const missing = await rejects(client.open({ path: "notes/missing.jsonl" }), "FileNotFound");
    assert.match((missing.data as { path: string }).path, /notes\/missing\.jsonl$/);
  });

  it("SessionExists for an id in use", async () => {
    await rejects(client.create({ cwd: "/work/errors", id: "errors-session" }), "SessionExists");
  });

  it("FileReplaced when another program rewrote the file shorter", async () => {
    const { sessionId: other, path: otherPath } = await client.create({ cwd: "/work/errors" });
    await client.append({ sessionId: other, entry: user("a long first message that will be cut") });
    const header = readFileSync(otherPath, "utf8").split("\n")[0];
    writeFileSync(otherPath, `${header}\n`);
    await rejects(client.append({ sessionId: other, entry: user("y") }), "FileReplaced");
  });

  it("SummarizerUnavailable without a summarize handler, NothingToCompact on an empty path", async () => {
    await rejects(client.compact({ sessionId }), "SummarizerUnavailable");
    const summarizing = await box.start({ summarize: () => ({ summary: "never asked" }) });
    const { sessionId: empty } = await summarizing.create({ cwd: "/work/errors" });
    await rejects(summarizing.compact({ sessionId: empty }), "NothingToCompact");
  });

  it("SummaryFailed when the summarize handler throws; nothing is appended", async () => {
    const failing = await box.start({
      summarize: () => {
        throw new Error("the model is down");
      },
    });
    const opened = await failing.open({ path });
    // Something to summarize before the kept part (pi 1.6 prepares nothing when all of it is kept).
    await failing.append({ sessionId: opened.sessionId, entries: [assistant("Hi"), user("And then?")] });
    const before = readFileSync(path);
    const settings = { keepRecentTokens: 1 };
    const error = await rejects(failing.compact({ sessionId: opened.sessionId, settings }), "SummaryFailed");
    assert.match(error.message, /the model is down/);
    assert.deepEqual(readFileSync(path), before);
  });

  it("InvalidRequest after shutdown", async () => {
    const stopping = await box.start();
    await stopping.raw("shutdown");
    await rejects(stopping.list({}), "InvalidRequest");
  });
});
