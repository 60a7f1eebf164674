import type { TreeNode, TreeResult } from "sessiontree-client";

/**
 * What the view shows, without VS Code. The daemon's tree is flat (depth-first, with depths).
 * Nesting every entry under its parent would bury a long conversation a hundred levels deep, and
 * nesting every branch under its branch point would do the same to a session that branched a
 * thousand times. So the view is a list that follows one line of the conversation: from a root,
 * through each entry's child toward the leaf (or, off the leaf's path, its newest child), to the
 * end. The path to the leaf is therefore the top-level list, whatever the depth. An entry with
 * several children holds one branch item for each child the line does not follow, and each
 * branch is in turn a list that follows its own line.
 */
export interface EntryItem {
  kind: "entry";
  id: string;
  node: TreeNode;
  title: string;
  isLeaf: boolean;
  /** On the path from a root to the leaf: what the model sees. */
  onLeafPath: boolean;
  /** Non-empty at a branch point: one branch per child that the list does not go on with. */
  branches: BranchItem[];
  /** The branch whose list holds it (undefined: the top-level list), and where in that list. */
  owner: BranchItem | undefined;
  index: number;
}

export interface BranchItem {
  kind: "branch";
  /** The first entry of the branch. */
  headId: string;
  title: string;
  onLeafPath: boolean;
  entries: EntryItem[];
  /** The branch point that holds it (undefined: another root, in the top-level list), and where. */
  owner: EntryItem | undefined;
  index: number;
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
  /** The item or range it is shown in (undefined: the top level). */
  parent: ViewItem | undefined;
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
      owner: undefined,
      index: 0,
    };
    entries.set(node.id, item);
    return item;
  };

  /** Which of several children (or roots) a line goes on with: toward the leaf, else the newest. */
  const follow = (nodes: TreeNode[]): number => {
    const toLeaf = nodes.findIndex((node) => onPath.has(node.id));
    return toLeaf >= 0 ? toLeaf : nodes.length - 1;
  };
  const others = (nodes: TreeNode[], followed: number) => nodes.filter((_, index) => index !== followed);

  // A line: the head, then the followed child of each entry, to the end. Iterative, so a session
  // 100,000 entries deep does not exhaust the stack.
  const line = (head: TreeNode): EntryItem[] => {
    const list: EntryItem[] = [];
    for (let node: TreeNode | undefined = head; node !== undefined; ) {
      const item = entry(node);
      item.index = list.length;
      list.push(item);
      const next: TreeNode[] = children.get(node.id) ?? [];
      const followed = follow(next);
      if (next.length > 1) pending.push([item, others(next, followed)]);
      node = next[followed];
    }
    return list;
  };
  const branch = (head: TreeNode, index: number, owner?: EntryItem): BranchItem => {
    const item: BranchItem = {
      kind: "branch",
      headId: head.id,
      title: describe(head),
      onLeafPath: onPath.has(head.id),
      entries: line(head),
      owner,
      index,
    };
    for (const entry of item.entries) entry.owner = item;
    return item;
  };

  // Several roots (a damaged file, or entries appended as new roots): the others are branches.
  const main = follow(roots);
  const items: Item[] = roots.length === 0 ? [] : line(roots[main]!);
  for (const root of others(roots, main)) items.push(branch(root, items.length));
  while (pending.length > 0) {
    const [item, heads] = pending.pop()!;
    item.branches = heads.map((head, index) => branch(head, index, item));
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
  if (item?.kind === "range") return paginate(item.list, item.start, item.end, item, page);
  const list = listOf(item, model);
  if (list.length <= page) return list.slice();
  const tail = list.length - page;
  return [...paginate(list, 0, tail, item, page), ...list.slice(tail)];
}

/**
 * The item or range an item is shown in (undefined: the top level), as `childrenOf` shows it:
 * what VS Code needs to reveal an item, such as the leaf, deep in a long list.
 */
export function parentOf(item: ViewItem, model: Model, page = PAGE): ViewItem | undefined {
  if (item.kind === "range") return item.parent;
  const owner = item.owner;
  const list = listOf(owner, model);
  if (list.length <= page || item.index >= list.length - page) return owner;
  let parent: ViewItem | undefined = owner;
  let [start, end] = [0, list.length - page];
  while (end - start > page) {
    const range: RangeItem = (paginate(list, start, end, parent, page) as RangeItem[]).find((r) => r.start <= item.index && item.index < r.end)!;
    [parent, start, end] = [range, range.start, range.end];
  }
  return parent;
}

function listOf(item: EntryItem | BranchItem | undefined, model: Model): readonly Item[] {
  return item === undefined ? model.items : item.kind === "entry" ? item.branches : item.entries;
}

function keyOf(item: ViewItem | undefined): string {
  if (item === undefined) return "root";
  return item.kind === "range" ? item.key : item.kind === "entry" ? item.id : `branch:${item.headId}`;
}

function paginate(list: readonly Item[], start: number, end: number, parent: ViewItem | undefined, page: number): ViewItem[] {
  if (end - start <= page) return list.slice(start, end);
  const key = keyOf(parent);
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
      parent,
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
