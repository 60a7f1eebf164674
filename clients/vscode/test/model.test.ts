// The tree model, from daemon-shaped TreeResults: chains flat, nesting at branch points only,
// the leaf and its path marked, labels shown.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { TreeNode, TreeResult } from "sessiontree-client";
import { badges, buildModel, childrenOf, describe as describeNode, type BranchItem, type EntryItem } from "../src/model";

function node(id: string, parentId: string | null, depth: number, childCount: number, extra: Partial<TreeNode> = {}): TreeNode {
  return { id, parentId, type: "message", timestamp: "2025-01-01T00:00:00.000Z", depth, childCount, role: "user", preview: id, ...extra };
}

function tree(leafId: string | null, ...nodes: TreeNode[]): TreeResult {
  return { leafId, nodes, warnings: [] };
}

const ids = (items: { kind: string }[]) =>
  items.map((item) => (item.kind === "entry" ? (item as EntryItem).id : `branch:${(item as BranchItem).headId}`));

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
    const nodes = Array.from({ length: 100_000 }, (_, i) => node(`n${i}`, i === 0 ? null : `n${i - 1}`, i, i === 99_999 ? 0 : 1));
    const model = buildModel(tree("n99999", ...nodes));
    assert.equal(model.items.length, 100_000);
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
