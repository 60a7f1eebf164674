import { spawn, type ChildProcessByStdio } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import {
  CancellationTokenSource,
  createMessageConnection,
  Emitter,
  StreamMessageReader,
  StreamMessageWriter,
  type CancellationToken,
  type Disposable,
  type Event,
  type MessageConnection,
} from "vscode-jsonrpc/node";
import { daemonCommand } from "./command";
import { fromWire } from "./errors";
import { METHOD_NAMES, type ClientRequests, type Methods, type Notifications } from "./protocol";

export type MethodName = keyof Methods;
export type Params<M extends MethodName> = Methods[M]["params"];
export type Result<M extends MethodName> = Methods[M]["result"];
/** A VS Code-style token or a standard AbortSignal: either cancels a call. */
export type Cancellation = CancellationToken | AbortSignal;

type ShortName<M extends string> = M extends `session/${infer Name}` ? Name : never;

/** One typed async function per method of protocol.md, named without its `session/` prefix. */
export type MethodFunctions = {
  [M in MethodName as ShortName<M>]: (params: Params<M>, cancel?: Cancellation) => Promise<Result<M>>;
};

export type SummarizeRequest = ClientRequests["sessiontree/summarize"];
/** Produces the text of a summary with the client's own model (see session/compact, session/navigate). */
export type SummarizeHandler = (
  params: SummarizeRequest["params"],
  token: CancellationToken,
) => SummarizeRequest["result"] | Promise<SummarizeRequest["result"]>;

/** A request the daemon sends to the client, answered by a registered handler. */
export type RequestHandler = (params: unknown, token: CancellationToken) => unknown | Promise<unknown>;

export interface LogMessage {
  type: number;
  message: string;
}

/** LSP's work-done progress values, as the daemon sends them for a `workDoneToken`. */
export type WorkDoneProgress =
  | { kind: "begin"; title: string; message?: string; percentage?: number; cancellable?: boolean }
  | { kind: "report"; message?: string; percentage?: number; cancellable?: boolean }
  | { kind: "end"; message?: string };

/** `$/progress`: how far a request that was given a `workDoneToken` has got. */
export interface Progress {
  token: string | number;
  value: WorkDoneProgress;
}

export interface ClientOptions {
  /** The daemon command; default from the environment, see `daemonCommand`. */
  command?: string[];
  /** Passed as `--sessions-dir`; otherwise the daemon's own default (pi's sessions root). */
  sessionsDir?: string;
  /** Extra arguments after the command (`--durability fsync`, `--record FILE`, ...). */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  initializationOptions?: {
    sessionsDir?: string;
    durability?: "os" | "fsync";
    indexDir?: string | false;
    /** A PostgreSQL connection string: sessions kept in that store instead of files. */
    store?: string;
  };
  /** Merged into `capabilities.experimental.sessiontree` of `initialize`. */
  capabilities?: Record<string, unknown>;
  /**
   * Answers the daemon's `sessiontree/summarize` requests; giving it announces
   * `capabilities.experimental.sessiontree.summarize`, without which session/compact and
   * session/navigate fail with SummarizerUnavailable. The token fires when the daemon withdraws
   * the request (its caller cancelled, or it timed out).
   */
  summarize?: SummarizeHandler;
  /** Handlers for requests the daemon sends, by method, registered before `initialize`. */
  requestHandlers?: Record<string, RequestHandler>;
  /** Each line the daemon writes to stderr (its log). */
  onStderr?: (line: string) => void;
}

const SUMMARIZE = "sessiontree/summarize";
const STDERR_TAIL = 50;
const EXIT_TIMEOUT_MS = 10_000;

/**
 * The sessiontree daemon as a typed object: `SessionTreeClient.start()` spawns `sessiontree
 * serve`, initializes it, and resolves to a client whose methods are protocol.md's.
 *
 *     const client = await SessionTreeClient.start({ sessionsDir });
 *     const { sessionId } = await client.create({ cwd: "/home/me/project" });
 *     await client.append({ sessionId, entry: { type: "message", message } });
 *     await client.stop();
 */
export interface SessionTreeClient extends MethodFunctions {}

export class SessionTreeClient {
  /** What the daemon answered to `initialize`. */
  initializeResult: unknown;
  readonly stderrTail: string[] = [];
  /** Resolves with the daemon's exit code (or -1 when killed by a signal). */
  readonly exited: Promise<number>;

  private readonly didChange = new Emitter<Notifications["session/didChange"]>();
  private readonly logMessage = new Emitter<LogMessage>();
  private readonly progress = new Emitter<Progress>();
  private exitCode: number | undefined;

  private constructor(
    private readonly child: ChildProcessByStdio<Writable, Readable, Readable>,
    private readonly connection: MessageConnection,
    options: ClientOptions,
  ) {
    this.exited = new Promise((resolve) => {
      child.on("exit", (code) => {
        this.exitCode = code ?? -1;
        // Pending calls fail at once instead of waiting for answers that cannot come.
        connection.dispose();
        resolve(this.exitCode);
      });
    });
    child.stderr.setEncoding("utf8");
    let partial = "";
    child.stderr.on("data", (chunk: string) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        this.stderrTail.push(line);
        if (this.stderrTail.length > STDERR_TAIL) this.stderrTail.shift();
        options.onStderr?.(line);
      }
    });
    connection.onNotification("session/didChange", (params: Notifications["session/didChange"]) =>
      this.didChange.fire(params),
    );
    connection.onNotification("window/logMessage", (params: LogMessage) => this.logMessage.fire(params));
    connection.onNotification("$/progress", (params: Progress) => this.progress.fire(params));
    for (const [method, handler] of Object.entries(options.requestHandlers ?? {})) {
      this.onRequest(method, handler);
    }
    const summarize = options.summarize;
    if (summarize !== undefined) {
      this.onRequest(SUMMARIZE, (params, token) => summarize(params as SummarizeRequest["params"], token));
    }
    for (const method of METHOD_NAMES) {
      const name = method.slice("session/".length) as keyof MethodFunctions;
      Object.defineProperty(this, name, {
        value: (params: unknown, cancel?: Cancellation) => this.request(method, params as never, cancel),
      });
    }
  }

  /** Spawn the daemon and do `initialize` / `initialized`. */
  static async start(options: ClientOptions = {}): Promise<SessionTreeClient> {
    const [program, ...args] = options.command ?? daemonCommand(options.env ?? process.env);
    if (program === undefined) throw new Error("empty daemon command");
    if (options.sessionsDir !== undefined) args.push("--sessions-dir", options.sessionsDir);
    args.push(...(options.args ?? []));
    const child = spawn(program, args, {
      stdio: ["pipe", "pipe", "pipe"],
      env: options.env ?? process.env,
      cwd: options.cwd,
    });
    const spawned = new Promise<void>((resolve, reject) => {
      child.once("spawn", resolve);
      child.once("error", reject);
    });
    const connection = createMessageConnection(
      new StreamMessageReader(child.stdout),
      new StreamMessageWriter(child.stdin),
    );
    const client = new SessionTreeClient(child, connection, options);
    await spawned;
    connection.listen();
    try {
      await client.initialize(options);
    } catch (error) {
      client.kill(); // a daemon that refused initialize is of no use, and would keep Node alive
      throw error;
    }
    return client;
  }

  private async initialize(options: ClientOptions): Promise<void> {
    const params: Record<string, unknown> = {
      processId: process.pid,
      clientInfo: { name: "sessiontree-client" },
      capabilities: {
        experimental: {
          sessiontree: { ...options.capabilities, ...(options.summarize !== undefined ? { summarize: true } : {}) },
        },
      },
    };
    if (options.initializationOptions !== undefined) params.initializationOptions = options.initializationOptions;
    this.initializeResult = await this.raw("initialize", params);
    await this.connection.sendNotification("initialized", {});
  }

  /** `shutdown`, then `exit`; resolves with the exit code (0 after a clean shutdown). */
  async stop(): Promise<number> {
    if (this.exitCode === undefined) {
      try {
        await this.raw("shutdown");
        await this.connection.sendNotification("exit");
      } catch {
        // The daemon is already gone: its exit code says how it ended.
      }
    }
    const timer = setTimeout(() => this.child.kill("SIGKILL"), EXIT_TIMEOUT_MS);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kill the daemon without the lifecycle (it exits with status 1 on a closed stdin anyway). */
  kill(): void {
    this.child.kill("SIGKILL");
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Call a method of protocol.md by name. */
  async request<M extends MethodName>(method: M, params: Params<M>, cancel?: Cancellation): Promise<Result<M>> {
    return (await this.raw(method, params, cancel)) as Result<M>;
  }

  /** Any request, untyped: for methods this library does not know yet. */
  async raw(method: string, params?: unknown, cancel?: Cancellation): Promise<unknown> {
    // vscode-jsonrpc counts every argument after the method as a parameter unless it is a
    // token: an undefined one would turn the params into an array, so only defined ones go in.
    const args: unknown[] = params === undefined ? [] : [params];
    const token = toToken(cancel);
    if (token !== undefined) args.push(token);
    try {
      return await this.connection.sendRequest(method, ...args);
    } catch (error) {
      throw fromWire(error);
    }
  }

  /** Entries another process appended to an open session (see session/subscribe). */
  get onDidChange(): Event<Notifications["session/didChange"]> {
    return this.didChange.event;
  }

  /** `window/logMessage`: the daemon reports each warning of a file it opens this way. */
  get onLogMessage(): Event<LogMessage> {
    return this.logMessage.event;
  }

  /**
   * `$/progress` for requests given a `workDoneToken` (`session/list`, and `session/compact` or
   * `session/navigate` while they wait for a summary): `begin`, `report`s, then `end`, all before
   * the request's answer.
   */
  get onProgress(): Event<Progress> {
    return this.progress.event;
  }

  /**
   * Answer a request the daemon sends (such as a summary it needs). What the handler returns is
   * the result; what it throws becomes an error answer. Methods without a handler are answered
   * with MethodNotFound by vscode-jsonrpc.
   */
  onRequest(method: string, handler: RequestHandler): Disposable {
    return this.connection.onRequest(method, (params: unknown, token: CancellationToken) => handler(params, token));
  }
}

function toToken(cancel: Cancellation | undefined): CancellationToken | undefined {
  if (cancel === undefined || !("aborted" in cancel)) return cancel;
  const source = new CancellationTokenSource();
  if (cancel.aborted) source.cancel();
  else cancel.addEventListener("abort", () => source.cancel(), { once: true });
  return source.token;
}
