import * as vscode from "vscode";
import { basename } from "node:path";
import { renderContext } from "./render";
import type { OpenSession, SessionView } from "./session";

export const SCHEME = "sessiontree-context";

/**
 * The context at the leaf as a read-only document (`sessiontree-context:` URIs, one per session),
 * rendered as `sessiontree context` prints it, and rendered again when the session changes.
 */
export class ContextDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly registration: vscode.Disposable;

  constructor(private readonly view: () => SessionView | undefined) {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(SCHEME, this);
  }

  uriFor(session: OpenSession): vscode.Uri {
    const title = `${(session.name ?? basename(session.path, ".jsonl")).replace(/[/\\?#]/g, "-")} (context)`;
    return vscode.Uri.from({ scheme: SCHEME, path: `/${title}`, query: session.sessionId });
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const view = this.view();
    if (view === undefined) return "# The Session Tree daemon is not running.\n";
    try {
      return renderContext(await view.client.context({ sessionId: uri.query }));
    } catch (error) {
      return `# ${error instanceof Error ? error.message : String(error)}\n`;
    }
  }

  /** The session changed: every open context document is rendered again. */
  changed(): void {
    for (const document of vscode.workspace.textDocuments) {
      if (document.uri.scheme === SCHEME) this.emitter.fire(document.uri);
    }
  }

  dispose(): void {
    this.registration.dispose();
    this.emitter.dispose();
  }
}
