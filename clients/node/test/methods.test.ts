// Every method of protocol.md through the library, against the real daemon. The daemon records
// the conversation (--record), and the last test reads that record: every method the schema
// lists must have been answered with a result, so a method added to the protocol and not
// exercised here fails.
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { METHOD_NAMES, type SessionTreeClient } from "../src";
import { assistant, sandbox, user, type Sandbox } from "./support";

// Keep few recent tokens, so that this short session is summarised rather than kept (pi 1.6
// prepares no compaction when all of it fits in the kept part).
const KEEP_LITTLE = { keepRecentTokens: 1 };

describe("every method", () => {
  let box: Sandbox;
  let client: SessionTreeClient;
  let record: string;
  let sessionId: string;
  let path: string;
  const ids: string[] = [];
  const cwd = "/work/project";

  before(async () => {
    box = await sandbox();
    record = join(box.dir, "record.jsonl");
    client = await box.start({
      args: ["--record", record],
      // The summariser stands in for a model: it echoes what it was asked for.
      summarize: (params) => ({ summary: `summary of a ${params.kind}`, turnPrefixSummary: "the turn so far" }),
    });
  });
  after(() => box.cleanup());

  it("initialize advertises exactly the methods of the schema", () => {
    const result = client.initializeResult as { capabilities: { experimental: { sessiontree: { methods: string[] } } } };
    assert.deepEqual(result.capabilities.experimental.sessiontree.methods, [...METHOD_NAMES].sort());
  });

  it("list, create, info", async () => {
    assert.deepEqual(await client.list({}), { sessions: [] });
    const created = await client.create({ cwd });
    ({ sessionId, path } = created);
    assert.equal(created.header.version, 3);
    assert.equal(created.header.cwd, cwd);
    assert.ok(existsSync(path));
    const info = await client.info({ sessionId });
    assert.equal(info.leafId, null);
    assert.equal(info.entryCount, 0);
  });

  it("append one entry and a batch", async () => {
    const first = await client.append({ sessionId, entry: user("Hello", 1) });
    assert.equal(first.parentId, null);
    assert.equal(first.leafId, first.id);
    const batch = await client.append({ sessionId, entries: [assistant("Hi there", 2), user("Fix the bug", 3)] });
    assert.equal(batch.appended?.length, 2);
    assert.equal(batch.appended?.[0]?.parentId, first.id);
    ids.push(first.id, ...(batch.appended ?? []).map((entry) => entry.id));
    const lines = readFileSync(path, "utf8").trimEnd().split("\n");
    assert.equal(lines.length, 4, "the header and three entries are on disk once acknowledged");
  });

  it("context, in both formats", async () => {
    const context = await client.context({ sessionId });
    assert.deepEqual(
      context.messages.map((message) => (message as { role: string }).role),
      ["user", "assistant", "user"],
    );
    assert.deepEqual(context.model, { provider: "anthropic", modelId: "claude-sonnet-4-5" });
    assert.equal(context.leafId, ids[2]);
    const empty = await client.context({ sessionId, leafId: null, format: "llm" });
    assert.deepEqual(empty.messages, []);
  });

  it("tree and entries", async () => {
    const tree = await client.tree({ sessionId });
    assert.deepEqual(
      tree.nodes.map((node) => [node.id, node.depth]),
      ids.map((id, depth) => [id, depth]),
    );
    assert.equal(tree.nodes[0]?.preview, "Hello");
    const since = await client.entries({ sessionId, since: null, limit: 2 });
    assert.deepEqual(
      since.entries.map((entry) => entry.id),
      ids.slice(0, 2),
    );
    assert.equal(since.cursor, ids[1]);
    const path = await client.entries({ sessionId, pathTo: ids[1] });
    assert.deepEqual(
      path.entries.map((entry) => entry.id),
      ids.slice(0, 2),
    );
    const byId = await client.entries({ sessionId, ids: [ids[2]!] });
    assert.equal((byId.entries[0]?.message as { content: string }).content, "Fix the bug");
  });

  it("branch, then append on the branch", async () => {
    const moved = await client.branch({ sessionId, entryId: ids[0]! });
    assert.deepEqual(moved, { leafId: ids[0] });
    const other = await client.append({ sessionId, entry: user("Another way", 4) });
    assert.equal(other.parentId, ids[0]);
    const summarised = await client.branch({ sessionId, entryId: ids[2]!, summary: "Tried another way." });
    assert.equal(summarised.leafId, summarised.summaryEntryId);
    const tree = await client.tree({ sessionId });
    assert.equal(tree.nodes.find((node) => node.id === ids[0])?.childCount, 2);
  });

  it("label and setName", async () => {
    await client.label({ sessionId, targetId: ids[0]!, label: "start" });
    await client.setName({ sessionId, name: "  Greeting  " });
    const tree = await client.tree({ sessionId });
    assert.equal(tree.nodes.find((node) => node.id === ids[0])?.label, "start");
    assert.equal((await client.info({ sessionId })).name, "Greeting");
  });

  it("editContext", async () => {
    const edited = await client.editContext({ sessionId, targetId: ids[1]!, replacement: { content: "Hi (edited)" } });
    const stored = (await client.entries({ sessionId, ids: [edited.id] })).entries[0] as { replacement: unknown };
    assert.deepEqual(stored.replacement, { content: [{ type: "text", text: "Hi (edited)" }] });
    await assert.rejects(client.editContext({ sessionId, targetId: "0badbeef", replacement: null }), { code: -32011 });
  });

  it("fork into a new file", async () => {
    const fork = await client.fork({ sessionId, entryId: ids[1]! });
    assert.notEqual(fork.sessionId, sessionId);
    const context = await client.context({ sessionId: fork.sessionId });
    assert.equal(context.messages.length, 2);
    const listed = await client.list({ cwd });
    assert.deepEqual(new Set(listed.sessions.map((session) => session.id)), new Set([sessionId, fork.sessionId]));
    await client.close({ sessionId: fork.sessionId });
  });

  it("subscribe and unsubscribe", async () => {
    const info = await client.info({ sessionId });
    assert.deepEqual(await client.subscribe({ sessionId }), { leafId: info.leafId, cursor: info.cursor });
    assert.equal(await client.unsubscribe({ sessionId }), null);
  });

  it("close and open again", async () => {
    const before = await client.info({ sessionId });
    assert.equal(await client.close({ sessionId }), null);
    const opened = await client.open({ path });
    assert.equal(opened.sessionId, sessionId);
    assert.equal(opened.entryCount, before.entryCount);
    assert.deepEqual(opened.warnings, []);
  });

  it("configure, prepare and commit a compaction", async () => {
    const configured = await client.configure({ sessionId, contextWindow: 200_000 });
    assert.equal(configured.contextWindow, 200_000);
    const prepared = await client.prepareCompaction({ sessionId, settings: KEEP_LITTLE });
    assert.ok(prepared.historyPrompt?.prompt.includes("<conversation>"));
    const committed = await client.commitCompaction({
      sessionId,
      leafId: prepared.leafId,
      summary: "We said hello.",
      settings: KEEP_LITTLE,
      ...(prepared.isSplitTurn ? { turnPrefixSummary: "A turn." } : {}),
    });
    assert.equal(committed.entry.type, "compaction");
    assert.equal(committed.leafId, committed.entry.id);
    const context = await client.context({ sessionId });
    assert.equal((context.messages[0] as { role: string }).role, "compactionSummary");
  });

  it("prepare and commit a branch summary", async () => {
    const prepared = await client.prepareBranchSummary({ sessionId, targetId: ids[0]! });
    assert.equal(prepared.targetId, ids[0]);
    const committed = await client.commitBranchSummary({ sessionId, targetId: ids[0]!, summary: "Went back." });
    assert.equal(committed.entry?.type, "branch_summary");
    assert.equal((await client.info({ sessionId })).leafId, committed.leafId);
  });

  it("compact and navigate, the library answering the daemon's summarize requests", async () => {
    await client.append({ sessionId, entries: [user("One more", 5), assistant("Sure", 6)] });
    const compacted = await client.compact({ sessionId, settings: KEEP_LITTLE });
    assert.match(String(compacted.entry.summary), /^summary of a compaction/);
    const navigated = await client.navigate({ sessionId, targetId: ids[1]! });
    assert.match(String(navigated.entry?.summary), /summary of a branchSummary/);
  });

  it("treeView, export, stats and search", async () => {
    const view = await client.treeView({ sessionId, limit: 50 });
    assert.equal(view.rows.length, view.total);
    assert.equal(view.rows.filter((row) => row.leaf).length, 1);
    const exported = await client.export({ sessionId, format: "markdown" });
    assert.match(exported.content, /\*\*User\*\*/);
    const page = await client.export({ sessionId, format: "html", scope: "tree" });
    assert.ok(page.content.startsWith("<!DOCTYPE html>"));
    const stats = await client.stats({ sessionId });
    assert.equal(stats.sessions, 1);
    assert.equal((stats.tree as { entries: number }).entries, (await client.info({ sessionId })).entryCount);
    assert.equal((await client.stats({ cwd })).sessions, 2);
    const found = await client.search({ query: "Hello", cwd });
    assert.ok(found.hits.length > 0);
    assert.ok(found.hits.every((hit) => hit.snippet.toLowerCase().includes("hello")));
  });

  it("import, and a session archived, trashed and restored", async () => {
    const imported = await client.import({ paths: [join(box.dir, "not-an-agent-session.jsonl")] });
    assert.deepEqual(imported.imported, []);
    assert.equal(imported.failed.length, 1);
    const spare = await client.create({ cwd });
    await client.append({ sessionId: spare.sessionId, entry: user("To be retired", 7) });
    const archived = await client.archive({ path: spare.path });
    assert.equal(archived.closedSessionId, spare.sessionId);
    assert.ok(!existsSync(spare.path) && existsSync(archived.movedTo));
    assert.equal((await client.restore({ path: archived.movedTo })).path, spare.path);
    const trashed = await client.trash({ path: spare.path });
    assert.ok(!existsSync(spare.path) && existsSync(trashed.movedTo));
    assert.equal((await client.restore({ path: spare.path })).restoredFrom, trashed.movedTo);
    assert.ok(existsSync(spare.path));
  });

  it("answered every method of the schema with a result", async () => {
    await client.stop();
    const requests = new Map<unknown, string>();
    const answered = new Set<string>();
    for (const line of readFileSync(record, "utf8").trimEnd().split("\n")) {
      const { dir, msg } = JSON.parse(line) as { dir: string; msg: { id?: unknown; method?: string; result?: unknown } };
      if (dir === "in" && msg.method !== undefined && msg.id !== undefined) requests.set(msg.id, msg.method);
      if (dir === "out" && msg.method === undefined && "result" in msg) answered.add(requests.get(msg.id) ?? "");
    }
    assert.deepEqual(
      METHOD_NAMES.filter((method) => !answered.has(method)),
      [],
    );
  });
});
