import * as vscode from "vscode";
import { basename } from "node:path";
import type { SessionView } from "./session";

/** The status bar item: the session's name and its leaf; a click shows the context there. */
export class SessionStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("sessiontree.status", vscode.StatusBarAlignment.Left, 10);

  constructor() {
    this.item.name = "Session Tree";
  }

  show(view: SessionView): void {
    const session = view.current;
    if (session === undefined) {
      this.item.hide();
      return;
    }
    const leaf = view.leafId;
    const name = session.name ?? basename(session.path, ".jsonl");
    this.item.text = `$(list-tree) ${name} · leaf ${leaf ?? "none"}`;
    this.item.tooltip = `${session.path}\n${view.entryCount.toLocaleString("en-US")} entries · leaf ${leaf ?? "none"}\nClick to show the context at the leaf`;
    this.item.command = "sessiontree.showContext";
    this.item.backgroundColor = undefined;
    this.item.show();
  }

  stopped(): void {
    this.item.text = "$(error) Session Tree: daemon stopped";
    this.item.tooltip = "Click to restart the daemon";
    this.item.command = "sessiontree.restart";
    this.item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
