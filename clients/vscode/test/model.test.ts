// The tree model, from daemon-shaped TreeResults: chains flat, nesting at branch points only,
// the leaf and its path marked, labels shown.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { TreeNode, TreeResult } from "sessiontree-client";
import {
  badges,
  buildModel,
  childrenOf,
  describe as describeNode,
  PAGE,
  parentOf,
  type EntryItem,
  type RangeItem,
  type ViewItem,
} from "../src/model";

function node(id: string, parentId: string | null, depth: number, childCount: number, extra: Partial<TreeNode> = {}): TreeNode {
  return { id, parentId, type: "message", timestamp: "2025-01-01T00:00:00.000Z", depth, childCount, role: "user", preview: id, ...extra };
}

function tree(leafId: string | null, ...nodes: TreeNode[]): TreeResult {
  return { leafId, nodes, warnings: [] };
}

const ids = (items: readonly ViewItem[]) =>
  items.map((item) =>
    item.kind === "entry" ? item.id : item.kind === "branch" ? `branch:${item.headId}` : `range:${item.start}-${item.end}`,
  );

/** Every item the view can show under `item`, with the parent it was shown in (or the first `limit`). */
function walk(model: ReturnType<typeof buildModel>, limit = 5000): [ViewItem, ViewItem | undefined][] {
  const seen: [ViewItem, ViewItem | undefined][] = [];
  const queue: (ViewItem | undefined)[] = [undefined];
  while (queue.length > 0 && seen.length < limit) {
    const parent = queue.shift();
    for (const child of childrenOf(parent, model)) {
      seen.push([child, parent]);
      queue.push(child);
    }
  }
  return seen;
}

const key = (item: ViewItem | undefined) =>
  item === undefined ? "top" : item.kind === "range" ? `range:${item.key}` : item.kind === "entry" ? item.id : `branch:${item.headId}`;

/** A linear session n entries long: n0 ← n1 ← … ← n(n-1). */
const chain = (n: number) => Array.from({ length: n }, (_, i) => node(`n${i}`, i === 0 ? null : `n${i - 1}`, i, i === n - 1 ? 0 : 1));

describe("tree model", () => {
  it("shows a linear conversation as one flat list", () => {
    const model = buildModel(tree("c", node("a", null, 0, 1), node("b", "a", 1, 1), node("c", "b", 2, 0)));
    assert.deepEqual(ids(model.items), ["a", "b", "c"]);
    assert.deepEqual(
      model.items.map((item) => (item as EntryItem).onLeafPath),
      [true, true, true],
    );
    assert.equal((model.items[2] as EntryItem).isLeaf, true);
  });

  it("follows the leaf's line at a branch point; the other children are branches of the entry", () => {
    // a ─ b ─ c        a has two children: b (then c) and d (then e, the leaf)
    //   └ d ─ e
    const model = buildModel(
      tree(
        "e",
        node("a", null, 0, 2),
        node("b", "a", 1, 1),
        node("c", "b", 2, 0),
        node("d", "a", 1, 1),
        node("e", "d", 2, 0),
      ),
    );
    assert.deepEqual(ids(model.items), ["a", "d", "e"]);
    const a = model.items[0] as EntryItem;
    assert.deepEqual(ids(a.branches), ["branch:b"]);
    assert.deepEqual(ids(a.branches[0]!.entries), ["b", "c"]);
    assert.equal(a.branches[0]!.onLeafPath, false);
    assert.deepEqual(ids(childrenOf(a, model)), ["branch:b"]);
    assert.deepEqual(ids(childrenOf(a.branches[0], model)), ["b", "c"]);
    assert.equal(model.entries.get("c")?.onLeafPath, false);
    assert.equal(model.entries.get("e")?.isLeaf, true);
    // With the leaf on the other line, the lists swap.
    const other = buildModel(tree("c", ...[...model.entries.values()].map((item) => item.node)));
    assert.deepEqual(ids(other.items), ["a", "b", "c"]);
    assert.deepEqual(ids((other.items[0] as EntryItem).branches), ["branch:d"]);
  });

  it("follows the newest child off the leaf's path, and keeps a session that branched often flat", () => {
    // A line of 1,000 branch points, each with an abandoned side entry (older) and the way on.
    const nodes = [node("m0", null, 0, 2)];
    for (let i = 1; i < 1000; i++) nodes.push(node(`s${i}`, `m${i - 1}`, i, 0), node(`m${i}`, `m${i - 1}`, i, i === 999 ? 0 : 2));
    const model = buildModel(tree("m999", ...nodes));
    assert.equal(model.items.length, 1000, "the path to the leaf is one list, not 1,000 levels deep");
    assert.deepEqual(ids((model.items[0] as EntryItem).branches), ["branch:s1"]);
    // No leaf in the session: each list goes on with the newest child.
    const unset = buildModel(tree(null, node("a", null, 0, 2), node("b", "a", 1, 0), node("c", "a", 1, 0)));
    assert.deepEqual(ids(unset.items), ["a", "c"]);
  });

  it("lists the other roots as branches after the leaf's line", () => {
    const model = buildModel(tree("a", node("a", null, 0, 0), node("b", null, 0, 0)));
    assert.deepEqual(ids(model.items), ["a", "branch:b"]);
    const second = buildModel(tree("b", node("a", null, 0, 0), node("b", null, 0, 0)));
    assert.deepEqual(ids(second.items), ["b", "branch:a"]);
  });

  it("marks no leaf when the leaf is unset", () => {
    const model = buildModel(tree(null, node("a", null, 0, 0)));
    assert.equal((model.items[0] as EntryItem).isLeaf, false);
    assert.equal((model.items[0] as EntryItem).onLeafPath, false);
  });

  it("handles a very deep session without recursion", () => {
    const model = buildModel(tree("n99999", ...chain(100_000)));
    assert.equal(model.items.length, 100_000);
  });

  it("shows a long list a page at a time: the last page as it is, the rest in ranges", () => {
    const model = buildModel(tree("n99999", ...chain(100_000)));
    const top = childrenOf(undefined, model);
    // 99,800 earlier entries in ranges of PAGE² = 40,000, then the last page.
    assert.deepEqual(ids(top.slice(0, 3)), ["range:0-40000", "range:40000-80000", "range:80000-99800"]);
    assert.deepEqual(ids(top.slice(3)), Array.from({ length: PAGE }, (_, i) => `n${99_800 + i}`));
    const first = top[0] as RangeItem;
    assert.equal(first.title, "entries 1–40,000");
    assert.equal(first.holdsLeaf, false);
    const pages = childrenOf(first, model);
    assert.equal(pages.length, PAGE);
    assert.deepEqual(ids(pages.slice(0, 2)), ["range:0-200", "range:200-400"]);
    assert.deepEqual(ids(childrenOf(pages[1], model)), Array.from({ length: PAGE }, (_, i) => `n${200 + i}`));
    // Every list the view can open is at most two pages long.
    const short = buildModel(tree("n2", ...chain(PAGE)));
    assert.equal(childrenOf(undefined, short).length, PAGE);
  });

  it("expands the ranges that hold the leaf", () => {
    const model = buildModel(tree("n1234", ...chain(100_000)));
    const top = childrenOf(undefined, model) as RangeItem[];
    assert.deepEqual(
      top.slice(0, 3).map((range) => range.holdsLeaf),
      [true, false, false],
    );
    const page = (childrenOf(top[0], model) as RangeItem[]).filter((range) => range.holdsLeaf);
    assert.deepEqual(ids(page), ["range:1200-1400"]);
    assert.equal((childrenOf(page[0], model)[34] as EntryItem).isLeaf, true);
  });

  it("knows the parent of every item as the view shows it, to reveal the leaf", () => {
    const long = buildModel(tree("n1234", ...chain(100_000)));
    const leaf = long.entries.get("n1234")!;
    const chainOfParents: string[] = [];
    for (let item = parentOf(leaf, long); item !== undefined; item = parentOf(item, long)) chainOfParents.push(key(item));
    assert.deepEqual(chainOfParents, ["range:root:0-40000:1200-1400", "range:root:0-40000"]);
    assert.equal(parentOf(long.entries.get("n99999")!, long), undefined);
    for (const [child, parent] of walk(long)) assert.equal(key(parentOf(child, long)), key(parent));
    // Branches, other roots and paged branches.
    const nodes = [node("r", null, 0, 2), node("a", "r", 1, 1), node("b", "a", 2, 300), node("x", "r", 1, 0), node("z", null, 0, 0)];
    for (let i = 0; i < 300; i++) nodes.push(node(`c${i}`, "b", 3, 0));
    const branched = buildModel(tree("c5", ...nodes));
    const pairs = walk(branched);
    assert.ok(pairs.length > 300);
    for (const [child, parent] of pairs) assert.equal(key(parentOf(child, branched)), key(parent), key(child));
  });

  it("pages the branches of an entry with many children", () => {
    const children = Array.from({ length: 451 }, (_, i) => node(`c${i}`, "root", 1, 0));
    const model = buildModel(tree("c450", node("root", null, 0, 451), ...children));
    assert.deepEqual(ids(model.items), ["root", "c450"]);
    const root = model.items[0] as EntryItem;
    const shown = childrenOf(root, model);
    assert.deepEqual(ids(shown.slice(0, 2)), ["range:0-200", "range:200-250"]);
    assert.equal((shown[0] as RangeItem).title, "branches 1–200");
    assert.equal((shown[0] as RangeItem).holdsLeaf, false);
    assert.equal(shown.length, 2 + PAGE);
  });

  it("describes entries and shows labels and the leaf", () => {
    assert.equal(describeNode(node("a", null, 0, 0, { preview: "Hello" })), "user: Hello");
    assert.equal(
      describeNode(node("s", null, 0, 0, { type: "branch_summary", preview: "Tried another way.", role: undefined })),
      "branch summary: Tried another way.",
    );
    assert.equal(describeNode(node("m", null, 0, 0, { type: "model_change", preview: undefined, role: undefined })), "model change");
    const model = buildModel(tree("a", node("a", null, 0, 0, { label: "start" })));
    assert.equal(badges(model.items[0] as EntryItem), "[start] ← leaf");
  });
});
