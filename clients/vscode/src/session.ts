import { Emitter, type Disposable, type Event, type SessionTreeClient } from "sessiontree-client";
import { buildModel, type Model } from "./model";

export interface OpenSession {
  sessionId: string;
  path: string;
  name?: string;
}

/**
 * The session the view shows: opens it in the daemon, subscribes to other writers, and rebuilds
 * the model after every change, ours (commands) or theirs (session/didChange).
 */
export class SessionView implements Disposable {
  current: OpenSession | undefined;
  model: Model | undefined;
  private readonly changed = new Emitter<Model | undefined>();
  private readonly subscription: Disposable;

  constructor(readonly client: SessionTreeClient) {
    this.subscription = client.onDidChange((change) => {
      if (change.sessionId === this.current?.sessionId) void this.refresh();
    });
  }

  /** Fires with the new model after each refresh. */
  get onDidChange(): Event<Model | undefined> {
    return this.changed.event;
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
    this.model = session === undefined ? undefined : buildModel(await this.client.tree({ sessionId: session.sessionId }));
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
