import { Emitter, type Disposable, type Event, type SessionTreeClient } from "sessiontree-client";
import type { InfoResult } from "sessiontree-client";
import { SessionTree, StaleTree } from "./model";

export interface OpenSession {
  sessionId: string;
  path: string;
  name?: string;
  /** Why the daemon refuses writes to it (another agent's session, or a file pi does not open). */
  readOnly?: string;
}

/**
 * The session the view shows: opens it in the daemon, subscribes to other writers, and loads the
 * folded tree again (from the page that shows the leaf) after every change, ours (commands) or
 * theirs (session/didChange). The daemon can be replaced (after it stopped): `attach` opens the
 * same file in the new one.
 */
export class SessionView implements Disposable {
  current: OpenSession | undefined;
  /** The folded tree as the view shows it, for the session's state at the last refresh. */
  tree: SessionTree | undefined;
  /** Entries in the file (session/info's entryCount). */
  entryCount = 0;
  private readonly changed = new Emitter<SessionTree | undefined>();
  private subscription: Disposable;
  /** The refresh running, and the one queued after it (which will see every change until it starts). */
  private running: Promise<SessionTree | undefined> | undefined;
  private queued: Promise<SessionTree | undefined> | undefined;

  constructor(public client: SessionTreeClient) {
    this.subscription = this.follow(client);
  }

  /** Fires with the new tree after each refresh. */
  get onDidChange(): Event<SessionTree | undefined> {
    return this.changed.event;
  }

  /** The leaf at the last refresh. */
  get leafId(): string | null {
    return this.tree?.leafId ?? null;
  }

  private follow(client: SessionTreeClient): Disposable {
    return client.onDidChange((change) => {
      if (change.sessionId === this.current?.sessionId) void this.refresh().catch(() => undefined);
    });
  }

  /** Use another daemon from now on, and show the same session in it. */
  async attach(client: SessionTreeClient): Promise<void> {
    this.subscription.dispose();
    this.client = client;
    this.subscription = this.follow(client);
    const previous = this.current;
    this.current = undefined;
    if (previous !== undefined) await this.open(previous.path);
    else await this.refresh();
  }

  async open(path: string): Promise<OpenSession> {
    const previous = this.current;
    const opened = await this.client.open({ path });
    if (previous !== undefined && previous.sessionId !== opened.sessionId) {
      await this.client.close({ sessionId: previous.sessionId });
    }
    const readOnly = opened.warnings.find((warning) => warning.kind === "read-only")?.message;
    this.current = {
      sessionId: opened.sessionId,
      path: opened.path,
      ...(opened.name ? { name: opened.name } : {}),
      ...(readOnly ? { readOnly } : {}),
    };
    await this.client.subscribe({ sessionId: opened.sessionId });
    await this.refresh();
    return this.current;
  }

  /**
   * Load the tree again. Calls while one runs share a second one that starts when it ends, so a
   * burst of changes costs two loads, and a caller always gets a tree loaded after its call.
   */
  refresh(): Promise<SessionTree | undefined> {
    if (this.running === undefined) return this.start();
    this.queued ??= this.running.then(
      () => this.start(),
      () => this.start(),
    );
    return this.queued;
  }

  private start(): Promise<SessionTree | undefined> {
    this.queued = undefined;
    const running = this.load().finally(() => {
      if (this.running === running) this.running = undefined;
    });
    this.running = running;
    return running;
  }

  private async load(): Promise<SessionTree | undefined> {
    const session = this.current;
    if (session === undefined) {
      this.tree = undefined;
      this.entryCount = 0;
    } else {
      const { client } = this;
      const { sessionId } = session;
      let tree: SessionTree | undefined;
      let info: InfoResult;
      // A page from a newer state (another writer went on while we read): read again.
      for (let attempt = 1; ; attempt++) {
        info = await client.info({ sessionId });
        try {
          tree = await SessionTree.load((params) => client.treeView({ sessionId, ...params }), info.leafId, () => {
            if (this.tree === tree) void this.refresh().catch(() => undefined);
          });
          break;
        } catch (error) {
          if (!(error instanceof StaleTree) || attempt === 3) throw error;
        }
      }
      // The name can change under us (another writer's session_info).
      if (info.name) session.name = info.name;
      else delete session.name;
      if (this.current !== session) return this.tree; // another session was opened meanwhile
      this.entryCount = info.entryCount;
      this.tree = tree;
    }
    this.changed.fire(this.tree);
    return this.tree;
  }

  /** The open session, or an error a command can show. */
  require(): OpenSession {
    if (this.current === undefined) throw new Error("No session is open: run “Session Tree: Open Session…” first.");
    return this.current;
  }

  dispose(): void {
    this.subscription.dispose();
    this.changed.dispose();
  }
}
