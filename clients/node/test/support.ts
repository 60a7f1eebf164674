// Shared by the tests: the real daemon from this checkout, in a fresh sessions root each time.
import { existsSync, mkdtempSync } from "node:fs";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { SessionTreeClient, parseCommand, type ClientOptions } from "../src";

/** The repository root (tests run from clients/node/out/test). */
export const REPO = resolve(__dirname, "..", "..", "..", "..");

// The daemons the tests start read none of the user's agent folders (~/.claude/projects,
// ~/.codex/sessions): a test that wants one names its own with --claude-code-dir / --codex-dir.
process.env.SESSIONTREE_CLAUDE_CODE_DIR = "off";
process.env.SESSIONTREE_CODEX_DIR = "off";
// ... and a session they trash goes to a throwaway trash ($XDG_DATA_HOME/Trash), never the user's.
process.env.XDG_DATA_HOME = mkdtempSync(join(tmpdir(), "sessiontree-node-data-"));

/** The daemon of this checkout: the environment's choice, else the repo's virtualenv, else python3. */
export function testCommand(): string[] {
  if (process.env.SESSIONTREE_COMMAND) return parseCommand(process.env.SESSIONTREE_COMMAND);
  const venv = join(REPO, ".venv", "bin", "python");
  const python = process.env.SESSIONTREE_PYTHON ?? (existsSync(venv) ? venv : "python3");
  return [python, "-m", "sessiontree", "serve"];
}

export interface Sandbox {
  dir: string;
  root: string;
  start(options?: ClientOptions): Promise<SessionTreeClient>;
  cleanup(): Promise<void>;
}

/** A temporary sessions root and the clients started in it (stopped by cleanup). */
export async function sandbox(): Promise<Sandbox> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), "sessiontree-node-")));
  const root = join(dir, "sessions");
  const clients: SessionTreeClient[] = [];
  return {
    dir,
    root,
    async start(options: ClientOptions = {}) {
      // Index sidecars and the search index stay in the sandbox, out of the user's cache.
      const initializationOptions = { indexDir: join(dir, "index") };
      const client = await SessionTreeClient.start({ command: testCommand(), sessionsDir: root, initializationOptions, ...options });
      clients.push(client);
      return client;
    },
    async cleanup() {
      await Promise.all(clients.map((client) => client.stop()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export const USER_TIME = 1735689600000;

export function user(text: string, offset = 0): { [key: string]: unknown } {
  return { type: "message", message: { role: "user", content: text, timestamp: USER_TIME + offset } };
}

export function assistant(text: string, offset = 0): { [key: string]: unknown } {
  return {
    type: "message",
    message: {
      role: "assistant",
      content: [{ type: "text", text }],
      api: "anthropic-messages",
      provider: "anthropic",
      model: "claude-sonnet-4-5",
      usage: { input: 12, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 17 },
      stopReason: "stop",
      timestamp: USER_TIME + offset,
    },
  };
}

/** How long a test waits for a notification: generous, since CI runs on two busy cores and a
 * bound is only reached when something is wrong (the same as tests/support/timeouts.py's). */
export const EVENT_TIMEOUT_MS = 30_000;

/** Resolves with the first value `subscribe` delivers that satisfies `test`, or fails after `ms`. */
export function waitFor<T>(
  subscribe: (listener: (value: T) => void) => { dispose(): void },
  test: (value: T) => boolean,
  ms = EVENT_TIMEOUT_MS,
): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      subscription.dispose();
      reject(new Error(`nothing arrived within ${ms} ms`));
    }, ms);
    const subscription = subscribe((value) => {
      if (!test(value)) return;
      clearTimeout(timer);
      subscription.dispose();
      resolvePromise(value);
    });
  });
}
