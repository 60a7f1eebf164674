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

/**
 * A stretch of a long list (a conversation of thousands of entries, an entry with hundreds of
 * branches), shown collapsed so that the view asks for, and VS Code draws, only what is opened:
 * `childrenOf` never returns more than two pages of items, however long the session.
 */
export interface RangeItem {
  kind: "range";
  /** Unique in the view and stable across refreshes: the list's owner and the bounds. */
  key: string;
  list: readonly Item[];
  start: number;
  end: number;
  title: string;
  /** Holds the item where the path to the leaf leaves this list: shown expanded. */
  holdsLeaf: boolean;
}

export type ViewItem = Item | RangeItem;

/** How many items a list shows before the rest goes into ranges. */
export const PAGE = 200;

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
    else {
      const siblings = children.get(node.parentId);
      if (siblings === undefined) children.set(node.parentId, [node]);
      else siblings.push(node);
    }
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

/**
 * Children of an item in the view, a page at a time: a list longer than `page` shows its last
 * page as it is (where a conversation goes on) and the rest as ranges, each of at most `page`
 * items or `page` smaller ranges, as VS Code's debugger shows long arrays.
 */
export function childrenOf(item: ViewItem | undefined, model: Model, page = PAGE): ViewItem[] {
  if (item?.kind === "range") return paginate(item.list, item.start, item.end, item.key, page);
  const list = item === undefined ? model.items : item.kind === "entry" ? item.branches : item.entries;
  const key = item === undefined ? "root" : item.kind === "entry" ? item.id : `branch:${item.headId}`;
  if (list.length <= page) return list;
  const tail = list.length - page;
  return [...paginate(list, 0, tail, key, page), ...list.slice(tail)];
}

function paginate(list: readonly Item[], start: number, end: number, key: string, page: number): ViewItem[] {
  if (end - start <= page) return list.slice(start, end);
  let size = page;
  while (Math.ceil((end - start) / size) > page) size *= page;
  const focus = focusIndex(list);
  const ranges: RangeItem[] = [];
  for (let from = start; from < end; from += size) {
    const to = Math.min(end, from + size);
    const what = list[from]!.kind === "branch" ? "branches" : "entries";
    ranges.push({
      kind: "range",
      key: `${key}:${from}-${to}`,
      list,
      start: from,
      end: to,
      title: `${what} ${count(from + 1)}–${count(to)}`,
      holdsLeaf: focus >= from && focus < to,
    });
  }
  return ranges;
}

const focusIndexes = new WeakMap<readonly Item[], number>();

/** The last item of a list on the path to the leaf (-1: none): the leaf, or the way to it. */
function focusIndex(list: readonly Item[]): number {
  let index = focusIndexes.get(list);
  if (index === undefined) {
    index = list.length - 1;
    while (index >= 0 && !list[index]!.onLeafPath) index--;
    focusIndexes.set(list, index);
  }
  return index;
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}
