// Other agents' sessions in the picker and in the view: marked with the agent, their writes not offered.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { SessionSummary, SessionTreeClient } from "sessiontree-client";
import * as commands from "../src/commands";
import { SessionView } from "../src/session";

const summary = (agent: SessionSummary["agent"]): SessionSummary => ({
  path: `/sessions/${agent}.jsonl`,
  id: "s1",
  cwd: "/home/user/project",
  created: "2026-12-01T10:00:00.000Z",
  modified: "2026-12-01T10:03:00.000Z",
  messageCount: 3,
  firstMessage: "hello",
  agent,
});

describe("other agents' sessions", () => {
  it("marks another agent's session in the picker, and not pi's", () => {
    const claude = commands.sessionItem(summary("claude-code"));
    assert.equal(claude.label, "hello");
    assert.ok(claude.description.startsWith("$(hubot) Claude Code (read-only) · /home/user/project"), claude.description);
    assert.ok(commands.sessionItem(summary("codex")).description.startsWith("$(hubot) Codex (read-only) · "));
    assert.equal(commands.sessionItem(summary("pi")).description, "/home/user/project · 3 messages · 2026-12-01T10:03:00.000Z");
  });

  it("answers a label on a read-only session with why, without asking the daemon", async () => {
    const client = { onDidChange: () => ({ dispose() {} }) } as unknown as SessionTreeClient;
    const view = new SessionView(client);
    view.current = { sessionId: "s1", path: "/c/s1.jsonl", readOnly: "a claude-code session, shown as pi would read it" };
    const warned: string[] = [];
    const ui = { warn: (message: string) => warned.push(message) } as unknown as commands.Ui;
    assert.equal(await commands.label(ui, view, "e1"), undefined);
    assert.deepEqual(warned, ["/c/s1.jsonl is read-only: a claude-code session, shown as pi would read it"]);
  });
});
