import * as vscode from "vscode";
import { badges, childrenOf, type Item } from "./model";
import type { SessionView } from "./session";

/** The model (model.ts) as VS Code tree items; all decisions are made in the model. */
export class SessionTreeProvider implements vscode.TreeDataProvider<Item>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Item | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: { dispose(): void };

  constructor(private readonly view: SessionView) {
    this.subscription = view.onDidChange(() => this.changed.fire(undefined));
  }

  getChildren(item?: Item): Item[] {
    return this.view.model === undefined ? [] : childrenOf(item, this.view.model);
  }

  getTreeItem(item: Item): vscode.TreeItem {
    if (item.kind === "branch") {
      const tree = new vscode.TreeItem(
        item.title,
        item.onLeafPath ? vscode.TreeItemCollapsibleState.Expanded : vscode.TreeItemCollapsibleState.Collapsed,
      );
      tree.id = `branch:${item.headId}`;
      tree.iconPath = new vscode.ThemeIcon("git-branch");
      tree.contextValue = "branch";
      return tree;
    }
    const collapsible =
      item.branches.length === 0
        ? vscode.TreeItemCollapsibleState.None
        : vscode.TreeItemCollapsibleState.Expanded;
    const tree = new vscode.TreeItem(item.title, collapsible);
    tree.id = item.id;
    tree.description = badges(item);
    tree.tooltip = `${item.node.type} ${item.id} · ${item.node.timestamp}`;
    tree.contextValue = "entry";
    tree.iconPath = new vscode.ThemeIcon(
      item.isLeaf ? "debug-stackframe" : item.onLeafPath ? "circle-filled" : "circle-outline",
    );
    return tree;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
