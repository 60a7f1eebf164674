import type { TreeNode, TreeResult } from "sessiontree-client";

/**
 * What the view shows, without VS Code. The daemon's tree is flat (depth-first, with depths);
 * nesting every entry under its parent would bury a long conversation a hundred levels deep,
 * so, as in pi's own tree, a chain of single children is shown as one list and nesting happens
 * only where the conversation branches: an entry with several children holds one branch item
 * per child, and each branch holds the list of entries that follows.
 */
export interface EntryItem {
  kind: "entry";
  id: string;
  node: TreeNode;
  title: string;
  isLeaf: boolean;
  /** On the path from a root to the leaf: what the model sees. */
  onLeafPath: boolean;
  /** Non-empty at a branch point: one branch per child. */
  branches: BranchItem[];
}

export interface BranchItem {
  kind: "branch";
  /** The first entry of the branch. */
  headId: string;
  title: string;
  onLeafPath: boolean;
  entries: EntryItem[];
}

export type Item = EntryItem | BranchItem;

export interface Model {
  /** One list for a single root; one branch per root otherwise. */
  items: Item[];
  leafId: string | null;
  entries: Map<string, EntryItem>;
}

export function buildModel(tree: TreeResult): Model {
  const children = new Map<string | null, TreeNode[]>();
  const byId = new Map(tree.nodes.map((node) => [node.id, node]));
  const roots: TreeNode[] = [];
  for (const node of tree.nodes) {
    // The daemon decides what is a root (a null, missing or own parent): depth 0.
    if (node.depth === 0 || node.parentId === null) roots.push(node);
    else children.set(node.parentId, [...(children.get(node.parentId) ?? []), node]);
  }
  const onPath = leafPath(byId, tree.leafId);
  const entries = new Map<string, EntryItem>();
  // Branch points whose branches are still to be built (a work list instead of recursion).
  const pending: [EntryItem, TreeNode[]][] = [];

  const entry = (node: TreeNode): EntryItem => {
    const item: EntryItem = {
      kind: "entry",
      id: node.id,
      node,
      title: describe(node),
      isLeaf: node.id === tree.leafId,
      onLeafPath: onPath.has(node.id),
      branches: [],
    };
    entries.set(node.id, item);
    return item;
  };

  // A run: the head and its single-child successors; the last one may branch. Iterative, so a
  // session 100,000 entries deep does not exhaust the stack.
  const run = (head: TreeNode): EntryItem[] => {
    const list: EntryItem[] = [];
    for (let node: TreeNode | undefined = head; node !== undefined; ) {
      const item = entry(node);
      list.push(item);
      const next: TreeNode[] = children.get(node.id) ?? [];
      if (next.length === 1) {
        node = next[0];
      } else {
        pending.push([item, next]);
        node = undefined;
      }
    }
    return list;
  };
  const branch = (head: TreeNode): BranchItem => ({
    kind: "branch",
    headId: head.id,
    title: describe(head),
    onLeafPath: onPath.has(head.id),
    entries: run(head),
  });

  const items: Item[] = roots.length === 1 ? run(roots[0]!) : roots.map(branch);
  while (pending.length > 0) {
    const [item, next] = pending.pop()!;
    item.branches = next.map(branch);
  }
  return { items, leafId: tree.leafId, entries };
}

function leafPath(byId: Map<string, TreeNode>, leafId: string | null): Set<string> {
  const path = new Set<string>();
  for (let id = leafId; id !== null && !path.has(id); ) {
    const node = byId.get(id);
    if (node === undefined) break;
    path.add(id);
    id = node.parentId;
  }
  return path;
}

/** One line for an entry: who said what, or what kind of entry it is. */
export function describe(node: TreeNode): string {
  const text = node.preview ?? "";
  if (node.type === "message") return `${node.role ?? "message"}: ${text}`;
  const kind = node.type.replace(/_/g, " ");
  return text ? `${kind}: ${text}` : kind;
}

/** The badge text shown next to an entry: its label, and where the leaf is. */
export function badges(item: EntryItem): string {
  const parts: string[] = [];
  if (item.node.label) parts.push(`[${item.node.label}]`);
  if (item.isLeaf) parts.push("← leaf");
  return parts.join(" ");
}

/** Children of an item in the view. */
export function childrenOf(item: Item | undefined, model: Model): Item[] {
  if (item === undefined) return model.items;
  return item.kind === "entry" ? item.branches : item.entries;
}
