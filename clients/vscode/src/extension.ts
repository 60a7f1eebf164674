import * as vscode from "vscode";
import { SessionTreeClient } from "sessiontree-client";
import * as commands from "./commands";
import type { EntryItem } from "./model";
import { SessionView } from "./session";
import { SessionTreeProvider } from "./treeProvider";

/** One daemon per window, started when the extension activates (the view is shown or a command runs). */
let started: Promise<SessionView> | undefined;

function sessionView(context: vscode.ExtensionContext): Promise<SessionView> {
  started ??= (async () => {
    const config = vscode.workspace.getConfiguration("sessiontree");
    const command = config.get<string[]>("command", []);
    const sessionsDir = config.get<string>("sessionsDir", "");
    const output = vscode.window.createOutputChannel("Session Tree");
    const client = await SessionTreeClient.start({
      ...(command.length > 0 ? { command } : {}),
      ...(sessionsDir ? { sessionsDir } : {}),
      onStderr: (line) => output.appendLine(line),
    });
    client.onLogMessage((log) => output.appendLine(log.message));
    const view = new SessionView(client);
    const provider = new SessionTreeProvider(view);
    context.subscriptions.push(
      output,
      view,
      provider,
      vscode.window.registerTreeDataProvider("sessiontree.tree", provider),
    );
    return view;
  })();
  // A daemon that failed to start (a wrong command setting) is tried again on the next command.
  started.catch(() => (started = undefined));
  return started;
}

const ui: commands.Ui = {
  pick: (items, placeholder) => Promise.resolve(vscode.window.showQuickPick(items, { placeHolder: placeholder })),
  input: (prompt, value) => Promise.resolve(vscode.window.showInputBox({ prompt, ...(value ? { value } : {}) })),
  openFile: async () => {
    const picked = await vscode.window.showOpenDialog({ canSelectMany: false, filters: { Sessions: ["jsonl"] } });
    return picked?.[0]?.fsPath;
  },
  info: (message) => void vscode.window.showInformationMessage(message),
};

export function activate(context: vscode.ExtensionContext): void {
  const run =
    (action: (view: SessionView, target?: EntryItem | string) => Promise<unknown>) =>
    async (target?: EntryItem | string | vscode.Uri) => {
      try {
        const view = await sessionView(context);
        await action(view, target instanceof vscode.Uri ? target.fsPath : target);
      } catch (error) {
        void vscode.window.showErrorMessage(error instanceof Error ? error.message : String(error));
      }
    };
  context.subscriptions.push(
    vscode.commands.registerCommand(
      "sessiontree.openSession",
      run((view, target) => commands.openSession(ui, view, typeof target === "string" ? target : undefined)),
    ),
    vscode.commands.registerCommand("sessiontree.switchBranch", run((view, target) => commands.switchBranch(ui, view, target))),
    vscode.commands.registerCommand("sessiontree.label", run((view, target) => commands.label(ui, view, target))),
    vscode.commands.registerCommand("sessiontree.fork", run((view, target) => commands.fork(ui, view, target))),
    vscode.commands.registerCommand("sessiontree.refresh", run((view) => view.refresh())),
  );
  // The view needs its provider before the first command: start the daemon when it is shown.
  sessionView(context).catch((error: unknown) => {
    void vscode.window.showErrorMessage(`Session Tree: the daemon did not start: ${String(error)}`);
  });
}

export function deactivate(): Promise<number> | undefined {
  return started?.then((view) => view.client.stop());
}
