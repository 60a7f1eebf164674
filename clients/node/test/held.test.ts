// HeldContext against the real daemon: whatever happens to the session between two reads
// (turns, branches, context edits, compactions, another daemon's appends, a forged or stale
// cursor), the context it holds after applying the daemon's deltas is the whole context.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { HeldContext, type SessionTreeClient } from "../src";
import { assistant, sandbox, user, type Sandbox } from "./support";

/** A seeded generator (mulberry32): a failing run can be replayed. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const toolResult = (text: string) => ({
  type: "message",
  message: { role: "toolResult", toolCallId: "c1", toolName: "read", content: [{ type: "text", text }], isError: false, timestamp: 3 },
});

describe("HeldContext", () => {
  let box: Sandbox;
  let a: SessionTreeClient;
  let b: SessionTreeClient;

  before(async () => {
    box = await sandbox();
    [a, b] = [await box.start(), await box.start()];
  });
  after(() => box.cleanup());

  async function pathIds(sessionId: string, editable = false): Promise<string[]> {
    const leaf = (await a.info({ sessionId })).leafId;
    const { entries } = await a.entries({ sessionId, pathTo: leaf });
    const chosen = editable
      ? entries.filter((e) => e.type === "message" && (e.message as { role: string }).role !== "system")
      : entries;
    return chosen.map((entry) => entry.id as string);
  }

  for (const seed of [1, 2, 3]) {
    it(`holds the whole context through a random run (seed ${seed})`, async () => {
      const next = random(seed);
      const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!;
      const { sessionId, path } = await a.create({ cwd: "/work/project" });
      await a.append({ sessionId, entry: user("root") });
      await b.open({ path });
      const agent = new HeldContext(a, sessionId);
      const llm = new HeldContext(a, sessionId, { format: "llm", tokens: true });
      const before: [string | undefined, unknown[]][] = [];
      let count = 0;
      for (let step = 0; step < 30; step++) {
        const text = `t${++count}`;
        switch (pick(["turn", "turn", "branch", "edit", "compaction", "other", "forged", "stale"])) {
          case "turn": {
            await a.append({ sessionId, entry: user(text) });
            await a.append({ sessionId, entry: assistant(text) });
            const { context, leafId } = await agent.append({ sessionId, entry: toolResult(text) });
            assert.equal(context.leafId, leafId);
            break;
          }
          case "branch":
            await a.branch({ sessionId, entryId: pick(await pathIds(sessionId)), summary: next() < 0.5 ? "back" : null });
            break;
          case "edit": {
            const replacement = next() < 0.5 ? null : { content: `edited ${text}` };
            await a.editContext({ sessionId, targetId: pick(await pathIds(sessionId, true)), replacement });
            break;
          }
          case "compaction": {
            const entry = { type: "compaction", summary: `S ${text}`, tokensBefore: 9, firstKeptEntryId: pick(await pathIds(sessionId)) };
            await a.append({ sessionId, entry });
            break;
          }
          case "other":
            await b.append({ sessionId, entry: user(`b ${text}`) });
            break;
          case "forged": {
            const [generation, held, format, check] = (agent.cursor ?? "").split(".");
            agent.cursor = pick([`${generation}.${Number(held) - 1}.${format}.${check}`, `${generation}.${held}.l.${check}`, "x"]);
            agent.messages.push({ role: "user", content: "not in the session" });
            break;
          }
          case "stale": {
            const [cursor, messages] = pick(before.length ? before : [[undefined, []]]);
            agent.cursor = cursor;
            agent.messages = messages.slice();
            break;
          }
        }
        const whole = await a.context({ sessionId });
        const got = await agent.read();
        assert.deepEqual(got.messages, whole.messages);
        assert.deepEqual(agent.messages, whole.messages);
        assert.equal(got.leafId, whole.leafId);
        const wholeLlm = await a.context({ sessionId, format: "llm", tokens: true });
        const gotLlm = await llm.read();
        assert.deepEqual(gotLlm.messages, wholeLlm.messages);
        assert.deepEqual(gotLlm.tokens, wholeLlm.tokens);
        before.push([agent.cursor, agent.messages.slice()]);
      }
    });
  }

  it("a turn's answer carries only its messages", async () => {
    const { sessionId } = await a.create({ cwd: "/work/project" });
    await a.append({ sessionId, entry: user("root") });
    const held = new HeldContext(a, sessionId);
    assert.equal((await held.read()).messages.length, 1);
    await a.append({ sessionId, entry: user("q") });
    await a.append({ sessionId, entry: assistant("a") });
    const raw = await a.append({ sessionId, entry: toolResult("r"), context: { since: held.cursor } });
    assert.equal(raw.context?.reset, false);
    assert.deepEqual(raw.context?.messages.map((m) => (m as { role: string }).role), ["user", "assistant", "toolResult"]);
  });
});
