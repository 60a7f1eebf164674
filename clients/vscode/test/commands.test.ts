// The extension's commands and live updates, without VS Code: a scripted Ui, the real daemon
// through the Node library, and assertions on the model and on the session file.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { SessionTreeClient, parseCommand } from "sessiontree-client";
import * as commands from "../src/commands";
import type { EntryItem } from "../src/model";
import { SessionView } from "../src/session";

const REPO = resolve(__dirname, "..", "..", "..", "..");

function daemon(): string[] {
  if (process.env.SESSIONTREE_COMMAND) return parseCommand(process.env.SESSIONTREE_COMMAND);
  const venv = join(REPO, ".venv", "bin", "python");
  return [process.env.SESSIONTREE_PYTHON ?? (existsSync(venv) ? venv : "python3"), "-m", "sessiontree", "serve"];
}

/** Answers the commands' questions from a queue, and keeps what they told the user. */
class ScriptedUi implements commands.Ui {
  picks: ((items: { label: string }[]) => number | undefined)[] = [];
  inputs: (string | undefined)[] = [];
  shown: string[] = [];
  progressShown: { title: string; reports: [string | undefined, number | undefined][] }[] = [];
  async pick<T extends { label: string }>(items: T[]): Promise<T | undefined> {
    const choose = this.picks.shift();
    assert.ok(choose, "the command asked for an unexpected pick");
    const index = choose(items);
    return index === undefined ? undefined : items[index];
  }
  async input(): Promise<string | undefined> {
    assert.ok(this.inputs.length > 0, "the command asked for an unexpected input");
    return this.inputs.shift();
  }
  async openFile(): Promise<string | undefined> {
    return undefined;
  }
  info(message: string): void {
    this.shown.push(message);
  }
  async progress<T>(title: string, task: (report: (message?: string, percentage?: number) => void) => Promise<T>): Promise<T> {
    const shown = { title, reports: [] as [string | undefined, number | undefined][] };
    this.progressShown.push(shown);
    return task((message, percentage) => shown.reports.push([message, percentage]));
  }
}

const message = (role: string, text: string) => ({
  type: "message",
  message: role === "user" ? { role, content: text, timestamp: 1 } : { role, content: [{ type: "text", text }], timestamp: 1 },
});

describe("extension commands", () => {
  let dir: string;
  let client: SessionTreeClient;
  let other: SessionTreeClient;
  let view: SessionView;
  let ui: ScriptedUi;
  let path: string;
  let ids: string[];

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "sessiontree-vscode-")));
    const sessionsDir = join(dir, "sessions");
    client = await SessionTreeClient.start({ command: daemon(), sessionsDir });
    other = await SessionTreeClient.start({ command: daemon(), sessionsDir });
    // A session written by "someone else" (the second daemon), for the view to open.
    const created = await other.create({ cwd: "/work/vscode" });
    path = created.path;
    const batch = await other.append({
      sessionId: created.sessionId,
      entries: [message("user", "Hello"), message("assistant", "Hi"), message("user", "Fix it")],
    });
    ids = (batch.appended ?? []).map((entry) => entry.id);
    await other.setName({ sessionId: created.sessionId, name: "Demo" });
    view = new SessionView(client);
    ui = new ScriptedUi();
  });
  after(async () => {
    view.dispose();
    await Promise.all([client.stop(), other.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("opens a session picked from the daemon's list", async () => {
    ui.picks.push((items) => items.findIndex((item) => item.label === "Demo"));
    const sessionId = await commands.openSession(ui, view);
    assert.ok(sessionId);
    assert.equal(view.current?.path, path);
    assert.deepEqual(
      [...view.model!.entries.keys()].slice(0, 3),
      ids,
    );
    assert.equal(view.current?.name, "Demo");
  });

  it("shows the daemon's $/progress while it lists the sessions", async () => {
    ui.progressShown = [];
    ui.picks.push(() => undefined); // Escape
    assert.equal(await commands.openSession(ui, view), undefined);
    assert.equal(ui.progressShown.length, 1);
    assert.equal(ui.progressShown[0]!.title, "Reading sessions");
    assert.deepEqual(ui.progressShown[0]!.reports.at(-1), ["1/1", 100]);
  });

  it("switches branch from a tree item, and appends then go there", async () => {
    const item = view.model!.entries.get(ids[0]!)!;
    assert.equal(await commands.switchBranch(ui, view, item), ids[0]);
    assert.equal(view.model!.leafId, ids[0]);
    const { sessionId } = view.require();
    await client.append({ sessionId, entry: message("user", "Another way") });
    await view.refresh();
    const [root, next] = view.model!.items as EntryItem[];
    assert.deepEqual(
      root!.branches.map((branch) => branch.headId),
      [ids[1]],
      "the first entry is now a branch point; the view goes on with the new entry",
    );
    assert.equal(next!.isLeaf, true);
  });

  it("switches branch with a pick when no item is given", async () => {
    ui.picks.push((items) => items.findIndex((item) => item.label === "user: Fix it"));
    assert.equal(await commands.switchBranch(ui, view), ids[2]);
  });

  it("labels an entry; the label is in the file and in the view", async () => {
    ui.inputs.push("  start  ");
    assert.equal(await commands.label(ui, view, ids[0]), "start");
    assert.equal(view.model!.entries.get(ids[0]!)!.node.label, "start");
    const lines = readFileSync(path, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line) as Record<string, unknown>);
    assert.deepEqual(
      lines.filter((entry) => entry.type === "label").map((entry) => [entry.targetId, entry.label]),
      [[ids[0], "start"]],
    );
    ui.inputs.push(undefined); // Escape: nothing happens
    assert.equal(await commands.label(ui, view, ids[0]), undefined);
  });

  it("updates live when another process appends", async () => {
    const { sessionId } = view.require();
    let appendedId: string | undefined;
    const has = (model = view.model) => appendedId !== undefined && model?.entries.has(appendedId) === true;
    // The change may arrive before or after the other daemon's answer: either order is awaited.
    let settle: () => void = () => undefined;
    const updated = new Promise<void>((done) => (settle = done));
    const subscription = view.onDidChange((model) => {
      if (has(model ?? undefined)) settle();
    });
    const opened = await other.open({ path });
    // The other daemon has its own leaf (it created the session); it continues ours explicitly.
    const parentId = view.model!.leafId;
    appendedId = (await other.append({ sessionId: opened.sessionId, entry: message("assistant", "From elsewhere"), parentId })).id;
    if (has()) settle();
    await updated;
    subscription.dispose();
    assert.equal(view.model!.entries.get(appendedId)!.isLeaf, true, "it continued our leaf, so the leaf followed");
    assert.equal(view.current?.sessionId, sessionId);
  });

  it("forks at an entry into a new file and shows it", async () => {
    const before = view.current!.sessionId;
    const forked = await commands.fork(ui, view, ids[1]);
    assert.ok(forked && existsSync(forked));
    assert.notEqual(view.current!.sessionId, before);
    assert.equal(view.current!.path, forked);
    assert.deepEqual([...view.model!.entries.values()].filter((entry) => entry.node.type === "message").map((entry) => entry.id), ids.slice(0, 2));
    assert.match(ui.shown.at(-1) ?? "", /Forked into/);
  });

  it("refuses commands before a session is open", async () => {
    const fresh = new SessionView(client);
    await assert.rejects(commands.switchBranch(ui, fresh, "abc"), /No session is open/);
    fresh.dispose();
  });
});
