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

  it("nests only at a branch point, one branch per child, the leaf's branch on the path", () => {
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
    assert.deepEqual(ids(model.items), ["a"]);
    const a = model.items[0] as EntryItem;
    assert.deepEqual(ids(a.branches), ["branch:b", "branch:d"]);
    assert.deepEqual(ids(a.branches[0]!.entries), ["b", "c"]);
    assert.deepEqual(ids(a.branches[1]!.entries), ["d", "e"]);
    assert.deepEqual(
      a.branches.map((branch) => branch.onLeafPath),
      [false, true],
    );
    assert.deepEqual(ids(childrenOf(a, model)), ["branch:b", "branch:d"]);
    assert.deepEqual(ids(childrenOf(a.branches[1], model)), ["d", "e"]);
    assert.equal(model.entries.get("c")?.onLeafPath, false);
    assert.equal(model.entries.get("e")?.isLeaf, true);
  });

  it("gives several roots one branch each", () => {
    const model = buildModel(tree("b", node("a", null, 0, 0), node("b", null, 0, 0)));
    assert.deepEqual(ids(model.items), ["branch:a", "branch:b"]);
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

  it("pages the branches of an entry with many children", () => {
    const children = Array.from({ length: 450 }, (_, i) => node(`c${i}`, "root", 1, 0));
    const model = buildModel(tree("c7", node("root", null, 0, 450), ...children));
    const root = model.items[0] as EntryItem;
    const shown = childrenOf(root, model);
    assert.deepEqual(ids(shown.slice(0, 2)), ["range:0-200", "range:200-250"]);
    assert.equal((shown[0] as RangeItem).title, "branches 1–200");
    assert.equal((shown[0] as RangeItem).holdsLeaf, true);
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
