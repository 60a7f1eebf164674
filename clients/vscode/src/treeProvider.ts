import * as vscode from "vscode";
import { badges, childrenOf, parentOf, type ViewItem } from "./model";
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
 * asked for as the view opens them, a page at a time, so a session of 100,000 entries costs the
 * view a few hundred items.
 */
export class SessionTreeProvider implements vscode.TreeDataProvider<ViewItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<ViewItem | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private readonly subscription: { dispose(): void };

  constructor(private readonly view: SessionView) {
    this.subscription = view.onDidChange(() => this.changed.fire(undefined));
  }

  getChildren(item?: ViewItem): ViewItem[] {
    return this.view.model === undefined ? [] : childrenOf(item, this.view.model);
  }

  getParent(item: ViewItem): ViewItem | undefined {
    return this.view.model === undefined ? undefined : parentOf(item, this.view.model);
  }

  getTreeItem(item: ViewItem): vscode.TreeItem {
    const { Expanded, Collapsed, None } = vscode.TreeItemCollapsibleState;
    if (item.kind === "range") {
      const tree = new vscode.TreeItem(item.title, item.holdsLeaf ? Expanded : Collapsed);
      tree.id = `range:${item.key}`;
      const first = item.list[item.start]!;
      tree.description = first.title;
      tree.iconPath = new vscode.ThemeIcon(item.holdsLeaf ? "fold-down" : "fold");
      tree.contextValue = "range";
      return tree;
    }
    if (item.kind === "branch") {
      const tree = new vscode.TreeItem(item.title, item.onLeafPath ? Expanded : Collapsed);
      tree.id = `branch:${item.headId}`;
      const size = count(item.entries.length, "entry", "entries");
      tree.description = size;
      tree.tooltip = `A branch of ${size}, from ${item.headId}`;
      tree.accessibilityInformation = { label: `${item.title} (branch of ${size})` };
      tree.iconPath = new vscode.ThemeIcon("git-branch");
      tree.contextValue = "branch";
      return tree;
    }
    const tree = new vscode.TreeItem(item.title, item.branches.length === 0 ? None : Expanded);
    tree.id = item.id;
    const badge = badges(item);
    tree.description = badge;
    tree.tooltip = `${item.node.type} ${item.id} · ${item.node.timestamp}${badge ? `\n${badge}` : ""}`;
    tree.accessibilityInformation = { label: `${item.title}${badge ? `, ${badge}` : ""} (entry ${item.id})` };
    // Decorated (entryDecorations): the leaf stands out even when the row is too narrow for its badges.
    tree.resourceUri = vscode.Uri.from({ scheme: ENTRY_SCHEME, path: `/${item.id}`, query: item.isLeaf ? "leaf" : item.onLeafPath ? "" : "off" });
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

function count(n: number, one: string, many: string): string {
  return `${n.toLocaleString("en-US")} ${n === 1 ? one : many}`;
}
