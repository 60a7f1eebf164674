// The context document is what `sessiontree context` prints: both renderings of the same
// sessions, the shipped example and one with every kind of message, compared line for line.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { SessionTreeClient } from "sessiontree-client";
import { renderContext } from "../src/render";
import { daemon } from "./support";

const REPO = resolve(__dirname, "..", "..", "..", "..");
const PYTHON = process.env.SESSIONTREE_PYTHON ?? join(REPO, ".venv", "bin", "python");

function cli(...args: string[]): string {
  return execFileSync(PYTHON, ["-m", "sessiontree", "context", ...args], { encoding: "utf8" });
}

const assistant = (content: unknown[]) => ({
  type: "message",
  message: {
    role: "assistant",
    content,
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: { input: 10, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 15 },
    stopReason: "toolUse",
    timestamp: 2,
  },
});

describe("context rendering", { skip: existsSync(PYTHON) ? false : `no Python at ${PYTHON}` }, () => {
  let dir: string;
  let client: SessionTreeClient;

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "sessiontree-render-")));
    client = await SessionTreeClient.start({ command: daemon(), sessionsDir: dir });
  });
  after(async () => {
    await client.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("renders the example session as the command does", async () => {
    mkdirSync(join(dir, "example"));
    const path = join(dir, "example", "demo-session.jsonl");
    copyFileSync(join(REPO, "clients", "examples", "demo-session.jsonl"), path);
    const { sessionId } = await client.open({ path });
    assert.equal(renderContext(await client.context({ sessionId })), cli(path));
    assert.equal(renderContext(await client.context({ sessionId, format: "llm" })), cli(path, "--format", "llm"));
    // At another leaf, and at none.
    assert.equal(renderContext(await client.context({ sessionId, leafId: "2c3d4e5f" })), cli(path, "--leaf", "2c3d4e5f"));
    assert.equal(renderContext(await client.context({ sessionId, leafId: null })).split("\n")[0], "# model: none  thinking: off  leaf: None");
  });

  it("renders every kind of message as the command does", async () => {
    const { sessionId, path } = await client.create({ cwd: "/work/kinds" });
    await client.append({
      sessionId,
      entries: [
        { type: "model_change", provider: "openai", modelId: "gpt-5" },
        { type: "thinking_level_change", thinkingLevel: "high" },
        {
          type: "message",
          message: {
            role: "user",
            content: [
              { type: "text", text: "Look at this\r\nand this\u2028too" },
              { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
              { type: "image", data: "iVBORw0KGgo=" },
            ],
            timestamp: 1,
          },
        },
        assistant([
          { type: "thinking", thinking: "The user wants a look." },
          { type: "text", text: "" },
          { type: "toolCall", id: "t1", name: "read", arguments: { path: "é/ü.py", lines: [1, 2.5], deep: { ok: true, none: null } } },
          { type: "redacted_thinking", data: "x" },
        ]),
        {
          type: "message",
          message: { role: "toolResult", toolCallId: "t1", toolName: "read", content: [{ type: "text", text: "print('hi')\n" }], isError: false, timestamp: 3 },
        },
        {
          type: "message",
          message: { role: "bashExecution", command: "ls -la", output: "a\nb\n", exitCode: 0, cancelled: false, truncated: false, timestamp: 4 },
        },
        { type: "custom_message", customType: "note", content: "A note\n\nwith a gap", display: true },
        { type: "message", message: { role: "user", content: "", timestamp: 5 } },
        { type: "message", message: { role: "user", content: "\n", timestamp: 6 } },
      ],
    });
    const { leafId } = await client.branch({ sessionId, entryId: (await client.info({ sessionId })).leafId, summary: "Went elsewhere." });
    assert.ok(leafId);
    for (const format of ["agent", "llm"] as const) {
      assert.equal(renderContext(await client.context({ sessionId, format })), cli(path, "--format", format), format);
    }
  });
});
