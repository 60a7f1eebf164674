// Retiring the open session from the extension: a modal confirmation first, the file moved by the
// daemon (to the trash or the archive, never deleted), the view emptied, and restore opening it again.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { SessionTreeClient } from "sessiontree-client";
import * as retire from "../src/retire";
import { SessionView } from "../src/session";
import { daemon } from "./support";

describe("retiring sessions", () => {
  let dir: string;
  let client: SessionTreeClient;
  let view: SessionView;
  let path: string;
  const asked: [string, string][] = [];
  const answers: boolean[] = [];
  const confirm: retire.Confirm = async (message, action) => {
    asked.push([message, action]);
    return answers.shift() ?? false;
  };

  before(async () => {
    dir = realpathSync(mkdtempSync(join(tmpdir(), "sessiontree-vscode-retire-")));
    process.env.XDG_DATA_HOME = join(dir, "data"); // the daemon's trash, inside the test's directory
    client = await SessionTreeClient.start({ command: daemon(), sessionsDir: join(dir, "sessions") });
    view = new SessionView(client);
    path = (await client.create({ cwd: "/work/retire" })).path;
    await view.open(path);
  });
  after(async () => {
    view.dispose();
    await client.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("moves nothing when the confirmation is declined", async () => {
    answers.push(false);
    assert.equal(await retire.retireSession(view, confirm, "trash"), undefined);
    assert.deepEqual(asked.pop()?.[1], "Move to Trash");
    assert.ok(existsSync(path) && view.current?.path === path);
  });

  it("trashes the open session after the confirmation, and restores it", async () => {
    answers.push(true);
    const moved = await retire.retireSession(view, confirm, "trash");
    assert.equal(moved, join(dir, "data", "Trash", "files", basename(path)));
    assert.ok(!existsSync(path) && existsSync(moved!));
    assert.equal(view.current, undefined);
    assert.equal(await retire.restoreSession(view, path), path);
    assert.ok(existsSync(path) && view.require().path === path);
  });

  it("archives the open session after the confirmation", async () => {
    answers.push(true);
    const moved = await retire.retireSession(view, confirm, "archive");
    assert.equal(moved, join(dir, "sessions", "--work-retire--", ".archive", basename(path)));
    assert.equal(asked.pop()?.[1], "Archive");
    const { sessions } = await client.list({ archived: true });
    assert.deepEqual(sessions.map((session) => session.path), [moved]);
  });
});
