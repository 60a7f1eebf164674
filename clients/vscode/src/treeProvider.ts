import * as vscode from "vscode";
import { badges, describe, keyOf, StaleTree, type ViewItem } from "./model";
import type { SessionView } from "./session";

const ENTRY_SCHEME = "sessiontree-entry";

/** Colours the view's rows: the leaf green with a "←" badge, entries off its path dimmed. */
export const entryDecorations: vscode.FileDecorationProvider = {
  provideFileDecoration(uri) {
    if (uri.scheme !== ENTRY_SCHEME) return undefined;
    if (uri.query === "leaf") return new vscode.FileDecoration("←", "the leaf", new vscode.ThemeColor("charts.green"));
    if (uri.query === "off") return { color: new vscode.ThemeColor("disabledForeground") };
    return undefined;
  },
};

/**
 * The model (model.ts) as VS Code tree items; all decisions are made in the model. Children are
 * asked for as the view opens them and the model fetches their rows then, so a session of 100,000
 * entries costs the view the page around the leaf, and a page more for each thing opened.
 */
export class SessionTreeProvider implements vscode.TreeDataProvider<ViewItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ViewItem | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: { dispose(): void };

  constructor(
    private readonly view: SessionView,
    private readonly report: (error: unknown) => void = () => undefined,
  ) {
    this.subscription = view.onDidChange(() => this.changed.fire(undefined));
  }

  async getChildren(item?: ViewItem): Promise<ViewItem[]> {
    const tree = this.view.tree;
    if (tree === undefined) return [];
    try {
      return await tree.childrenOf(item);
    } catch (error) {
      // A page from a newer state of the session: the view is being loaded again.
      if (!(error instanceof StaleTree) && !tree.stale) this.report(error);
      return [];
    }
  }

  getParent(item: ViewItem): ViewItem | undefined {
    return item.parent;
  }

  getTreeItem(item: ViewItem): vscode.TreeItem {
    const { Expanded, Collapsed, None } = vscode.TreeItemCollapsibleState;
    switch (item.kind) {
      case "range": {
        const tree = new vscode.TreeItem(item.title, Collapsed);
        tree.id = keyOf(item);
        tree.iconPath = new vscode.ThemeIcon("fold");
        tree.contextValue = "range";
        return tree;
      }
      case "note": {
        const tree = new vscode.TreeItem(item.title, None);
        tree.id = keyOf(item);
        tree.iconPath = new vscode.ThemeIcon("info");
        return tree;
      }
      case "branch": {
        const tree = new vscode.TreeItem(item.title, Collapsed);
        tree.id = keyOf(item);
        tree.tooltip = `A branch from ${item.headId} (${item.head.type}, ${item.head.timestamp})`;
        tree.accessibilityInformation = { label: `${item.title} (branch from ${item.headId})` };
        tree.iconPath = new vscode.ThemeIcon("git-branch");
        tree.contextValue = "branch";
        return tree;
      }
      case "run": {
        const tree = new vscode.TreeItem(item.title, Collapsed);
        tree.id = keyOf(item);
        tree.description = describe(item.row);
        tree.tooltip = `${item.count.toLocaleString("en-US")} entries with one child each, ${item.id} to ${item.lastId}`;
        tree.accessibilityInformation = { label: `${item.title}, from ${item.id} to ${item.lastId}` };
        tree.resourceUri = vscode.Uri.from({ scheme: ENTRY_SCHEME, path: `/run/${item.id}`, query: item.onLeafPath ? "" : "off" });
        tree.iconPath = new vscode.ThemeIcon("ellipsis");
        tree.contextValue = "run";
        return tree;
      }
      case "entry": {
        const tree = new vscode.TreeItem(item.title, item.holdsBranches ? Expanded : None);
        tree.id = keyOf(item);
        const badge = badges(item);
        tree.description = badge;
        tree.tooltip = `${item.row.type} ${item.id} · ${item.row.timestamp}${badge ? `\n${badge}` : ""}`;
        tree.accessibilityInformation = { label: `${item.title}${badge ? `, ${badge}` : ""} (entry ${item.id})` };
        // Decorated (entryDecorations): the leaf stands out even when the row is too narrow for its badges.
        tree.resourceUri = vscode.Uri.from({ scheme: ENTRY_SCHEME, path: `/${item.id}`, query: item.isLeaf ? "leaf" : item.onLeafPath ? "" : "off" });
        tree.contextValue = "entry";
        tree.iconPath = new vscode.ThemeIcon(item.isLeaf ? "debug-stackframe" : item.onLeafPath ? "circle-filled" : "circle-outline");
        return tree;
      }
    }
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
