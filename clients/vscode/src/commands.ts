import { basename } from "node:path";
import { ErrorCodes, type SearchHit, type SearchResult, type SessionSummary } from "sessiontree-client";
import type { OpenSession, SessionView } from "./session";
import { describe, type EntryItem, type ViewItem } from "./model";

/** The few editor interactions the commands need; VS Code's window in the extension, a script in tests. */
export interface Ui {
  pick<T extends { label: string; description?: string }>(items: T[], placeholder: string): Promise<T | undefined>;
  input(prompt: string, value?: string): Promise<string | undefined>;
  openFile(): Promise<string | undefined>;
  info(message: string): void;
  /** A warning the user reads (a query the daemon refused). */
  warn(message: string): void;
  /** A message with actions: the one chosen, or undefined. */
  ask(message: string, ...actions: string[]): Promise<string | undefined>;
  /** A save dialog proposing `name`; the file's path, or undefined. */
  saveFile(name: string, format: "markdown" | "html"): Promise<string | undefined>;
  writeFile(path: string, content: string): Promise<void>;
  /** Opens a file outside the editor (the browser for a page). */
  openExternal(path: string): Promise<void>;
  /** Runs a task while showing its progress (a notification in VS Code). */
  progress<T>(title: string, task: (report: (message?: string, percentage?: number) => void) => Promise<T>): Promise<T>;
}

type Target = EntryItem | string | undefined;

const BROWSE = "Browse…";
let listings = 0;

/** Open a session: the one given, or one chosen from the daemon's list (or a file dialog). */
export async function openSession(ui: Ui, view: SessionView, path?: string): Promise<string | undefined> {
  if (path === undefined) {
    const { sessions } = await listSessions(ui, view);
    const items = [
      ...sessions.map(sessionItem),
      { label: BROWSE, description: "a session file", path: "" },
    ];
    const chosen = await ui.pick(items, "Open a session");
    if (chosen === undefined) return undefined;
    path = chosen.path || (await ui.openFile());
    if (path === undefined) return undefined;
  }
  const opened = await view.open(path);
  return opened.sessionId;
}

/** Other agents' names as the picker shows them (their sessions are served read-only). */
const AGENT_NAMES: Record<string, string> = { "claude-code": "Claude Code", codex: "Codex" };

/** A session as the picker lists it: another agent's marked with its name. */
export function sessionItem(session: SessionSummary): { label: string; description: string; path: string } {
  const agent = session.agent === "pi" ? "" : `$(hubot) ${AGENT_NAMES[session.agent] ?? session.agent} (read-only) · `;
  return {
    label: session.name ?? session.firstMessage,
    description: `${agent}${session.cwd} · ${session.messageCount} messages · ${session.modified}`,
    path: session.path,
  };
}

/** The daemon's list of every session, its `$/progress` shown while it reads the files. */
export function listSessions(ui: Ui, view: SessionView) {
  const client = view.client;
  const workDoneToken = `sessiontree-list-${++listings}`;
  return ui.progress("Reading sessions", async (report) => {
    const subscription = client.onProgress(({ token, value }) => {
      if (token === workDoneToken && value.kind !== "end") report(value.message, value.percentage);
    });
    try {
      return await client.list({ workDoneToken });
    } finally {
      subscription.dispose();
    }
  });
}

/** Move the leaf to an entry: the next message continues from there. */
export async function switchBranch(ui: Ui, view: SessionView, target?: Target): Promise<string | undefined> {
  const { sessionId } = view.require();
  const entryId = await resolveTarget(ui, view, target, "Switch to which entry?");
  if (entryId === undefined) return undefined;
  const { leafId } = await view.client.branch({ sessionId, entryId });
  await view.refresh();
  return leafId ?? undefined;
}

/** Set (or, with an empty answer, clear) an entry's label. */
export async function label(ui: Ui, view: SessionView, target?: Target): Promise<string | undefined> {
  const { sessionId } = view.require();
  if (view.current?.readOnly) {
    ui.warn(readOnlyMessage(view));
    return undefined;
  }
  const targetId = await resolveTarget(ui, view, target, "Label which entry?");
  if (targetId === undefined) return undefined;
  const current = (typeof target === "object" ? target.row.label : undefined) ?? view.tree?.entry(targetId)?.row.label;
  const text = await ui.input("Label (empty clears it)", current);
  if (text === undefined) return undefined;
  await view.client.label({ sessionId, targetId, ...(text.trim() ? { label: text.trim() } : {}) });
  await view.refresh();
  return text.trim();
}

/** Why a write is not offered: the session is another agent's (or a file pi does not open). */
export function readOnlyMessage(view: SessionView): string {
  return `${view.current?.path ?? "This session"} is read-only: ${view.current?.readOnly ?? ""}`;
}

/** Copy the path to an entry into a new session file, and show the new session. */
export async function fork(ui: Ui, view: SessionView, target?: Target): Promise<string | undefined> {
  const { sessionId } = view.require();
  const entryId = await resolveTarget(ui, view, target, "Fork at which entry?");
  if (entryId === undefined) return undefined;
  const forked = await view.client.fork({ sessionId, entryId });
  // The daemon opened the fork; the view moves to it (and subscribes).
  await view.open(forked.path);
  ui.info(`Forked into ${forked.path}`);
  return forked.path;
}

async function resolveTarget(ui: Ui, view: SessionView, target: Target, placeholder: string): Promise<string | undefined> {
  if (typeof target === "string") return target;
  if (target !== undefined) return target.id;
  // No row given (the command palette): the rows of the folded tree, every one an entry worth
  // picking (branch points, branches, labelled entries, the leaf, ends); runs are left out.
  const rows = (await view.tree?.entryRows()) ?? [];
  const chosen = await ui.pick(
    rows.map((row) => ({
      label: describe(row),
      description: [row.label ? `[${row.label}]` : "", row.leaf ? "leaf" : ""].join(" ").trim(),
      id: row.id,
    })),
    placeholder,
  );
  return chosen?.id;
}

/** A search hit as the pick shows it. */
export interface HitItem {
  label: string;
  description: string;
  detail: string;
  hit: SearchHit;
}

/** The snippet with each matched word in «», the highlights counted in code points as the daemon does. */
export function markSnippet(snippet: string, highlights: readonly (readonly number[])[]): string {
  const chars = Array.from(snippet);
  const spans = [...highlights].filter((span) => span.length >= 2).sort((a, b) => a[0]! - b[0]!);
  let out = "";
  let at = 0;
  for (const [start, end] of spans as [number, number][]) {
    if (start < at || end <= start) continue;
    out += chars.slice(at, start).join("") + "«" + chars.slice(start, end).join("") + "»";
    at = end;
  }
  return out + chars.slice(at).join("");
}

let searches = 0;

/**
 * Search every session under the root: the query asked for, the hits picked from, the session of
 * the hit opened in the view. Returns the hit picked (the caller reveals its entry), or undefined.
 * `syntax` "plain" takes every word literally (never an error); "fts" is SQLite FTS5's syntax.
 */
export async function search(ui: Ui, view: SessionView, options: { query?: string; syntax?: "plain" | "fts"; limit?: number } = {}): Promise<SearchHit | undefined> {
  const query = options.query ?? (await ui.input("Search sessions"));
  if (query === undefined || !query.trim()) return undefined;
  const client = view.client;
  const workDoneToken = `sessiontree-search-${++searches}`;
  let result: SearchResult;
  let names = new Map<string, string>();
  try {
    [result, names] = await ui.progress("Searching…", async (report) => {
      const subscription = client.onProgress(({ token, value }) => {
        if (token === workDoneToken && value.kind !== "end") report(value.message, value.percentage);
      });
      try {
        // The sessions' names for the hits, read meanwhile; without them the file names do.
        const listed = client.list({}).then(
          ({ sessions }) => new Map(sessions.filter((s) => s.name).map((s) => [s.path, s.name!])),
          () => new Map<string, string>(),
        );
        const found = await client.search({ query, syntax: options.syntax ?? "plain", limit: options.limit ?? 100, workDoneToken });
        return [found, await listed] as const;
      } finally {
        subscription.dispose();
      }
    });
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code === ErrorCodes.InvalidParams) {
      // A query FTS5 cannot parse, or a bad filter: the daemon says which.
      ui.warn(`Search: ${(error as Error).message}`);
      return undefined;
    }
    throw error;
  }
  if (result.hits.length === 0) {
    ui.info(`No session holds “${query}”.`);
    return undefined;
  }
  const items: HitItem[] = result.hits.map((hit) => ({
    label: markSnippet(hit.snippet, hit.highlights),
    description: [hit.role ?? hit.type, hit.timestamp ? hit.timestamp.replace("T", " ").replace(/\.\d+Z$/, "Z") : ""].filter(Boolean).join(" · "),
    detail: `${names.get(hit.path) ?? basename(hit.path)} · ${hit.cwd}`,
    hit,
  }));
  const more = result.cursor !== null ? ` (the first ${items.length})` : "";
  const chosen = await ui.pick(items, `${items.length} hits for “${query}”${more}: open one`);
  if (chosen === undefined) return undefined;
  await view.open(chosen.hit.path);
  return chosen.hit;
}

/**
 * The entry's item in the view, the lists holding it opened as needed (breadth first: the leaf's
 * line, then branches), at most `budget` items looked at. Undefined when not found.
 */
export async function findEntry(view: SessionView, entryId: string, budget = 20000): Promise<EntryItem | undefined> {
  const tree = view.tree;
  if (tree === undefined) return undefined;
  const known = tree.entry(entryId);
  if (known !== undefined) return known;
  const queue: (ViewItem | undefined)[] = [undefined];
  let looked = 0;
  while (queue.length > 0 && looked < budget) {
    const children = await tree.childrenOf(queue.shift());
    for (const child of children) {
      looked++;
      if (child.kind === "entry" && child.id === entryId) return child;
      if (child.kind === "range" || child.kind === "run" || child.kind === "branch" || (child.kind === "entry" && child.holdsBranches)) queue.push(child);
    }
  }
  return undefined;
}

export type ExportFormat = "markdown" | "html";

/** What the export writes: the file's default name for a session. */
export function exportName(session: OpenSession, format: ExportFormat, scope: "path" | "tree"): string {
  const base = (session.name ?? basename(session.path, ".jsonl")).replace(/[\\/:*?"<>|\u0000-\u001f]+/g, "-").trim() || "session";
  return `${base}${scope === "tree" ? "-tree" : ""}.${format === "html" ? "html" : "md"}`;
}

const OPEN_IN_BROWSER = "Open in Browser";

/**
 * Export the open session as Markdown or one HTML page, the path to the leaf or the whole tree,
 * into a file chosen in a save dialog. Returns the file written, or undefined.
 */
export async function exportSession(ui: Ui, view: SessionView): Promise<string | undefined> {
  const session = view.require();
  const format = await ui.pick(
    [
      { label: "Markdown", description: "to paste into an issue", format: "markdown" as const },
      { label: "HTML", description: "one self-contained page", format: "html" as const },
    ],
    "Export as",
  );
  if (format === undefined) return undefined;
  const scope = await ui.pick(
    [
      { label: "Path to the leaf", description: "the conversation from the root to the leaf", scope: "path" as const },
      { label: "Whole tree", description: "every branch, each in a section of its own", scope: "tree" as const },
    ],
    "Export what",
  );
  if (scope === undefined) return undefined;
  const target = await ui.saveFile(exportName(session, format.format, scope.scope), format.format);
  if (target === undefined) return undefined;
  const { content } = await view.client.export({ sessionId: session.sessionId, format: format.format, scope: scope.scope });
  await ui.writeFile(target, content);
  if (format.format === "html") {
    if ((await ui.ask(`Exported to ${target}`, OPEN_IN_BROWSER)) === OPEN_IN_BROWSER) await ui.openExternal(target);
  } else {
    ui.info(`Exported to ${target}`);
  }
  return target;
}
