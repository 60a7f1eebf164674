// Appends to a session file through pi's own SessionManager, as pi does while a daemon has the
// file open: no lock, one write per entry.
//
// Usage: node pi_appender.mjs FILE COUNT CHARS
// Opens FILE with SessionManager.open and appends COUNT user/assistant pairs of CHARS characters
// each; prints one JSON line: the ids pi wrote, in order.
import { pathToFileURL } from "node:url";
import { piCore } from "./pi_package.mjs";

const { SessionManager } = await import(pathToFileURL(piCore("session-manager.js")).href);

const [path, count, chars] = process.argv.slice(2);
const sm = SessionManager.open(path);
const ids = [];
for (let i = 0; i < Number(count); i++) {
  const text = `pi ${i} `.padEnd(Number(chars), "x");
  ids.push(sm.appendMessage({ role: "user", content: text, timestamp: Date.now() }));
  ids.push(
    sm.appendMessage({
      role: "assistant",
      content: [{ type: "text", text }],
      api: "messages",
      provider: "test",
      model: "test",
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
      stopReason: "stop",
      timestamp: Date.now(),
    }),
  );
}
process.stdout.write(JSON.stringify(ids) + "\n");
