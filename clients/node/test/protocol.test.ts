// The TypeScript types come from the schema the Python side generates and tests; these keep the
// generated file current and the library's surface equal to the schema's methods.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CLIENT_REQUEST_NAMES, ErrorCodes, METHOD_NAMES, NOTIFICATION_NAMES, SessionTreeError } from "../src";
import { sandbox } from "./support";
import { daemonCommand, parseCommand } from "../src";

const PACKAGE = join(__dirname, "..", "..");
const schema = JSON.parse(readFileSync(join(PACKAGE, "src", "protocol.schema.json"), "utf8")) as {
  methods: Record<string, unknown>;
  notifications: Record<string, unknown>;
  clientRequests: Record<string, unknown>;
  errors: Record<string, number>;
};

describe("types from the schema", () => {
  it("src/protocol.ts is what the schema generates", () => {
    execFileSync(process.execPath, [join(PACKAGE, "scripts", "generate-types.mjs"), "--check"], { stdio: "pipe" });
  });

  it("the generated tables list the schema's methods, notifications, requests and errors", () => {
    assert.deepEqual([...METHOD_NAMES], Object.keys(schema.methods));
    assert.deepEqual([...NOTIFICATION_NAMES], Object.keys(schema.notifications));
    assert.deepEqual([...CLIENT_REQUEST_NAMES], Object.keys(schema.clientRequests));
    assert.deepEqual({ ...ErrorCodes }, schema.errors);
    assert.ok(CLIENT_REQUEST_NAMES.includes("sessiontree/summarize"));
  });

  it("the client has a function for every method, calling that method", async () => {
    const box = await sandbox();
    try {
      const client = await box.start();
      const functions = client as unknown as Record<string, (params: unknown) => Promise<unknown>>;
      for (const method of METHOD_NAMES) {
        const name = method.slice("session/".length);
        assert.equal(typeof functions[name], "function", name);
        // Empty params reach the daemon under the right method: it names the method in its answer.
        const error = await functions[name]!({}).catch((caught: unknown) => caught);
        assert.ok(error instanceof SessionTreeError && error.is("InvalidParams") || method === "session/list", method);
        if (method !== "session/list") assert.match((error as Error).message, new RegExp(method.replace("/", "\\/")));
      }
    } finally {
      await box.cleanup();
    }
  });
});

describe("the daemon command", () => {
  it("reads SESSIONTREE_COMMAND as JSON or words, else SESSIONTREE_PYTHON, else PATH", () => {
    assert.deepEqual(daemonCommand({ SESSIONTREE_COMMAND: '["/opt/py dir/python", "-m", "sessiontree", "serve"]' }), [
      "/opt/py dir/python",
      "-m",
      "sessiontree",
      "serve",
    ]);
    assert.deepEqual(daemonCommand({ SESSIONTREE_COMMAND: " sessiontree  serve --debug " }), ["sessiontree", "serve", "--debug"]);
    assert.deepEqual(daemonCommand({ SESSIONTREE_PYTHON: "/venv/bin/python" }), ["/venv/bin/python", "-m", "sessiontree", "serve"]);
    assert.deepEqual(daemonCommand({}), ["sessiontree", "serve"]);
    assert.throws(() => parseCommand("[]"));
    assert.throws(() => parseCommand('["a", 1]'));
  });
});
