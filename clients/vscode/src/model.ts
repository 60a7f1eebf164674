import type { TreeRow, TreeViewParams, TreeViewResult } from "sessiontree-client";

/**
 * What the view shows, without VS Code, from the daemon's folded tree (session/treeView): rows in
 * pi's tree order, each with its `indent` (one step per branch point above it), long stretches of
 * single-child entries folded into run rows. Rows are fetched a page at a time, when the view opens
 * something; nothing waits on the whole tree.
 *
 * The shape. Nesting every row under the branch point it steps into would put the leaf as many
 * levels deep as there are branch points on its path (1,868 in the generated 100,000-entry session),
 * far off the right edge of any sidebar. So the path from the root to the leaf stays one top-level
 * list, whatever its depth: at a branch point on the path, the list goes on with the branch toward
 * the leaf, and the branch point holds its other branches, collapsed. Past the leaf the list goes on
 * while the leaf's line has one way to go. Off the path, a branch is the list of its own rows (the
 * rows of its `indent`, from its first entry to where it ends or branches) and each branch point in
 * it holds its branches: off-path rows nest under the branch point whose `indent` they step into,
 * one branch item per branch. Other roots are branches at the top level. A run row is collapsed;
 * its entries are listed with `run` pages.
 *
 * Where things are in the row order (pi's getTree: depth-first, siblings oldest first): a branch
 * point's first branch starts on the next row; the next branch starts after the whole of the one
 * before. So the branches of a branch point on the path that are older than the path's branch lie
 * between it and the path's next row, and those that are newer lie after the leaf's subtree. A
 * branch's own rows are consecutive (an entry with one child is followed by that child).
 */

/** session/treeView for the open session: the caller adds `sessionId`. */
export type FetchRows = (params: Omit<TreeViewParams, "sessionId">) => Promise<TreeViewResult>;

/** Rows per page the view asks for, and items a list shows before the rest goes into ranges. */
export const PAGE = 200;
/** Rows per request when the model looks further ahead (the branches of a branch point). */
const SCAN = 1000;
/** The daemon's largest page. */
const MAX_LIMIT = 2000;

export interface EntryItem {
  kind: "entry";
  id: string;
  row: TreeRow;
  /** The row's position in the folded tree; undefined for an entry listed inside a run. */
  pos: number | undefined;
  title: string;
  isLeaf: boolean;
  /** On the path from a root to the leaf: what the model sees. */
  onLeafPath: boolean;
  /** A branch point (a row with more than one child): it holds its branches off the list. */
  holdsBranches: boolean;
  parent: ViewItem | undefined;
}

/** Entries folded into one row: `count` single-child entries with nothing to show, `id` to `lastId`. */
export interface RunItem {
  kind: "run";
  id: string;
  lastId: string;
  count: number;
  row: TreeRow;
  pos: number;
  title: string;
  onLeafPath: boolean;
  parent: ViewItem | undefined;
}

/** A branch off the list: its first entry's row, its rows listed when opened. */
export interface BranchItem {
  kind: "branch";
  headId: string;
  head: TreeRow;
  headPos: number;
  title: string;
  /** The branch point that holds it (undefined: another root, at the top level). */
  parent: ViewItem | undefined;
}

/** A stretch of a long list, collapsed, so that the view asks for and draws only what is opened. */
export interface RangeItem {
  kind: "range";
  key: string;
  list: List;
  start: number;
  end: number;
  title: string;
  parent: ViewItem | undefined;
}

/** A line of text in place of rows (a stretch of the top level with none of its rows in it). */
export interface NoteItem {
  kind: "note";
  key: string;
  title: string;
  parent: ViewItem | undefined;
}

export type ViewItem = EntryItem | RunItem | BranchItem | RangeItem | NoteItem;

/** A list of items the view pages through: `length` positions, items made for a stretch of them. */
interface List {
  key: string;
  length: number;
  /** What a range of it is called: "rows", "entries", "branches". */
  unit: string;
  items(start: number, end: number, parent: ViewItem | undefined): Promise<ViewItem[]>;
}

/** A page came back from another state of the session (an entry was added, the leaf moved). */
export class StaleTree extends Error {
  constructor() {
    super("the session changed while the view was reading it");
  }
}

/** The row is an entry with one child, or a run: the next row is its child, in the same list. */
const continues = (row: TreeRow) => row.run !== undefined || row.children === 1;

/** A unique key for each item, stable across snapshots (the TreeItem id). */
export function keyOf(item: ViewItem): string {
  switch (item.kind) {
    case "entry":
      return item.id;
    case "run":
      return `run:${item.id}`;
    case "branch":
      return `branch:${item.headId}`;
    default:
      return item.key;
  }
}

/**
 * The session's folded tree as the view shows it, for one state of the session (its rows change
 * when an entry is added or the leaf moves: then the view loads a new one). Rows are fetched as the
 * view opens items and kept; items are made once, so VS Code gets the same objects back.
 */
export class SessionTree {
  /** Requests made, for tests and measurements. */
  requests = 0;
  /** Set when a page came back from another state of the session. */
  stale = false;
  /** The top-level items (the list around the leaf and ranges for the rest), ready at load. */
  top: ViewItem[] = [];
  /** The leaf's item (top level), to reveal. */
  leafItem: EntryItem | undefined;

  private readonly rows: (TreeRow | undefined)[];
  private readonly pending: { from: number; to: number; done: Promise<void> }[] = [];
  private readonly items = new Map<string, ViewItem>();
  private readonly lists = new Map<string, Promise<List>>();
  private leafPos: number | undefined;
  /** The stretch of rows after the leaf on its line (inclusive), or [0, end] without a leaf. */
  private line: [number, number] | undefined;

  private constructor(
    private readonly fetchRows: FetchRows,
    readonly leafId: string | null,
    readonly total: number,
    private readonly onStale: () => void,
  ) {
    this.rows = new Array<TreeRow | undefined>(total);
  }

  /**
   * The tree with its top level ready: one request for the page that shows the leaf (`reveal`),
   * and one more for the page before it when the leaf is near the top of its page.
   */
  static async load(fetchRows: FetchRows, leafId: string | null, onStale: () => void = () => undefined): Promise<SessionTree> {
    let requests = 1;
    let first = await fetchRows(leafId === null ? { offset: 0, limit: PAGE } : { reveal: leafId, limit: PAGE });
    if (first.leafId !== leafId && first.leafId !== null) {
      // The leaf moved between the caller's look and this one: show where it is now.
      requests++;
      first = await fetchRows({ reveal: first.leafId, limit: PAGE });
    }
    const tree = new SessionTree(fetchRows, first.leafId, first.total, onStale);
    tree.requests = requests;
    tree.store(first);
    await tree.build(first);
    return tree;
  }

  private store(page: TreeViewResult): void {
    page.rows.forEach((row, index) => (this.rows[page.offset + index] = row));
  }

  private async build(first: TreeViewResult): Promise<void> {
    const found = first.rows.findIndex((row) => row.leaf);
    this.leafPos = found >= 0 ? first.offset + found : undefined;
    let start = first.offset;
    const end = first.offset + first.rows.length;
    if (this.leafPos !== undefined && start > 0 && this.leafPos - start < PAGE / 2) {
      start = Math.max(0, start - PAGE); // some of the conversation before the leaf, on screen
    }
    await this.ensure(start, end);
    // The leaf's line past the leaf (without a leaf: the first root's line).
    const from = this.leafPos === undefined ? 0 : continues(this.row(this.leafPos)) ? this.leafPos + 1 : undefined;
    if (from !== undefined && from < this.total) this.line = [from, await this.lineEnd(from)];
    const top = await this.topList();
    const window = await top.items(start, end, undefined);
    this.top = [...rangesOf(top, 0, start, undefined, this.items), ...window, ...rangesOf(top, end, this.total, undefined, this.items)];
    const leaf = this.leafId === null ? undefined : this.items.get(this.leafId);
    this.leafItem = leaf?.kind === "entry" ? leaf : undefined;
  }

  /** The children of an item as the view shows them (the top level for undefined). */
  async childrenOf(item: ViewItem | undefined): Promise<ViewItem[]> {
    if (item === undefined) return this.top;
    switch (item.kind) {
      case "range":
        return item.end - item.start > PAGE
          ? rangesOf(item.list, item.start, item.end, item, this.items)
          : item.list.items(item.start, item.end, item);
      case "entry":
        return item.holdsBranches ? this.paged(await this.branchesOf(item), item) : [];
      case "run":
        return this.paged(await this.list(`entries:${item.id}`, async () => this.runList(item)), item);
      case "branch":
        return this.paged(await this.branchList(item), item);
      default:
        return [];
    }
  }

  /** The item or range an item is shown in (undefined: the top level). */
  parentOf(item: ViewItem): ViewItem | undefined {
    return item.parent;
  }

  /** An entry the view has shown, by id. */
  entry(id: string): EntryItem | undefined {
    const item = this.items.get(id);
    return item?.kind === "entry" ? item : undefined;
  }

  /** Every row of the folded tree that is an entry of its own (not a run), in tree order: for a pick. */
  async entryRows(): Promise<TreeRow[]> {
    await this.ensure(0, this.total);
    return this.rows.filter((row): row is TreeRow => row !== undefined && row.run === undefined);
  }

  /** A list longer than a page shows ranges for all but its last page, where the conversation goes on. */
  private async paged(list: List, parent: ViewItem): Promise<ViewItem[]> {
    if (list.length <= PAGE) return list.items(0, list.length, parent);
    const tail = list.length - PAGE;
    return [...rangesOf(list, 0, tail, parent, this.items), ...(await list.items(tail, list.length, parent))];
  }

  // ------------------------------------------------------------------ rows

  private row(pos: number): TreeRow {
    const row = this.rows[pos];
    if (row === undefined) throw new Error(`row ${pos} is not loaded`);
    return row;
  }

  /** The row starts a branch (or a root): the row before it is not its parent. */
  private startsBranch(pos: number): boolean {
    return pos === 0 || !continues(this.row(pos - 1));
  }

  /** Fetches the rows in [from, to) that are not here yet, at most MAX_LIMIT a request. */
  private async ensure(from: number, to: number): Promise<void> {
    from = Math.max(0, from);
    to = Math.min(this.total, to);
    for (;;) {
      const waiting = this.pending.filter((p) => p.from < to && p.to > from).map((p) => p.done);
      if (waiting.length === 0) break;
      await Promise.all(waiting);
    }
    const fetches: Promise<void>[] = [];
    for (let pos = from; pos < to; ) {
      if (this.rows[pos] !== undefined) {
        pos++;
        continue;
      }
      let end = pos;
      while (end < to && this.rows[end] === undefined && end - pos < MAX_LIMIT) end++;
      fetches.push(this.fetchSpan(pos, end));
      pos = end;
    }
    await Promise.all(fetches);
  }

  private fetchSpan(from: number, to: number): Promise<void> {
    if (this.stale) return Promise.reject(new StaleTree());
    this.requests++;
    const entry = {
      from,
      to,
      done: this.fetchRows({ offset: from, limit: to - from }).then((page) => {
        if (page.total !== this.total || page.leafId !== this.leafId || page.offset !== from) throw this.staled();
        this.store(page);
      }),
    };
    this.pending.push(entry);
    void entry.done.finally(() => this.pending.splice(this.pending.indexOf(entry), 1)).catch(() => undefined);
    return entry.done;
  }

  private staled(): StaleTree {
    if (!this.stale) {
      this.stale = true;
      this.onStale();
    }
    return new StaleTree();
  }

  /** The last row of the line that goes on from `from` (each row the child of the one before). */
  private async lineEnd(from: number): Promise<number> {
    for (let pos = from; ; pos++) {
      if (this.rows[pos] === undefined) await this.ensure(pos, pos + SCAN);
      if (pos === this.total - 1 || !continues(this.row(pos))) return pos;
    }
  }

  // ------------------------------------------------------------------ items

  private intern<T extends ViewItem>(item: T): T {
    const key = keyOf(item);
    const known = this.items.get(key);
    if (known !== undefined) return known as T;
    this.items.set(key, item);
    return item;
  }

  /** The item for the row at `pos` (an entry of its own, or a run), shown in `parent`. */
  private rowItem(pos: number, parent: ViewItem | undefined): EntryItem | RunItem {
    const row = this.row(pos);
    if (row.run !== undefined) {
      return this.intern<RunItem>({
        kind: "run",
        id: row.id,
        lastId: row.run.lastId,
        count: row.run.count,
        row,
        pos,
        title: `… ${count(row.run.count, "entry", "entries")}`,
        onLeafPath: row.onLeafPath === true,
        parent,
      });
    }
    return this.entryItem(row, pos, parent);
  }

  private entryItem(row: TreeRow, pos: number | undefined, parent: ViewItem | undefined): EntryItem {
    return this.intern<EntryItem>({
      kind: "entry",
      id: row.id,
      row,
      pos,
      title: describe(row),
      isLeaf: row.leaf === true,
      onLeafPath: row.onLeafPath === true,
      holdsBranches: pos !== undefined && (row.children ?? 0) > 1,
      parent,
    });
  }

  private branchItem(pos: number, parent: ViewItem | undefined): BranchItem {
    const head = this.row(pos);
    return this.intern<BranchItem>({ kind: "branch", headId: head.id, head, headPos: pos, title: describe(head), parent });
  }

  // ------------------------------------------------------------------ lists

  /**
   * The top level, by position in the folded tree: the rows on the leaf's path and on its line past
   * the leaf (without a leaf: the first root's line), and a branch for each other root. The rows
   * of the other branches are in between; they are shown under their branch points.
   */
  private topList(): Promise<List> {
    return this.list("top", async () => ({
      key: "top",
      length: this.total,
      unit: "rows",
      items: async (start, end, parent) => {
        await this.ensure(start, end);
        const items: ViewItem[] = [];
        for (let pos = start; pos < end; pos++) {
          const row = this.row(pos);
          const onLine = this.line !== undefined && pos >= this.line[0] && pos <= this.line[1];
          if (row.onLeafPath || onLine) items.push(this.rowItem(pos, parent));
          else if (row.indent === 0) {
            if (pos > 0 && this.rows[pos - 1] === undefined) await this.ensure(pos - 1, pos);
            if (this.startsBranch(pos)) items.push(this.branchItem(pos, parent));
          }
        }
        if (items.length === 0 && parent !== undefined) {
          items.push(this.intern<NoteItem>({ kind: "note", key: `note:${keyOf(parent)}`, title: "(only rows of branches, shown under their branch point above)", parent }));
        }
        return items;
      },
    }));
  }

  /** The branches a branch point holds, in tree order: all of its children but the one toward the leaf. */
  private branchesOf(item: EntryItem): Promise<List> {
    return this.list(`branches:${item.id}`, async () => {
      const heads = await this.findBranches(item);
      return {
        key: `branches:${item.id}`,
        length: heads.length,
        unit: "branches",
        items: async (start, end, parent) => heads.slice(start, end).map((pos) => this.branchItem(pos, parent)),
      };
    });
  }

  private async findBranches(item: EntryItem): Promise<number[]> {
    const at = item.pos!;
    const { indent } = item.row;
    const towardLeaf = item.onLeafPath && !item.isLeaf;
    const wanted = (item.row.children ?? 0) - (towardLeaf ? 1 : 0);
    const heads: number[] = [];
    for (let pos = at + 1; heads.length < wanted && pos < this.total; pos++) {
      if (this.rows[pos] === undefined || this.rows[pos - 1] === undefined) await this.ensure(pos - 1, pos + SCAN);
      const row = this.row(pos);
      if (row.indent <= indent) break; // past the branch point's subtree
      if (row.onLeafPath) {
        // The branch toward the leaf: the rest of the path and the leaf's subtree follow it. The
        // branches newer than it come after them.
        if (this.leafPos === undefined || pos > this.leafPos) break;
        pos = this.line?.[1] ?? this.leafPos;
        continue;
      }
      if (row.indent === indent + 1 && this.startsBranch(pos)) heads.push(pos);
    }
    return heads;
  }

  /** A branch's own rows: from its first entry to where it ends or branches. */
  private async branchList(item: BranchItem): Promise<List> {
    return this.list(`rows:${item.headId}`, async () => {
      const first = item.headPos;
      const last = await this.lineEnd(first);
      return {
        key: `rows:${item.headId}`,
        length: last - first + 1,
        unit: "rows",
        items: async (start, end, parent) => {
          await this.ensure(first + start, first + end);
          const items: ViewItem[] = [];
          for (let pos = first + start; pos < first + end; pos++) items.push(this.rowItem(pos, parent));
          return items;
        },
      };
    });
  }

  /** A run's entries, fetched with `run` a page at a time (each page once). */
  private runList(item: RunItem): List {
    const pages = new Map<string, Promise<EntryItem[]>>();
    const fetchPage = async (start: number, end: number, parent: ViewItem | undefined): Promise<EntryItem[]> => {
      if (this.stale) throw new StaleTree();
      this.requests++;
      const page = await this.fetchRows({ run: item.id, offset: start, limit: end - start });
      if (page.total !== item.count || page.leafId !== this.leafId) throw this.staled();
      return page.rows.map((row) => this.entryItem(row, undefined, parent));
    };
    return {
      key: `entries:${item.id}`,
      length: item.count,
      unit: "entries",
      items: (start, end, parent) => {
        const key = `${start}-${end}`;
        let page = pages.get(key);
        if (page === undefined) {
          page = fetchPage(start, end, parent);
          pages.set(key, page);
          page.catch(() => pages.delete(key));
        }
        return page;
      },
    };
  }

  private list(key: string, make: () => Promise<List>): Promise<List> {
    let list = this.lists.get(key);
    if (list === undefined) {
      list = make();
      this.lists.set(key, list);
      list.catch(() => this.lists.delete(key));
    }
    return list;
  }
}

/**
 * Ranges over [start, end) of a list, each of at most PAGE items or PAGE smaller ranges, as VS
 * Code's debugger shows long arrays.
 */
function rangesOf(list: List, start: number, end: number, parent: ViewItem | undefined, known: Map<string, ViewItem>): RangeItem[] {
  if (end <= start) return [];
  let size = PAGE;
  while (Math.ceil((end - start) / size) > PAGE) size *= PAGE;
  const ranges: RangeItem[] = [];
  for (let from = start; from < end; from += size) {
    const to = Math.min(end, from + size);
    const key = `range:${list.key}:${from}-${to}`;
    let range = known.get(key) as RangeItem | undefined;
    if (range === undefined) {
      range = { kind: "range", key, list, start: from, end: to, title: `${list.unit} ${number(from + 1)}–${number(to)}`, parent };
      known.set(key, range);
    }
    ranges.push(range);
  }
  return ranges;
}

/** One line for an entry: who said what, or what kind of entry it is. */
export function describe(row: Pick<TreeRow, "type" | "role" | "preview">): string {
  const text = row.preview ?? "";
  if (row.type === "message") return `${row.role ?? "message"}: ${text}`;
  const kind = row.type.replace(/_/g, " ");
  return text ? `${kind}: ${text}` : kind;
}

/** The badge text shown next to an entry: its label, and where the leaf is. */
export function badges(item: EntryItem): string {
  const parts: string[] = [];
  if (item.row.label) parts.push(`[${item.row.label}]`);
  if (item.isLeaf) parts.push("← leaf");
  return parts.join(" ");
}

function number(n: number): string {
  return n.toLocaleString("en-US");
}

function count(n: number, one: string, many: string): string {
  return `${number(n)} ${n === 1 ? one : many}`;
}
