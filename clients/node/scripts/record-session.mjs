#!/usr/bin/env node
// A short session through the library, for tests/transcripts/node-client.jsonl: create, a
// conversation, a branch, a label, a compaction summarised by the summarize callback, a fork.
// Run by tests/transcripts/record_clients.py with the daemon command (recording) in
// SESSIONTREE_COMMAND; needs the built library (npm run build).
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { SessionTreeClient } = require("../out/src/index.js");

const T = 1735689600000;
const user = (text, offset) => ({ type: "message", message: { role: "user", content: text, timestamp: T + offset } });
const assistant = (text, offset) => ({
  type: "message",
  message: {
    role: "assistant",
    content: [{ type: "text", text }],
    api: "anthropic-messages",
    provider: "anthropic",
    model: "claude-sonnet-4-5",
    usage: { input: 12, output: 5, cacheRead: 0, cacheWrite: 0, totalTokens: 17 },
    stopReason: "stop",
    timestamp: T + offset,
  },
});

const client = await SessionTreeClient.start({
  summarize: (params) => ({
    summary: `The user asked about the README and the tests (${params.kind}).`,
    ...(params.compaction?.turnPrefixPrompt ? { turnPrefixSummary: "Reading the tests." } : {}),
  }),
});
const { sessionId } = await client.create({ cwd: "/work/demo" });
const first = await client.append({ sessionId, entry: user("Read the README", 1) });
await client.append({ sessionId, entries: [assistant("It describes a session daemon.", 2), user("Now the tests", 3)] });
await client.append({ sessionId, entry: assistant("There are unit and e2e tests.", 4) });
await client.branch({ sessionId, entryId: first.id });
await client.append({ sessionId, entry: assistant("It is short.", 5) });
await client.label({ sessionId, targetId: first.id, label: "start" });
await client.tree({ sessionId });
await client.compact({ sessionId, settings: { keepRecentTokens: 1 } });
await client.context({ sessionId });
const fork = await client.fork({ sessionId, entryId: first.id });
await client.info({ sessionId: fork.sessionId });
process.exitCode = (await client.stop()) === 0 ? 0 : 1;
