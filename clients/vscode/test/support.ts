// What the tests share: this checkout's daemon, session files written line by line, and the view
// walked as VS Code would walk it when everything is opened.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseCommand, type TreeResult } from "sessiontree-client";
import type { EntryItem, SessionTree, ViewItem } from "../src/model";
import { keyOf, PAGE } from "../src/model";

export const REPO = resolve(__dirname, "..", "..", "..", "..");

// The daemons the tests start read none of the user's agent folders (~/.claude/projects,
// ~/.codex/sessions).
process.env.SESSIONTREE_CLAUDE_CODE_DIR = "off";
process.env.SESSIONTREE_CODEX_DIR = "off";

/** The daemon of this checkout (make clients passes SESSIONTREE_PYTHON). */
export function daemon(): string[] {
  if (process.env.SESSIONTREE_COMMAND) return parseCommand(process.env.SESSIONTREE_COMMAND);
  const venv = join(REPO, ".venv", "bin", "python");
  return [process.env.SESSIONTREE_PYTHON ?? (existsSync(venv) ? venv : "python3"), "-m", "sessiontree", "serve"];
}

/** An entry of a session file to write: its parent by index (null: a root), a label, a type. */
export interface Spec {
  parent: number | null;
  /** A label entry (labelling the entry of this index) instead of a user message. */
  labels?: number;
  type?: "model_change" | "compaction";
}

export const idOf = (index: number) => (0x10000000 + index).toString(16);

let written = 0;

/** Writes a pi session file: the header, then one line per spec, a second apart (file order is time order). */
export function writeSession(path: string, specs: Spec[]): void {
  const start = Date.parse("2026-01-01T00:00:00.000Z");
  const id = `019b7a00-0000-7000-8000-${(++written).toString(16).padStart(12, "0")}`;
  const lines = [{ type: "session", version: 3, id, timestamp: new Date(start).toISOString(), cwd: "/work/tree" }];
  specs.forEach((spec, index) => {
    const base = { id: idOf(index), parentId: spec.parent === null ? null : idOf(spec.parent), timestamp: new Date(start + 1000 * (index + 1)).toISOString() };
    if (spec.labels !== undefined) lines.push({ type: "label", ...base, targetId: idOf(spec.labels), label: `L${spec.labels}` } as never);
    else if (spec.type === "model_change") lines.push({ type: "model_change", ...base, provider: "anthropic", modelId: `m${index}` } as never);
    else if (spec.type === "compaction") lines.push({ type: "compaction", ...base, summary: `summary ${index}`, firstKeptEntryId: base.parentId ?? base.id, tokensBefore: 1000 } as never);
    else lines.push({ type: "message", ...base, message: { role: "user", content: `message ${index}`, timestamp: 1 } } as never);
  });
  writeFileSync(path, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
}

/** A seeded random tree: mostly conversations going on, sometimes a branch from an earlier entry, a root, a label. */
export function randomSpecs(count: number, seed: number): Spec[] {
  let state = seed >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const specs: Spec[] = [{ parent: null }];
  for (let index = 1; index < count; index++) {
    const r = random();
    const parent = r < 0.86 ? index - 1 : r < 0.995 ? Math.floor(random() * index) : null;
    const kind = random();
    if (kind < 0.03 && parent !== null) specs.push({ parent, labels: Math.floor(random() * index) });
    else if (kind < 0.04) specs.push({ parent, type: "model_change" });
    else if (kind < 0.045 && parent !== null) specs.push({ parent, type: "compaction" });
    else specs.push({ parent });
  }
  return specs;
}

/** A list as the view shows it once every range and run in it is opened: entries and branches, in order. */
export type Shown = (EntryItem | { kind: "branch"; headId: string; item: ViewItem })[];

/** The items under `item`, ranges and runs opened in place; every answer checked to be at most two pages. */
export async function listUnder(tree: SessionTree, item: ViewItem | undefined): Promise<Shown> {
  const shown: Shown = [];
  const open = async (parent: ViewItem | undefined): Promise<void> => {
    const children = await tree.childrenOf(parent);
    assert.ok(children.length <= 2 * PAGE, `${children.length} children at once`);
    for (const child of children) {
      assert.equal(tree.parentOf(child), parent, "the parent of an item is the item it is shown in");
      if (child.kind === "range" || child.kind === "run") await open(child);
      else if (child.kind === "entry") shown.push(child);
      else if (child.kind === "branch") shown.push({ kind: "branch", headId: child.headId, item: child });
      // A range of the top level may hold only rows of branches shown under a branch point above.
      else assert.ok(parent?.kind === "range" && parent.list.key === "top" && children.length === 1, `a note in ${parent && keyOf(parent)}`);
    }
  };
  await open(item);
  return shown;
}

/**
 * Checks the whole view against the daemon's own tree (session/tree, every entry): the path to the
 * leaf and the leaf's line past it are the top-level list, each list goes from parent to child,
 * each branch point holds exactly its other children as branches, and every entry is shown once.
 * Returns the top-level list's entry ids.
 */
export async function checkView(tree: SessionTree, truth: TreeResult): Promise<string[]> {
  const nodes = new Map(truth.nodes.map((node) => [node.id, node]));
  const children = new Map<string, string[]>();
  for (const node of truth.nodes) {
    if (node.depth > 0 && node.parentId !== null) children.set(node.parentId, [...(children.get(node.parentId) ?? []), node.id]);
  }
  const onPath = new Set<string>();
  for (let id = truth.leafId; id !== null && !onPath.has(id); id = nodes.get(id)?.parentId ?? null) onPath.add(id);
  const seen = new Set<string>();
  const seenIn = (id: string) => {
    assert.ok(!seen.has(id), `${id} is shown twice`);
    seen.add(id);
  };

  // A list goes from an entry to its child toward the leaf, or (off the path, or past the leaf)
  // to its only child; it ends where there is neither. An entry with several children holds, as
  // branches, each child the list does not go on with.
  const checkList = async (entries: EntryItem[]): Promise<void> => {
    for (let index = 0; index < entries.length; index++) {
      const entry = entries[index]!;
      seenIn(entry.id);
      const node = nodes.get(entry.id)!;
      assert.equal(entry.isLeaf, entry.id === truth.leafId, `${entry.id} leaf`);
      assert.equal(entry.onLeafPath, onPath.has(entry.id), `${entry.id} on the path`);
      assert.equal(entry.row.label, node.label, `${entry.id} label`);
      const kids = children.get(entry.id) ?? [];
      const toward = kids.find((kid) => onPath.has(kid));
      const goesOn = toward ?? (kids.length === 1 ? kids[0] : undefined);
      assert.equal(entries[index + 1]?.id, goesOn, `the list after ${entry.id}`);
      assert.equal(entry.holdsBranches, kids.length > 1, `${entry.id} (${kids.length} children) holds branches`);
      if (entry.holdsBranches) {
        const held = await listUnder(tree, entry);
        assert.deepEqual(
          held.map((item) => (item.kind === "branch" ? item.headId : `entry ${item.id}`)),
          kids.filter((kid) => kid !== toward),
          `the branches of ${entry.id}`,
        );
        for (const branch of held) if (branch.kind === "branch") await checkBranch(branch);
      }
    }
  };
  const checkBranch = async (branch: { headId: string; item: ViewItem }): Promise<void> => {
    const list = await listUnder(tree, branch.item);
    assert.ok(list.every((item) => item.kind === "entry"), "a branch's list holds entries only");
    const entries = list as EntryItem[];
    assert.equal(entries[0]?.id, branch.headId, "a branch starts with its first entry");
    await checkList(entries);
  };

  const top = await listUnder(tree, undefined);
  const topEntries = top.filter((item): item is EntryItem => item.kind === "entry");
  await checkList(topEntries);
  // The top level: the path from its root to the leaf, then the leaf's line while it has one way to
  // go (without a leaf: the first root's line), and the other roots as branches, in tree order.
  const roots = truth.nodes.filter((node) => node.depth === 0).map((node) => node.id);
  const expected: string[] = [];
  let id: string | undefined = roots.find((root) => onPath.has(root)) ?? roots[0];
  while (id !== undefined) {
    expected.push(id);
    const kids: string[] = children.get(id) ?? [];
    id = kids.find((kid) => onPath.has(kid)) ?? (kids.length === 1 ? kids[0] : undefined);
  }
  assert.deepEqual(topEntries.map((entry) => entry.id), expected, "the top-level list");
  const order = new Map(truth.nodes.map((node, index) => [node.id, index]));
  const topBranches = top.filter((item) => item.kind === "branch").map((item) => (item as { headId: string }).headId);
  assert.deepEqual(topBranches, roots.filter((root) => root !== expected[0]), "the other roots, as branches");
  const positions = top.map((item) => order.get(item.kind === "branch" ? item.headId : item.id)!);
  assert.deepEqual(positions, [...positions].sort((a, b) => a - b), "the top level in tree order");
  for (const branch of top) if (branch.kind === "branch") await checkBranch(branch);
  assert.equal(seen.size, truth.nodes.length, "every entry is shown once");
  return expected;
}
