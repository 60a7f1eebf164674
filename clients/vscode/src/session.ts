import { Emitter, type Disposable, type Event, type SessionTreeClient } from "sessiontree-client";
import { buildModel, type Model } from "./model";

export interface OpenSession {
  sessionId: string;
  path: string;
  name?: string;
}

/**
 * The session the view shows: opens it in the daemon, subscribes to other writers, and rebuilds
 * the model after every change, ours (commands) or theirs (session/didChange). The daemon can be
 * replaced (after it stopped): `attach` opens the same file in the new one.
 */
export class SessionView implements Disposable {
  current: OpenSession | undefined;
  model: Model | undefined;
  private readonly changed = new Emitter<Model | undefined>();
  private subscription: Disposable;

  constructor(public client: SessionTreeClient) {
    this.subscription = this.follow(client);
  }

  /** Fires with the new model after each refresh. */
  get onDidChange(): Event<Model | undefined> {
    return this.changed.event;
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
    this.current = { sessionId: opened.sessionId, path: opened.path, ...(opened.name ? { name: opened.name } : {}) };
    await this.client.subscribe({ sessionId: opened.sessionId });
    await this.refresh();
    return this.current;
  }

  async refresh(): Promise<Model | undefined> {
    const session = this.current;
    if (session === undefined) {
      this.model = undefined;
    } else {
      const [tree, info] = await Promise.all([
        this.client.tree({ sessionId: session.sessionId }),
        this.client.info({ sessionId: session.sessionId }),
      ]);
      // The name can change under us (another writer's session_info).
      if (info.name) session.name = info.name;
      else delete session.name;
      this.model = buildModel(tree);
    }
    this.changed.fire(this.model);
    return this.model;
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
