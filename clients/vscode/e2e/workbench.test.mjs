// The extension in a real VS Code workbench: the .vsix installed into code-server, the workbench
// operated in Debian's chromium as a person would (activity bar, welcome button, quick pick, the
// view's inline action, its context menu, the status bar, a notification's button), against the
// daemon of this checkout. Run by `make vscode-e2e` (after `make vsix`); screenshots are kept in
// $SESSIONTREE_E2E_ARTIFACTS (default /tmp/sessiontree-vscode-e2e).
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { DAEMON, daemonsFor, EXTENSION_ID, openWorkbench, REPO, until } from "./workbench.mjs";

const ARTIFACTS = process.env.SESSIONTREE_E2E_ARTIFACTS ?? "/tmp/sessiontree-vscode-e2e";
const DEMO = join(REPO, "clients", "examples", "demo-session.jsonl");
const NAME = "Empty input in the parser"; // the example session's session_info

describe("the extension in a real VS Code workbench", () => {
  let dir;
  let sessionsDir;
  let sessionFile;
  let workbench;
  let page;
  let steps = 0;

  // Rows of the Session Tree view, found by what they say to a screen reader: "<title>[, <badges>] (entry <id>)".
  const view = () => page.locator("#workbench\\.view\\.extension\\.sessiontree");
  const row = (id) => view().locator(`.monaco-list-row[aria-label$="(entry ${id})"]`);
  const status = () => page.locator(`[id="${EXTENSION_ID}.sessiontree.status"]`);
  const lines = () => readFileSync(sessionFile, "utf8").trimEnd().split("\n").map((line) => JSON.parse(line));
  const branchRow = (title) => view().locator(`.monaco-list-row[aria-label^="${title}"][aria-label*="(branch from "]`);
  const runRow = (first) => view().locator(`.monaco-list-row[aria-label*="entries, from ${first} to "]`);
  const leafRows = () => view().locator('.monaco-list-row[aria-label*="← leaf"]');

  before(async () => {
    mkdirSync(ARTIFACTS, { recursive: true });
    for (const name of readdirSync(ARTIFACTS)) if (name.startsWith("failure-")) rmSync(join(ARTIFACTS, name));
    dir = realpathSync(mkdtempSync(join(tmpdir(), "sessiontree-vscode-e2e-")));
    sessionsDir = join(dir, "sessions");
    mkdirSync(join(sessionsDir, "--home-user-project--"), { recursive: true });
    sessionFile = join(sessionsDir, "--home-user-project--", "2026-01-01T00-00-00-000Z_demo.jsonl");
    copyFileSync(DEMO, sessionFile);
    const folder = join(dir, "project");
    mkdirSync(folder);
    workbench = await openWorkbench({
      folder,
      settings: {
        "sessiontree.command": [DAEMON, "serve"],
        "sessiontree.sessionsDir": sessionsDir,
        "editor.minimap.enabled": false,
        // The last test types into settings.json: typed text as it is typed.
        "editor.autoClosingBrackets": "never",
        "editor.autoClosingQuotes": "never",
        "editor.autoIndent": "none",
      },
      viewport: { width: 1280, height: 600 },
    });
    page = workbench.page;
    // Notifications come and go (a progress one as fast as the listing): keep every one shown.
    await page.evaluate(() => {
      window.__notifications = [];
      new MutationObserver(() => {
        for (const toast of document.querySelectorAll(".notification-toast")) {
          const text = toast.innerText.replace(/\s+/g, " ").trim();
          if (text && !window.__notifications.includes(text)) window.__notifications.push(text);
        }
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    });
  });

  after(async () => {
    if (workbench) {
      writeFileSync(join(ARTIFACTS, "code-server.log"), workbench.log.join(""));
      await workbench.stop();
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A test whose failure leaves a picture of the workbench as it was then. */
  const step = (name, body) => {
    const number = ++steps;
    it(name, async () => {
      try {
        await body();
      } catch (error) {
        const path = join(ARTIFACTS, `failure-${number}.png`);
        await page?.screenshot({ path }).catch(() => undefined);
        error.message += ` (the workbench then: ${path})`;
        throw error;
      }
    });
  };

  step("installs the .vsix and shows the Session Tree view", async () => {
    assert.match(workbench.log.join(""), /was successfully installed/);
    await page.locator('.activitybar a[aria-label="Session Tree"]').click();
    await view().getByText("No session is open.").waitFor();
  });

  step("opens the example session from the daemon's list, the listing's $/progress in a notification", async () => {
    await view().getByRole("button", { name: "Open Session", exact: true }).click();
    const item = page.locator(".quick-input-list .monaco-list-row", { hasText: NAME });
    await item.waitFor();
    await item.click();
    await row("9d0e1f2a").waitFor();
    // The path to the leaf is the top-level list; the branch point holds the other branch.
    assert.equal(await row("f6a7b8c9").getAttribute("aria-expanded"), "true");
    assert.equal(await branchRow("label: f6a7b8c9: diagnosis").getAttribute("aria-expanded"), "false");
    await row("3d4e5f6a").waitFor();
    // Entries with one child and nothing to show are folded into a run row, opened on demand.
    assert.equal(await runRow("b2c3d4e5").getAttribute("aria-label"), "… 4 entries, from b2c3d4e5 to e5f6a7b8");
    assert.equal(await runRow("b2c3d4e5").getAttribute("aria-expanded"), "false");
    assert.equal(await row("c3d4e5f6").count(), 0);
    await runRow("b2c3d4e5").click();
    await row("c3d4e5f6").waitFor();
    assert.match(await row("c3d4e5f6").getAttribute("aria-label"), /^user: The tests in parser\.py fail on empty input/);
    await runRow("b2c3d4e5").click();
    await until("the run row to close", async () => (await row("c3d4e5f6").count()) === 0, 15_000);
    assert.equal(await leafRows().count(), 1);
    assert.match(await row("9d0e1f2a").getAttribute("aria-label"), /← leaf/);
    assert.equal((await status().innerText()).trim(), `${NAME} · leaf 9d0e1f2a`);
    const shown = await page.evaluate(() => window.__notifications);
    assert.ok(
      shown.some((text) => text.includes("Session Tree: Reading sessions")),
      `no progress notification among ${JSON.stringify(shown)}`,
    );
  });

  step("switches branch from the view: the leaf moves, in the view, the status bar and the context", async () => {
    // Open the other branch and use the row's inline action on its last entry.
    await branchRow("label: f6a7b8c9: diagnosis").click();
    await row("2c3d4e5f").hover();
    await row("2c3d4e5f").locator('a[aria-label="Switch to This Entry"]').click();
    await until("the leaf to move in the view", async () => /← leaf/.test(await row("2c3d4e5f").getAttribute("aria-label")), 15_000);
    assert.equal(await leafRows().count(), 1);
    // The view now follows the new leaf's line; the old one is the branch point's other branch.
    await branchRow("user: On second thought").waitFor();
    assert.equal(await row("9d0e1f2a").count(), 0);
    await until("the status bar", async () => (await status().innerText()).trim() === `${NAME} · leaf 2c3d4e5f`, 15_000);

    // The status bar item opens the context at the leaf: what `sessiontree context` prints there.
    await status().click();
    // Monaco draws spaces as no-break spaces, and no element for an empty line.
    const editorLines = async () =>
      (await page.locator(".editor-instance .view-lines").first().innerText())
        .replace(/\u00a0/g, " ")
        .split("\n")
        .filter((line) => line.trim());
    await until("the context document", async () => (await editorLines())[0]?.endsWith("leaf: 2c3d4e5f"), 15_000);
    const expected = execFileSync(DAEMON, ["context", sessionFile, "--leaf", "2c3d4e5f"], { encoding: "utf8" });
    assert.deepEqual(await editorLines(), expected.split("\n").filter((line) => line.trim()));
    assert.match(await page.locator(".tabs-container .tab.active").innerText(), new RegExp(`${NAME} \\(context\\)`));

    // The picture: a wider sidebar, the other branch open (dimmed: off the leaf's path), the
    // context and the status bar.
    await branchRow("user: On second thought").click();
    await row("9d0e1f2a").waitFor();
    const sash = page.locator(".part.sidebar").boundingBox();
    const box = await sash;
    await page.mouse.move(box.x + box.width - 1, box.y + box.height / 2);
    await page.mouse.down();
    await page.mouse.move(box.x + 470, box.y + box.height / 2, { steps: 5 });
    await page.mouse.up();
    await page.locator(".editor-instance .view-lines").first().click();
    await page.keyboard.press("Control+Home");
    await page.mouse.move(1000, 560);
    await page.waitForTimeout(500);
    await page.screenshot({ path: join(ARTIFACTS, "workbench.png") });
    await page.locator(".part.sidebar").screenshot({ path: join(ARTIFACTS, "view.png") });
  });

  step("labels the entry from its context menu: the file shows that the daemon's leaf moved", async () => {
    const before = lines().length;
    await row("2c3d4e5f").click({ button: "right" });
    const item = page.locator(".monaco-menu .action-label", { hasText: "Label Entry…" });
    await item.waitFor();
    // A menu ignores the release of the click that opened it for a moment; a person is slower.
    await page.waitForTimeout(500);
    await item.click();
    const input = page.locator(".quick-input-widget input:visible");
    await input.fill("chosen");
    await input.press("Enter");
    await until("the label entry in the file", async () => lines().length > before, 15_000);
    const added = lines().slice(before);
    assert.equal(added.length, 1);
    // session/label appends as a child of the leaf: the leaf the view switched to.
    assert.equal(added[0].type, "label");
    assert.equal(added[0].targetId, "2c3d4e5f");
    assert.equal(added[0].label, "chosen");
    assert.equal(added[0].parentId, "2c3d4e5f");
    await until("the label in the view", async () => /\[chosen\]/.test(await row("2c3d4e5f").getAttribute("aria-label")), 15_000);
  });

  step("searches the sessions from the view's title bar, opens the hit picked and selects its entry", async () => {
    // The leaf is now on the other branch: the hit is an entry off its path, in a branch.
    await page.locator('a[aria-label="Search Sessions…"]:visible').first().click();
    const input = page.locator(".quick-input-widget input:visible");
    await input.fill("callers");
    await input.press("Enter");
    const hit = page.locator(".quick-input-list .monaco-list-row", { hasText: "Now check the" });
    await hit.waitFor();
    assert.match(await hit.innerText(), /«callers» of parse/);
    assert.match(await hit.innerText(), /user/);
    assert.match(await hit.innerText(), new RegExp(NAME));
    await hit.click();
    await until("the hit's entry selected in the view", async () => (await row("7b8c9d0e").getAttribute("aria-selected").catch(() => null)) === "true", 15_000);
    assert.match(await row("7b8c9d0e").getAttribute("aria-label"), /^user: Now check the callers of parse/);
    assert.equal((await status().innerText()).trim(), `${NAME} · leaf ${lines().at(-1).id}`, "the leaf did not move");
  });

  step("reports a daemon that died, and restarts it from the notification", async () => {
    const [pid, ...others] = daemonsFor(sessionsDir);
    assert.ok(pid && others.length === 0, `one daemon for the sessions root, found ${[pid, ...others]}`);
    process.kill(pid, "SIGKILL");
    const toast = page.locator(".notification-toast", { hasText: "the daemon was killed" });
    await toast.waitFor();
    await until("the status bar to say so", async () => (await status().innerText()).includes("daemon stopped"), 15_000);
    await toast.getByRole("button", { name: "Restart" }).click();
    // A new daemon has the session open again; the leaf is the file's last entry (the label).
    const last = lines().at(-1).id;
    await until("the session in a new daemon", async () => (await status().innerText()).trim() === `${NAME} · leaf ${last}`, 30_000);
    const [restarted] = daemonsFor(sessionsDir);
    assert.ok(restarted && restarted !== pid);
    await row(last).waitFor();
  });

  step("asks to restart after a settings change; a daemon that cannot start is reported, the old one kept", async () => {
    const settingsFile = join(workbench.userData, "User", "settings.json");
    const settings = JSON.parse(readFileSync(settingsFile, "utf8"));
    const [running] = daemonsFor(sessionsDir);
    // As a person does it: the command palette, settings.json, Save; then the extension asks.
    const changeSettings = async (changed) => {
      await page.keyboard.press("F1");
      await page.locator(".quick-input-widget input:visible").fill(">Preferences: Open User Settings (JSON)");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "Open User Settings (JSON)" }).first().click();
      const editor = page.locator(".editor-instance .view-lines").first();
      await until("settings.json", async () => (await editor.innerText()).includes("sessiontree.sessionsDir"), 15_000);
      await editor.click();
      await page.keyboard.press("Control+A");
      await page.keyboard.press("Delete");
      await page.keyboard.insertText(JSON.stringify(changed));
      await page.keyboard.press("Control+S");
      await until("the file saved", async () => readFileSync(settingsFile, "utf8") === JSON.stringify(changed), 15_000);
      const asked = page.locator(".notification-toast", { hasText: "restart the daemon to use the new settings" });
      await asked.waitFor();
      await asked.getByRole("button", { name: "Restart" }).click();
    };
    await changeSettings({ ...settings, "sessiontree.command": [join(dir, "no-such-daemon"), "serve"] });
    const failed = page.locator(".notification-toast", { hasText: "the daemon did not start" });
    await failed.waitFor();
    assert.match(await failed.innerText(), /no-such-daemon/);
    assert.deepEqual(daemonsFor(sessionsDir), [running], "the running daemon is kept");
    assert.equal((await status().innerText()).trim(), `${NAME} · leaf ${lines().at(-1).id}`);

    await changeSettings(settings);
    await until("a new daemon", async () => {
      const pids = daemonsFor(sessionsDir);
      return pids.length === 1 && pids[0] !== running;
    }, 30_000);
    await until("the session in it", async () => (await status().innerText()).trim() === `${NAME} · leaf ${lines().at(-1).id}`, 30_000);
  });
});
