// The extension's commands and live updates, without VS Code: a scripted Ui, the real daemon
// through the Node library, and assertions on what the view shows and on the session file.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SessionTreeClient } from "sessiontree-client";
import * as commands from "../src/commands";
import { badges, type EntryItem } from "../src/model";
import { SessionView } from "../src/session";
import { daemon, listUnder } from "./support";

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
  warned: string[] = [];
  warn(message: string): void {
    this.warned.push(message);
  }
  asks: (string | undefined)[] = [];
  asked: [string, string[]][] = [];
  async ask(message: string, ...actions: string[]): Promise<string | undefined> {
    this.asked.push([message, actions]);
    return this.asks.shift();
  }
  saves: (string | undefined)[] = [];
  proposed: string[] = [];
  async saveFile(name: string): Promise<string | undefined> {
    this.proposed.push(name);
    return this.saves.shift();
  }
  async writeFile(path: string, content: string): Promise<void> {
    writeFileSync(path, content);
  }
  opened: string[] = [];
  async openExternal(path: string): Promise<void> {
    this.opened.push(path);
  }
  async progress<T>(title: string, task: (report: (message?: string, percentage?: number) => void) => Promise<T>): Promise<T> {
    const shown = { title, reports: [] as [string | undefined, number | undefined][] };
    this.progressShown.push(shown);
    return task((message, percentage) => shown.reports.push([message, percentage]));
  }
}

/** The entries of the view's top-level list (runs and ranges opened), and its branches. */
async function topLevel(view: SessionView) {
  const shown = await listUnder(view.tree!, undefined);
  return shown.filter((item): item is EntryItem => item.kind === "entry");
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
  const asked: string[] = [];

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
    // Every method the view's daemon is asked for, in order.
    const request = client.request.bind(client);
    client.request = ((method: string, ...rest: unknown[]) => {
      asked.push(method);
      return (request as (...args: unknown[]) => unknown)(method, ...rest);
    }) as typeof client.request;
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
    // The session_info entry that names it is the last: the messages come first.
    assert.deepEqual((await topLevel(view)).map((entry) => entry.id).slice(0, 3), ids);
    assert.equal(view.current?.name, "Demo");
    assert.equal(view.tree!.leafItem?.row.type, "session_info");
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
    const item = (await topLevel(view)).find((entry) => entry.id === ids[0])!;
    assert.equal(await commands.switchBranch(ui, view, item), ids[0]);
    assert.equal(view.leafId, ids[0]);
    const { sessionId } = view.require();
    await client.append({ sessionId, entry: message("user", "Another way") });
    await view.refresh();
    const [root, next] = await topLevel(view);
    assert.equal(root!.holdsBranches, true, "the first entry is now a branch point");
    assert.deepEqual(
      (await view.tree!.childrenOf(root)).map((branch) => branch.kind === "branch" && branch.headId),
      [ids[1]],
      "it holds the old line as a branch; the view goes on with the new entry",
    );
    assert.equal(next!.isLeaf, true);
    assert.equal(next!.title, "user: Another way");
  });

  it("switches branch with a pick when no item is given", async () => {
    ui.picks.push((items) => items.findIndex((item) => item.label === "user: Fix it"));
    assert.equal(await commands.switchBranch(ui, view), ids[2]);
  });

  it("labels an entry; the label is in the file and in the view", async () => {
    ui.inputs.push("  start  ");
    assert.equal(await commands.label(ui, view, ids[0]), "start");
    const root = (await topLevel(view)).find((entry) => entry.id === ids[0])!;
    assert.equal(root.row.label, "start");
    assert.equal(badges(root), "[start]");
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
    const has = (tree = view.tree) => appendedId !== undefined && tree?.leafItem?.id === appendedId;
    // The change may arrive before or after the other daemon's answer: either order is awaited.
    let settle: () => void = () => undefined;
    const updated = new Promise<void>((done) => (settle = done));
    const subscription = view.onDidChange((tree) => {
      if (has(tree ?? undefined)) settle();
    });
    const opened = await other.open({ path });
    // The other daemon has its own leaf (it created the session); it continues ours explicitly.
    const parentId = view.leafId;
    appendedId = (await other.append({ sessionId: opened.sessionId, entry: message("assistant", "From elsewhere"), parentId })).id;
    if (has()) settle();
    await updated;
    subscription.dispose();
    assert.equal(view.tree!.leafItem!.title, "assistant: From elsewhere", "it continued our leaf, so the leaf followed");
    assert.equal(view.tree!.leafItem!.parent, undefined, "and is shown in the top-level list");
    assert.equal(view.current?.sessionId, sessionId);
  });

  it("loads the tree once more for a burst of changes, and never asks for the whole tree", async () => {
    const before = asked.length;
    const loads = await Promise.all(Array.from({ length: 10 }, () => view.refresh()));
    const infos = asked.slice(before).filter((method) => method === "session/info").length;
    assert.equal(infos, 2, "the load running, then one for every call made meanwhile");
    assert.equal(loads.at(-1), view.tree);
    assert.ok(asked.includes("session/treeView"));
    assert.ok(!asked.includes("session/tree"), "session/tree is never asked for");
  });

  it("forks at an entry into a new file and shows it", async () => {
    const before = view.current!.sessionId;
    const forked = await commands.fork(ui, view, ids[1]);
    assert.ok(forked && existsSync(forked));
    assert.notEqual(view.current!.sessionId, before);
    assert.equal(view.current!.path, forked);
    assert.deepEqual((await topLevel(view)).filter((entry) => entry.row.type === "message").map((entry) => entry.id), ids.slice(0, 2));
    assert.match(ui.shown.at(-1) ?? "", /Forked into/);
  });

  it("searches every session, opens the hit's session and finds its entry in the view", async () => {
    ui.progressShown = [];
    ui.inputs.push("fix");
    let offered: { label: string; description?: string; detail?: string }[] = [];
    ui.picks.push((items) => {
      offered = items;
      return items.findIndex((item) => (item as commands.HitItem).hit.path === path);
    });
    const hit = await commands.search(ui, view);
    assert.ok(hit);
    assert.equal(ui.progressShown[0]?.title, "Searching…");
    const chosen = offered.find((item) => (item as commands.HitItem).hit === hit)!;
    assert.equal(chosen.label, "«Fix» it");
    assert.match(chosen.description ?? "", /^user · \d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ$/);
    assert.equal(chosen.detail, "Demo · /work/vscode", "the session's name, and its project");
    assert.equal(view.current?.path, path, "the hit's session is open in the view");
    assert.equal(hit.entryId, ids[2]);
    const item = await commands.findEntry(view, hit.entryId!);
    assert.equal(item?.id, ids[2]);
    // An entry on a branch off the leaf's line is found too, its branch opened.
    ui.inputs.push("another");
    ui.picks.push((items) => items.findIndex((item) => (item as commands.HitItem).hit.path === path));
    const other = await commands.search(ui, view);
    const branched = await commands.findEntry(view, other!.entryId!);
    assert.equal(branched?.title, "user: Another way");
    assert.equal(await commands.findEntry(view, "ffffffff"), undefined);
  });

  it("marks the matched words of a snippet in code points", () => {
    assert.equal(commands.markSnippet("a 😀 fix and fix", [[4, 7], [12, 15]]), "a 😀 «fix» and «fix»");
    assert.equal(commands.markSnippet("plain", []), "plain");
  });

  it("says so when nothing matches, and shows a query the daemon refuses as a warning", async () => {
    ui.inputs.push("zebra");
    assert.equal(await commands.search(ui, view), undefined);
    assert.match(ui.shown.at(-1) ?? "", /No session holds “zebra”/);
    assert.equal(await commands.search(ui, view, { query: '"unbalanced AND', syntax: "fts" }), undefined);
    assert.match(ui.warned.at(-1) ?? "", /^Search: /);
    // Plain syntax takes the same text literally: no error.
    ui.picks.push(() => undefined);
    assert.equal(await commands.search(ui, view, { query: '"Fix', syntax: "plain" }), undefined);
    assert.equal(ui.picks.length, 0, "it found the hit and offered it");
    ui.inputs.push(undefined); // Escape
    assert.equal(await commands.search(ui, view), undefined);
  });

  it("exports the open session as Markdown and as an HTML page", async () => {
    ui.picks.push((items) => items.findIndex((item) => item.label === "Markdown"));
    ui.picks.push((items) => items.findIndex((item) => item.label === "Path to the leaf"));
    const md = join(dir, "out.md");
    ui.saves.push(md);
    assert.equal(await commands.exportSession(ui, view), md);
    assert.equal(ui.proposed.at(-1), "Demo.md");
    const markdown = readFileSync(md, "utf8");
    assert.match(markdown, /^# /);
    assert.match(markdown, /Hello/);
    assert.match(ui.shown.at(-1) ?? "", /Exported to .*out\.md/);

    ui.picks.push((items) => items.findIndex((item) => item.label === "HTML"));
    ui.picks.push((items) => items.findIndex((item) => item.label === "Whole tree"));
    const html = join(dir, "out.html");
    ui.saves.push(html);
    ui.asks.push("Open in Browser");
    assert.equal(await commands.exportSession(ui, view), html);
    assert.equal(ui.proposed.at(-1), "Demo-tree.html");
    const page = readFileSync(html, "utf8");
    assert.match(page, /<html/i);
    assert.match(page, /Another way/, "the whole tree: the other branch too");
    assert.deepEqual(ui.asked.at(-1)?.[1], ["Open in Browser"]);
    assert.deepEqual(ui.opened, [html]);

    // Escape at any step writes nothing.
    ui.picks.push((items) => items.findIndex((item) => item.label === "HTML"));
    ui.picks.push((items) => items.findIndex((item) => item.label === "Whole tree"));
    ui.saves.push(undefined);
    assert.equal(await commands.exportSession(ui, view), undefined);
    ui.picks.push(() => undefined);
    assert.equal(await commands.exportSession(ui, view), undefined);
  });

  it("refuses commands before a session is open", async () => {
    const fresh = new SessionView(client);
    await assert.rejects(commands.switchBranch(ui, fresh, "abc"), /No session is open/);
    await assert.rejects(commands.exportSession(ui, fresh), /No session is open/);
    fresh.dispose();
  });
});
