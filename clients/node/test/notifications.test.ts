// Notifications as events: session/didChange when a second daemon appends to the same file,
// window/logMessage for the warnings of a damaged file, $/progress for a listing.
import assert from "node:assert/strict";
import { appendFileSync, readFileSync } from "node:fs";
import { after, before, describe, it } from "node:test";
import { type Progress, type SessionTreeClient } from "../src";
import { assistant, sandbox, user, waitFor, type Sandbox } from "./support";

describe("notifications", () => {
  let box: Sandbox;
  let watcher: SessionTreeClient;
  let writer: SessionTreeClient;

  before(async () => {
    box = await sandbox();
    watcher = await box.start();
    writer = await box.start();
  });
  after(() => box.cleanup());

  it("session/didChange carries another daemon's entries to a subscriber", async () => {
    const created = await watcher.create({ cwd: "/work/shared" });
    const first = await watcher.append({ sessionId: created.sessionId, entry: user("Hello") });
    await watcher.subscribe({ sessionId: created.sessionId });

    const opened = await writer.open({ path: created.path });
    const arrived = waitFor(watcher.onDidChange, (change) => change.sessionId === created.sessionId);
    const appended = await writer.append({ sessionId: opened.sessionId, entry: assistant("Hi, from elsewhere") });
    const change = await arrived;

    assert.deepEqual(
      change.entries.map((entry) => [entry.id, entry.parentId]),
      [[appended.id, first.id]],
    );
    assert.equal(change.leafId, appended.id);
    assert.equal(change.cursor, appended.id);
    assert.equal(change.leafMoved, true, "the entry continues the watcher's leaf, so the leaf follows");
    const tree = await watcher.tree({ sessionId: created.sessionId });
    assert.equal(tree.leafId, appended.id);
  });

  it("window/logMessage reports each warning of an opened file", async () => {
    const created = await writer.create({ cwd: "/work/damaged" });
    await writer.append({ sessionId: created.sessionId, entry: user("Hello") });
    await writer.close({ sessionId: created.sessionId });
    appendFileSync(created.path, "this line is not JSON\n");
    const logged = waitFor(watcher.onLogMessage, (log) => log.message.startsWith(created.path));
    const opened = await watcher.open({ path: created.path });
    const log = await logged;
    assert.equal(log.type, 2);
    assert.deepEqual(
      opened.warnings.map((warning) => warning.kind),
      ["malformed"],
    );
    assert.ok(readFileSync(created.path, "utf8").includes("this line is not JSON"), "the file is not repaired");
  });

  it("$/progress reports a listing given a workDoneToken: begin, reports, end, then the answer", async () => {
    for (const cwd of ["/work/a", "/work/b", "/work/c"]) await writer.create({ cwd });
    const seen: Progress[] = [];
    const subscription = watcher.onProgress((progress) => seen.push(progress));
    const { sessions } = await watcher.list({ workDoneToken: "listing-1" });
    subscription.dispose();
    assert.ok(sessions.length >= 3);
    assert.ok(seen.every((progress) => progress.token === "listing-1"));
    const kinds = seen.map((progress) => progress.value.kind);
    assert.equal(kinds[0], "begin");
    assert.equal(kinds.at(-1), "end");
    assert.ok(kinds.includes("report"));
    const last = seen.filter((progress) => progress.value.kind === "report").at(-1)!.value;
    assert.equal(last.kind === "report" && last.percentage, 100);
  });
});
