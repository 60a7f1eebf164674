import type { Cancellation, SessionTreeClient } from "./client";
import type { AppendParams, AppendResult, ContextResult } from "./protocol";

/** A context answer whose `messages` are the whole context, as the client holds it. */
export type HeldResult = Omit<ContextResult, "messages" | "reset"> & { messages: readonly unknown[] };

/**
 * One session's context (at its leaf) kept on the client's side and brought up to date by
 * deltas: each read sends the `cursor` of the last answer as `since`, and the daemon answers
 * with only the messages that followed it, or with all of them and `reset: true` when the
 * context changed otherwise (protocol.md, session/context). Users see the whole context.
 *
 *     const held = new HeldContext(client, sessionId);
 *     await client.append({ sessionId, entry: userMessage });
 *     await client.append({ sessionId, entry: assistantReply });
 *     const { context } = await held.append({ sessionId, entry: toolResult });  // no extra request
 *     callModel(context.messages);
 *
 * Reads and appends through one HeldContext go one at a time (two deltas after the same cursor
 * cannot both apply); `messages` is the held array itself: read it, do not change it.
 */
export class HeldContext {
  messages: unknown[] = [];
  cursor: string | undefined;
  private last: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly client: SessionTreeClient,
    readonly sessionId: string,
    readonly options: { format?: "agent" | "llm"; tokens?: boolean } = {},
  ) {}

  /** session/context at the session's leaf: only the new messages travel. */
  read(cancel?: Cancellation): Promise<HeldResult> {
    return this.inTurn(async () => {
      const params = { sessionId: this.sessionId, ...this.options, since: this.cursor };
      return this.take(await this.client.context(params, cancel));
    });
  }

  /** session/append whose answer also brings the held context up to date (`context`: the whole). */
  append(params: AppendParams, cancel?: Cancellation): Promise<Omit<AppendResult, "context"> & { context: HeldResult }> {
    return this.inTurn(async () => {
      const result = await this.client.append({ ...params, context: { ...this.options, since: this.cursor } }, cancel);
      if (result.context === undefined) throw new Error("the daemon did not answer with the context");
      return { ...result, context: this.take(result.context) };
    });
  }

  /** Fold an answer in (a delta after the held cursor, or everything); the whole context. */
  take(result: ContextResult): HeldResult {
    if (result.reset === false) {
      for (const message of result.messages) this.messages.push(message);
    } else {
      this.messages = result.messages.slice();
    }
    this.cursor = result.cursor;
    const { reset: _reset, ...rest } = result;
    return { ...rest, messages: this.messages };
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const next = this.last.then(work, work);
    this.last = next.catch(() => undefined);
    return next;
  }
}
