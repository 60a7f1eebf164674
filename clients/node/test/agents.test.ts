// Other agents' sessions through the library: every summary says whose it is, and session/import
// answers per path (a daemon without an agent's translator reads no agent folder).
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { SessionTreeClient } from "../src";
import { sandbox, type Sandbox } from "./support";

describe("other agents' sessions", () => {
  let box: Sandbox;
  let client: SessionTreeClient;

  before(async () => {
    box = await sandbox();
    client = await box.start({ args: ["--claude-code-dir", join(box.dir, "claude"), "--codex-dir", "off"] });
  });
  after(() => box.cleanup());

  it("lists pi's sessions with agent \"pi\"", async () => {
    const created = await client.create({ cwd: "/work/project" });
    const { sessions } = await client.list({});
    assert.deepEqual(sessions.map((s) => [s.path, s.agent]), [[created.path, "pi"]]);
  });

  it("import reports a path in no agent folder as failed, and writes nothing", async () => {
    const stray = join(box.dir, "stray.jsonl");
    const result = await client.import({ paths: [stray] });
    assert.deepEqual(result.imported, []);
    assert.equal(result.failed.length, 1);
    assert.equal(result.failed[0]!.source, stray);
    assert.match(result.failed[0]!.error, /none of the agents' folders/);
    assert.equal((await client.list({})).sessions.length, 1);
  });
});
