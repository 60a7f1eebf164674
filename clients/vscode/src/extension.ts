import * as vscode from "vscode";
import { basename, join } from "node:path";
import { homedir } from "node:os";
import { SessionTreeClient } from "sessiontree-client";
import * as commands from "./commands";
import { ContextDocuments } from "./contextDocument";
import * as retire from "./retire";
import type { EntryItem, ViewItem } from "./model";
import { SessionView } from "./session";
import { SessionStatus } from "./statusBar";
import { entryDecorations, SessionTreeProvider } from "./treeProvider";

const RESTART = "Restart";
const SHOW_LOG = "Show Log";

class DaemonStopped extends Error {}

/**
 * One daemon per window, started when the extension activates (the view is shown or a command
 * runs). If it stops on its own, the user is told, with its last words and a Restart action that
 * starts a new one and opens the same session in it.
 */
class Extension implements vscode.Disposable {
  private view: SessionView | undefined;
  private treeView: vscode.TreeView<ViewItem> | undefined;
  private starting: Promise<SessionView> | undefined;
  /** Daemons that have exited. */
  private readonly exited = new WeakSet<SessionTreeClient>();
  /** Daemons we stopped ourselves: their exit is no news. */
  private readonly stopping = new WeakSet<SessionTreeClient>();
  private readonly output = vscode.window.createOutputChannel("Session Tree");
  private readonly status = new SessionStatus();
  private readonly documents = new ContextDocuments(() => this.view);
  private readonly disposables: vscode.Disposable[] = [this.output, this.status, this.documents];

  /** The view over a running daemon: started on first use; an error once the daemon stopped. */
  sessionView(): Promise<SessionView> {
    if (this.view !== undefined && !this.exited.has(this.view.client)) return Promise.resolve(this.view);
    if (this.view !== undefined) return Promise.reject(new DaemonStopped("The Session Tree daemon is not running."));
    this.starting ??= this.startClient()
      .then((client) => this.createView(client))
      .catch((error: unknown) => {
        throw new DaemonStopped(`the daemon did not start: ${error instanceof Error ? error.message : String(error)}`);
      })
      .finally(() => (this.starting = undefined));
    return this.starting;
  }

  private createView(client: SessionTreeClient): SessionView {
    const view = new SessionView(client);
    const provider = new SessionTreeProvider(view, (error) => this.report(error));
    const tree = vscode.window.createTreeView("sessiontree.tree", { treeDataProvider: provider, showCollapseAll: true });
    this.treeView = tree;
    let revealed: string | undefined;
    this.disposables.push(
      view,
      provider,
      tree,
      vscode.window.registerFileDecorationProvider(entryDecorations),
      view.onDidChange((model) => {
        this.status.show(view);
        this.documents.changed();
        // Write actions are not offered on a session the daemon only shows (another agent's).
        void vscode.commands.executeCommand("setContext", "sessiontree.readOnly", view.current?.readOnly !== undefined);
        tree.message = view.current !== undefined && model?.total === 0 ? "The session has no entries yet." : undefined;
        tree.description = view.current === undefined ? undefined : (view.current.name ?? basename(view.current.path, ".jsonl"));
        // Where the leaf went (a session opened, a branch switched, another writer went on), the
        // view scrolls to it: the leaf is in the top-level list, on the page the tree was loaded from.
        const leaf = model?.leafItem;
        const key = `${view.current?.sessionId} ${model?.leafId}`;
        if (leaf !== undefined && key !== revealed && tree.visible) {
          revealed = key;
          tree.reveal(leaf, { select: false, focus: false }).then(undefined, () => undefined);
        }
      }),
    );
    this.view = view;
    return view;
  }

  private async startClient(): Promise<SessionTreeClient> {
    const config = vscode.workspace.getConfiguration("sessiontree");
    const command = config.get<string[]>("command", []);
    const sessionsDir = config.get<string>("sessionsDir", "");
    const store = config.get<string>("store", "");
    const client = await SessionTreeClient.start({
      ...(command.length > 0 ? { command } : {}),
      ...(sessionsDir ? { sessionsDir } : {}),
      ...(store ? { initializationOptions: { store } } : {}),
      onStderr: (line) => this.output.appendLine(line),
    });
    client.onLogMessage((log) => this.output.appendLine(log.message));
    this.output.appendLine(`[daemon ${client.pid ?? "?"} started]`);
    void client.exited.then((code) => {
      this.exited.add(client);
      if (this.stopping.has(client)) return;
      if (this.view !== undefined && this.view.client !== client) return;
      this.crashed(client, code);
    });
    return client;
  }

  private crashed(client: SessionTreeClient, code: number): void {
    const how = code === -1 ? "was killed" : `exited with code ${code}`;
    // Its last words, if it had any beyond its log's routine lines (a traceback ends with the error).
    const last = client.stderrTail.filter((line) => line.trim() && !/ (INFO|DEBUG) /.test(line)).at(-1);
    this.output.appendLine(`[daemon ${client.pid ?? "?"} ${how}]`);
    this.status.stopped();
    void vscode.window
      .showErrorMessage(`Session Tree: the daemon ${how}.${last ? ` ${last}` : ""}`, RESTART, SHOW_LOG)
      .then((choice) => this.answer(choice));
  }

  private answer(choice: string | undefined): void {
    if (choice === RESTART) void this.restart();
    else if (choice === SHOW_LOG) this.output.show();
  }

  /** A new daemon, the same session shown in it. */
  async restart(): Promise<void> {
    if (this.view === undefined) {
      // Never started (or the first start failed): start as the view would.
      await this.sessionView().catch((error: unknown) => this.report(error));
      return;
    }
    let client: SessionTreeClient;
    try {
      client = await this.startClient();
    } catch (error) {
      this.report(new DaemonStopped(`the daemon did not start: ${error instanceof Error ? error.message : String(error)}`));
      return;
    }
    const view = this.view;
    const old = view.client;
    this.stopping.add(old);
    try {
      await view.attach(client); // the same session, in the new daemon
    } catch (error) {
      this.report(error);
    } finally {
      void old.stop().catch(() => undefined);
      this.status.show(view);
    }
  }

  report(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    const stopped = error instanceof DaemonStopped || (this.view !== undefined && this.exited.has(this.view.client));
    const actions = stopped ? [RESTART, SHOW_LOG] : [];
    void vscode.window.showErrorMessage(`Session Tree: ${message}`, ...actions).then((choice) => this.answer(choice));
  }

  async showContext(): Promise<void> {
    const view = await this.sessionView();
    const document = await vscode.workspace.openTextDocument(this.documents.uriFor(view.require()));
    await vscode.window.showTextDocument(document, { preview: false });
  }

  /** Search every session; the hit picked is opened in the view, its entry revealed and selected. */
  async search(): Promise<void> {
    const view = await this.sessionView();
    const syntax = vscode.workspace.getConfiguration("sessiontree").get<string>("search.syntax", "plain") === "fts" ? "fts" : "plain";
    const hit = await commands.search(ui, view, { syntax });
    if (hit === undefined) return;
    await vscode.commands.executeCommand("sessiontree.tree.focus");
    const item = hit.entryId === null ? undefined : await commands.findEntry(view, hit.entryId);
    if (item !== undefined && this.treeView !== undefined) {
      await this.treeView.reveal(item, { select: true, focus: true, expand: false });
    }
  }

  async stop(): Promise<void> {
    const client = this.view?.client;
    if (client === undefined) return;
    this.stopping.add(client);
    await client.stop();
  }

  dispose(): void {
    for (const disposable of this.disposables.splice(0).reverse()) disposable.dispose();
  }
}

let extension: Extension | undefined;

/** A modal confirmation, as VS Code asks before deleting a file. */
const confirmModal: retire.Confirm = async (message, action) =>
  (await vscode.window.showWarningMessage(message, { modal: true }, action)) === action;

const ui: commands.Ui = {
  pick: (items, placeholder) => Promise.resolve(vscode.window.showQuickPick(items, { placeHolder: placeholder })),
  input: (prompt, value) => Promise.resolve(vscode.window.showInputBox({ prompt, ...(value ? { value } : {}) })),
  openFile: async () => {
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { Sessions: ["jsonl"] } });
    return picked?.[0]?.fsPath;
  },
  info: (message) => void vscode.window.showInformationMessage(message),
  warn: (message) => void vscode.window.showWarningMessage(`Session Tree: ${message}`),
  ask: (message, ...actions) => Promise.resolve(vscode.window.showInformationMessage(message, ...actions)),
  saveFile: async (name, format) => {
    // Beside the workspace's first folder, else the home directory.
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? homedir();
    const picked = await vscode.window.showSaveDialog({
      defaultUri: vscode.Uri.file(join(folder, name)),
      filters: format === "html" ? { HTML: ["html"] } : { Markdown: ["md"] },
      title: "Export Session",
    });
    return picked?.fsPath;
  },
  writeFile: (path, content) => Promise.resolve(vscode.workspace.fs.writeFile(vscode.Uri.file(path), new TextEncoder().encode(content))),
  openExternal: async (path) => {
    await vscode.env.openExternal(vscode.Uri.file(path));
  },
  progress: (title, task) =>
    Promise.resolve(
      vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Session Tree: ${title}` }, (progress) => {
        let done = 0;
        return task((message, percentage) => {
          const increment = percentage === undefined ? undefined : Math.max(0, percentage - done);
          if (percentage !== undefined) done = Math.max(done, percentage);
          progress.report({ ...(message ? { message } : {}), ...(increment ? { increment } : {}) });
        });
      }),
    ),
};

export function activate(context: vscode.ExtensionContext): void {
  const ext = new Extension();
  extension = ext;
  const run =
    (action: (view: SessionView, target?: EntryItem | string) => Promise<unknown>) =>
    async (target?: EntryItem | string | vscode.Uri) => {
      try {
        const view = await ext.sessionView();
        await action(view, target instanceof vscode.Uri ? target.fsPath : target);
      } catch (error) {
        ext.report(error);
      }
    };
  const guarded = (action: () => Promise<unknown>) => async () => {
    try {
      await action();
    } catch (error) {
      ext.report(error);
    }
  };
  context.subscriptions.push(
    ext,
    vscode.commands.registerCommand(
      "sessiontree.openSession",
      run((view, target) => commands.openSession(ui, view, typeof target === "string" ? target : undefined)),
    ),
    vscode.commands.registerCommand("sessiontree.switchBranch", run((view, target) => commands.switchBranch(ui, view, target))),
    vscode.commands.registerCommand("sessiontree.label", run((view, target) => commands.label(ui, view, target))),
    vscode.commands.registerCommand("sessiontree.fork", run((view, target) => commands.fork(ui, view, target))),
    vscode.commands.registerCommand("sessiontree.refresh", run((view) => view.refresh())),
    vscode.commands.registerCommand("sessiontree.search", guarded(() => ext.search())),
    vscode.commands.registerCommand("sessiontree.export", run((view) => commands.exportSession(ui, view))),
    vscode.commands.registerCommand("sessiontree.showContext", guarded(() => ext.showContext())),
    vscode.commands.registerCommand("sessiontree.restart", guarded(() => ext.restart())),
    vscode.commands.registerCommand("sessiontree.trashSession", run((view) => retire.retireSession(view, confirmModal, "trash"))),
    vscode.commands.registerCommand("sessiontree.archiveSession", run((view) => retire.retireSession(view, confirmModal, "archive"))),
    vscode.commands.registerCommand("sessiontree.restoreSession", run(async (view) => {
      const path = await ui.input("The session file to restore: where it was, or where it lies in the trash or archive");
      return path ? retire.restoreSession(view, path) : undefined;
    })),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("sessiontree")) {
        void vscode.window
          .showInformationMessage("Session Tree: restart the daemon to use the new settings.", RESTART)
          .then((choice) => (choice === RESTART ? ext.restart() : undefined));
      }
    }),
  );
  // The view needs its provider before the first command: start the daemon when it is shown.
  ext.sessionView().catch((error: unknown) => ext.report(error));
}

export function deactivate(): Promise<void> | undefined {
  return extension?.stop();
}
