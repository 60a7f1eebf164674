// Retiring the open session: to the trash or to the archive beside it, after a modal confirmation;
// and bringing a trashed or archived one back. The daemon moves the file (never deleting it) and
// closes the session; the view then shows no session.
import { basename } from "node:path";
import type { SessionView } from "./session";

/** Asks before a move: true when the user chose `action` (a modal dialog in VS Code). */
export type Confirm = (message: string, action: string) => Promise<boolean>;

export type Way = "trash" | "archive";

const WORDS: Record<Way, { action: string; question: (name: string) => string }> = {
  trash: {
    action: "Move to Trash",
    question: (name) => `Move the session ${name} to the trash? “Session Tree: Restore Session…” or the desktop's trash brings it back.`,
  },
  archive: {
    action: "Archive",
    question: (name) => `Archive the session ${name}? It moves to .archive/ beside it, out of the session lists; “Session Tree: Restore Session…” brings it back.`,
  },
};

/** Move the open session's file (or `path`) away; where it went, or undefined when not confirmed. */
export async function retireSession(view: SessionView, confirm: Confirm, way: Way, path?: string): Promise<string | undefined> {
  const target = path ?? view.require().path;
  const words = WORDS[way];
  if (!(await confirm(words.question(basename(target)), words.action))) return undefined;
  const moved = way === "trash" ? await view.client.trash({ path: target }) : await view.client.archive({ path: target });
  if (view.current?.path === moved.path) {
    view.current = undefined; // the daemon closed it
    await view.refresh();
  }
  return moved.movedTo;
}

/** Put a trashed or archived session back (`path`: where it was, or where it lies now) and open it. */
export async function restoreSession(view: SessionView, path: string): Promise<string> {
  const restored = await view.client.restore({ path });
  await view.open(restored.path);
  return restored.path;
}
