// The view's model against this checkout's daemon: session files written here, read through
// session/treeView a page at a time, and the whole view checked against session/tree.
import assert from "node:assert/strict";
import { copyFileSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SessionTreeClient, type TreeViewParams } from "sessiontree-client";
import {
  badges,
  describe as describeRow,
  keyOf,
  PAGE,
  SessionTree,
  StaleTree,
  type EntryItem,
  type FetchRows,
  type RangeItem,
  type RunItem,
  type ViewItem,
} from "../src/model";
import { checkView, daemon, idOf, randomSpecs, REPO, writeSession, type Spec } from "./support";

describe("tree model", () => {
  let dir: string;
  let client: SessionTreeClient;
  let files = 0;
  let opened: string | undefined;

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "sessiontree-model-")));
    mkdirSync(join(dir, "tree"));
    client = await SessionTreeClient.start({ command: daemon(), sessionsDir: dir });
  });
  after(async () => {
    await client.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Opens a session written from specs (or copied), with the leaf moved if asked; every request recorded. */
  async function open(source: Spec[] | string, leaf?: string | null) {
    const path = join(dir, "tree", `${++files}.jsonl`);
    if (typeof source === "string") copyFileSync(source, path);
    else writeSession(path, source);
    if (opened !== undefined) await client.close({ sessionId: opened });
    const { sessionId } = await client.open({ path });
    opened = sessionId;
    if (leaf !== undefined) await client.branch({ sessionId, entryId: leaf });
    const { leafId } = await client.info({ sessionId });
    const requests: Omit<TreeViewParams, "sessionId">[] = [];
    const fetch: FetchRows = (params) => {
      requests.push(params);
      assert.ok((params.limit ?? 200) <= 2000, "a page of at most 2,000 rows");
      return client.treeView({ sessionId, ...params });
    };
    const tree = await SessionTree.load(fetch, leafId);
    return { sessionId, tree, requests, truth: () => client.tree({ sessionId }) };
  }

  const shape = async (tree: SessionTree, item?: ViewItem, depth = 0): Promise<string[]> => {
    const lines: string[] = [];
    for (const child of await tree.childrenOf(item)) {
      const mark = child.kind === "entry" ? `${child.isLeaf ? " ←" : ""}${child.onLeafPath ? "" : " (off)"}` : "";
      lines.push(`${"  ".repeat(depth)}${child.kind === "entry" ? child.id : child.kind} ${child.title}${mark}`);
      if (child.kind !== "entry" || child.holdsBranches) lines.push(...(await shape(tree, child, depth + 1)));
    }
    return lines;
  };

  it("shows the path to the leaf as the top-level list; a branch point holds the other branch; runs fold", async () => {
    const { tree, requests } = await open(join(REPO, "clients", "examples", "demo-session.jsonl"));
    assert.equal(requests.length, 1, "the first rows in one request");
    assert.deepEqual(requests[0], { reveal: "9d0e1f2a", limit: PAGE });
    assert.equal(tree.leafItem?.id, "9d0e1f2a");
    assert.deepEqual(await shape(tree), [
      "a1b2c3d4 model change: anthropic/claude-sonnet-4-5",
      "run … 4 entries",
      "  b2c3d4e5 thinking level change: thinking: medium",
      "  c3d4e5f6 user: The tests in parser.py fail on empty input. Can you look?",
      "  d4e5f6a7 assistant: Let me read the parser first. [read]",
      "  e5f6a7b8 toolResult: read: def parse(text): head, *rest = text.split('\\n') return head, rest",
      "f6a7b8c9 assistant: `parse` unpacks the first line without checking for empty input. I can either r…",
      "  branch label: f6a7b8c9: diagnosis",
      "    0a1b2c3d label: f6a7b8c9: diagnosis (off)",
      "    1b2c3d4e user: Raise a ValueError with a clear message. (off)",
      "    2c3d4e5f assistant: Done: `parse('')` now raises `ValueError('empty input')`, and a test covers it. (off)",
      "3d4e5f6a user: On second thought, return an empty result instead.",
      "4e5f6a7b branch summary: Tried raising ValueError on empty input; the user preferred an empty result.",
      "5f6a7b8c assistant: `parse('')` now returns `('', [])`; the ValueError branch is gone.",
      "6a7b8c9d compaction: ## Goal Make parser.py handle empty input. ## Progress - parse('') returns ('',…",
      "run … 2 entries",
      "  7b8c9d0e user: Now check the callers of parse.",
      "  8c9d0e1f session info: name: Empty input in the parser",
      "9d0e1f2a assistant: Two callers; both already handle an empty result. ←",
    ]);
    assert.deepEqual(
      requests.slice(1).map((request) => request.run),
      ["b2c3d4e5", "7b8c9d0e"],
      "a run's entries are fetched when it is opened, with `run`",
    );
    assert.equal(badges(tree.entry("f6a7b8c9")!), "[diagnosis]");
    assert.equal(badges(tree.leafItem!), "← leaf");
  });

  it("after switching to the other branch, finds the newer branch after the leaf", async () => {
    const { tree } = await open(join(REPO, "clients", "examples", "demo-session.jsonl"), "2c3d4e5f");
    const lines = await shape(tree);
    assert.deepEqual(lines.slice(6), [
      "f6a7b8c9 assistant: `parse` unpacks the first line without checking for empty input. I can either r…",
      "  branch user: On second thought, return an empty result instead.",
      "    3d4e5f6a user: On second thought, return an empty result instead. (off)",
      "    4e5f6a7b branch summary: Tried raising ValueError on empty input; the user preferred an empty result. (off)",
      "    5f6a7b8c assistant: `parse('')` now returns `('', [])`; the ValueError branch is gone. (off)",
      "    6a7b8c9d compaction: ## Goal Make parser.py handle empty input. ## Progress - parse('') returns ('',… (off)",
      "    run … 2 entries",
      "      7b8c9d0e user: Now check the callers of parse. (off)",
      "      8c9d0e1f session info: name: Empty input in the parser (off)",
      "    9d0e1f2a assistant: Two callers; both already handle an empty result. (off)",
      "0a1b2c3d label: f6a7b8c9: diagnosis",
      "1b2c3d4e user: Raise a ValueError with a clear message.",
      "2c3d4e5f assistant: Done: `parse('')` now raises `ValueError('empty input')`, and a test covers it. ←",
    ]);
  });

  it("keeps a session that branched a thousand times one list, and shows its leaf from one or two pages", async () => {
    // A line of 1,000 branch points, each with an abandoned side entry (older) and the way on: the
    // daemon indents the leaf 1,000 times; the view shows it at the top level.
    const fixed: Spec[] = [{ parent: null }];
    let main = 0;
    for (let i = 1; i < 1000; i++) {
      fixed.push({ parent: main }); // the side entry
      fixed.push({ parent: main }); // the way on
      main = fixed.length - 1;
    }
    const { tree, requests, truth } = await open(fixed);
    assert.ok(requests.length <= 2, `${requests.length} requests before the first rows`);
    assert.equal(tree.leafItem?.id, idOf(main));
    assert.equal(tree.leafItem?.parent, undefined, "the leaf is in the top-level list");
    assert.equal(tree.leafItem?.row.indent, 999);
    const ranges = tree.top.filter((item): item is RangeItem => item.kind === "range");
    assert.ok(ranges.length > 0 && tree.top.at(-1) === tree.leafItem);
    assert.equal(ranges[0]!.title, "rows 1–200");
    // The last page before the leaf is on screen as rows; each of its branch points holds its side entry.
    const point = tree.top.find((item): item is EntryItem => item.kind === "entry" && item.holdsBranches)!;
    const held = await tree.childrenOf(point);
    assert.deepEqual(
      held.map((item) => item.kind),
      ["branch"],
    );
    const before = requests.length;
    await tree.childrenOf(point);
    assert.equal(requests.length, before, "rows are fetched once");
    const top = await checkView(tree, await truth());
    assert.equal(top.length, 1000);
  });

  for (const [seed, leaf] of [
    [1, "last"],
    [2, "last"],
    [3, "earlier"],
    [4, "earlier"],
    [5, "none"],
  ] as const) {
    it(`shows every entry once, where the tree puts it (random tree ${seed}, leaf: ${leaf})`, async () => {
      const specs = randomSpecs(1500, seed);
      const at = leaf === "last" ? undefined : leaf === "none" ? null : idOf(Math.floor(specs.length / 3));
      const { tree, truth, requests } = await open(specs, at);
      assert.ok(requests.length <= 2);
      await checkView(tree, await truth());
    });
  }

  it("pages a long run and a branch point with many branches", async () => {
    // A root with 451 children, the last going on into a line of 1,000 entries.
    const specs: Spec[] = [{ parent: null }];
    for (let i = 0; i < 451; i++) specs.push({ parent: 0 });
    for (let i = 0; i < 1000; i++) specs.push({ parent: specs.length - 1 });
    const { tree, requests, truth } = await open(specs);
    // 450 rows of abandoned branches lie between the root and the path's next entry: the root is
    // in the range of rows before the page shown.
    const [range, head, run, leaf] = tree.top as [RangeItem, EntryItem, RunItem, EntryItem];
    assert.deepEqual(
      [range.title, head.id, run.kind, leaf.id],
      ["rows 1–200", idOf(451), "run", idOf(specs.length - 1)],
    );
    assert.equal(run.title, "… 999 entries");
    const root = (await tree.childrenOf(range))[0] as EntryItem;
    assert.equal(root.id, idOf(0));
    const branches = await tree.childrenOf(root);
    assert.deepEqual(
      branches.slice(0, 3).map((item) => item.title),
      ["branches 1–200", "branches 201–250", "user: message 251"],
    );
    assert.equal(branches.length, 2 + PAGE);
    const before = requests.length;
    const entries = await tree.childrenOf(run);
    assert.deepEqual(
      entries.slice(0, 4).map((item) => item.title),
      ["entries 1–200", "entries 201–400", "entries 401–600", "entries 601–799"],
    );
    assert.equal(entries.length, 4 + PAGE);
    assert.deepEqual(requests.slice(before), [{ run: run.id, offset: 799, limit: PAGE }], "one page of the run");
    await checkView(tree, await truth());
  });

  it("shows the first root's line without a leaf, and other roots as branches", async () => {
    const specs: Spec[] = [{ parent: null }, { parent: 0 }, { parent: null }, { parent: 2 }, { parent: 1, labels: 0 }];
    const { tree, truth } = await open(specs, null);
    assert.equal(tree.leafItem, undefined);
    assert.deepEqual(await shape(tree), [
      "10000000 user: message 0 (off)",
      "10000001 user: message 1 (off)",
      "10000004 label: 10000000: L0 (off)",
      "branch user: message 2",
      "  10000002 user: message 2 (off)",
      "  10000003 user: message 3 (off)",
    ]);
    await checkView(tree, await truth());
  });

  it("shows nothing for a session without entries", async () => {
    const { tree } = await open([]);
    assert.equal(tree.total, 0);
    assert.deepEqual(await tree.childrenOf(undefined), []);
  });

  it("refuses a page from another state of the session, and says so once", async () => {
    const specs: Spec[] = [{ parent: null }];
    for (let i = 0; i < 1000; i++) specs.push({ parent: i });
    const { sessionId } = await open(specs);
    let moved = false;
    const fetch: FetchRows = async (params) => {
      const page = await client.treeView({ sessionId, ...params });
      return moved ? { ...page, leafId: idOf(5) } : page; // as if another writer moved the leaf
    };
    let stale = 0;
    const tree = await SessionTree.load(fetch, idOf(1000), () => stale++);
    const run = tree.top.find((item): item is RunItem => item.kind === "run")!;
    moved = true;
    await assert.rejects(tree.childrenOf(run), StaleTree);
    await assert.rejects(tree.childrenOf(run), StaleTree);
    assert.equal(stale, 1);
    assert.ok(tree.stale);
  });

  it("describes entries", () => {
    const row = { id: "a", type: "message", indent: 0, timestamp: "", preview: "Hello", role: "user" };
    assert.equal(describeRow(row), "user: Hello");
    assert.equal(describeRow({ ...row, type: "branch_summary", preview: "Tried another way.", role: undefined }), "branch summary: Tried another way.");
    assert.equal(describeRow({ ...row, type: "model_change", preview: null, role: undefined }), "model change");
    assert.equal(keyOf({ kind: "run", id: "a" } as RunItem), "run:a");
  });

  it("fetches each page once, however often the view asks", async () => {
    const { tree, requests } = await open(randomSpecs(1200, 11));
    const everything = async (item?: ViewItem): Promise<number> => {
      let count = 0;
      for (const child of await tree.childrenOf(item)) count += 1 + (await everything(child));
      return count;
    };
    const shown = await everything();
    const walked = requests.length;
    assert.equal(await everything(), shown);
    assert.equal(requests.length, walked);
  });
});
