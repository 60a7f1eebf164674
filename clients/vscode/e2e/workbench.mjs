// A real VS Code workbench for tests: code-server (installed here by install.sh) with the
// extension's .vsix installed into a fresh user-data directory, opened in Debian's chromium
// through playwright-core. Everything it starts is ended by stop(), also after a failure.
import { spawn, execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { chromium } from "playwright-core";

export const HERE = dirname(fileURLToPath(import.meta.url));
export const EXTENSION_DIR = resolve(HERE, "..");
export const REPO = resolve(HERE, "..", "..", "..");
const manifest = JSON.parse(readFileSync(join(EXTENSION_DIR, "package.json"), "utf8"));
export const EXTENSION_ID = `${manifest.publisher}.${manifest.name}`;
export const VSIX = process.env.SESSIONTREE_VSIX ?? join(EXTENSION_DIR, `sessiontree-${manifest.version}.vsix`);
/** The daemon of this checkout, from its virtualenv (make setup). */
export const DAEMON = process.env.SESSIONTREE_BIN ?? join(REPO, ".venv", "bin", "sessiontree");
const CODE_SERVER = join(HERE, "node_modules", "code-server", "out", "node", "entry.js");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

const run = promisify(execFile);

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

async function until(what, check, ms, every = 200) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check().catch(() => undefined);
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((done) => setTimeout(done, every));
  }
}

/**
 * Starts code-server on a free loopback port with the .vsix installed and `settings` in the
 * user's settings.json (`env` added to its environment, which the daemon inherits), and opens
 * `folder` in chromium. Resolves to the page and a stop().
 */
export async function openWorkbench({ folder, settings = {}, env = {}, viewport = { width: 1280, height: 800 } }) {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "sessiontree-workbench-")));
  const userData = join(dir, "user-data");
  const extensions = join(dir, "extensions");
  mkdirSync(join(userData, "User"), { recursive: true });
  writeFileSync(
    join(userData, "User", "settings.json"),
    JSON.stringify(
      {
        // A fresh profile opens the workspace-trust dialog and the welcome page: neither here.
        "security.workspace.trust.enabled": false,
        "workbench.startupEditor": "none",
        "workbench.welcomePage.walkthroughs.openOnInstall": false,
        "workbench.tips.enabled": false,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        "chat.commandCenter.enabled": false,
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "extensions.ignoreRecommendations": true,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "workbench.colorTheme": "Default Dark Modern",
        "window.restoreWindows": "none",
        ...settings,
      },
      null,
      2,
    ),
  );
  const base = ["--user-data-dir", userData, "--extensions-dir", extensions, "--config", join(dir, "config.yaml")];
  const children = [];
  let browser;
  const log = [];
  const stop = async () => {
    await browser?.close().catch(() => undefined);
    for (const child of children) {
      // code-server runs the extension host (and so the daemon) as its children, in its group.
      if (child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(-child.pid, "SIGTERM");
        } catch {}
        const exited = new Promise((done) => child.once("exit", done));
        const timer = setTimeout(() => {
          try {
            process.kill(-child.pid, "SIGKILL");
          } catch {}
        }, 5000);
        await exited;
        clearTimeout(timer);
      }
    }
    if (!process.env.SESSIONTREE_E2E_KEEP) rmSync(dir, { recursive: true, force: true });
  };
  try {
    const installed = await run(process.execPath, [CODE_SERVER, ...base, "--install-extension", VSIX], { timeout: 120_000 });
    log.push(installed.stdout, installed.stderr);
    const port = await freePort();
    const server = spawn(
      process.execPath,
      [CODE_SERVER, ...base, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", folder],
      { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, SESSIONTREE_COMMAND: "", SESSIONTREE_PYTHON: "", ...env } },
    );
    children.push(server);
    server.stdout.on("data", (chunk) => log.push(String(chunk)));
    server.stderr.on("data", (chunk) => log.push(String(chunk)));
    const url = `http://127.0.0.1:${port}`;
    await until("code-server", async () => (await fetch(`${url}/healthz`)).ok, 60_000);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"], timeout: 60_000 });
    const page = await browser.newPage({ viewport });
    page.setDefaultTimeout(30_000);
    await page.goto(`${url}/?folder=${encodeURIComponent(folder)}`, { timeout: 60_000 });
    await page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
    return { page, url, dir, userData, log, stop };
  } catch (error) {
    await stop();
    error.message += `\n--- code-server ---\n${log.join("").slice(-4000)}`;
    throw error;
  }
}

/** The daemons running for a sessions root (the extension host's children), by pid. */
export function daemonsFor(sessionsDir) {
  const pids = [];
  for (const entry of readdirSafe("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
    } catch {
      continue;
    }
    if (cmdline.includes("serve") && cmdline.includes(sessionsDir)) pids.push(Number(entry));
  }
  return pids;
}

function readdirSafe(path) {
  try {
    return readdirSync(path);
  } catch {
    return [];
  }
}

export { until };
