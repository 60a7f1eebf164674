import type { SessionView } from "./session";
import { describe, type EntryItem } from "./model";

/** The few editor interactions the commands need; VS Code's window in the extension, a script in tests. */
export interface Ui {
  pick<T extends { label: string; description?: string }>(items: T[], placeholder: string): Promise<T | undefined>;
  input(prompt: string, value?: string): Promise<string | undefined>;
  openFile(): Promise<string | undefined>;
  info(message: string): void;
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
      ...sessions.map((session) => ({
        label: session.name ?? session.firstMessage,
        description: `${session.cwd} · ${session.messageCount} messages · ${session.modified}`,
        path: session.path,
      })),
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
  const targetId = await resolveTarget(ui, view, target, "Label which entry?");
  if (targetId === undefined) return undefined;
  const current = (typeof target === "object" ? target.row.label : undefined) ?? view.tree?.entry(targetId)?.row.label;
  const text = await ui.input("Label (empty clears it)", current);
  if (text === undefined) return undefined;
  await view.client.label({ sessionId, targetId, ...(text.trim() ? { label: text.trim() } : {}) });
  await view.refresh();
  return text.trim();
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
