// Where the pinned pi lives: read from package.json, the one place that names its version.
//
// package.json's dependency on `<scope>/pi-coding-agent` picks the package; its sister packages
// (pi-ai, …) sit under the same scope. The next release is a one-line change to package.json.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const manifest = JSON.parse(readFileSync(join(HERE, "package.json"), "utf8"));

/** The package name, e.g. "@earendil-works/pi-coding-agent". */
export const PI_NAME = Object.keys(manifest.dependencies).find((name) => name.endsWith("/pi-coding-agent"));
/** The version package.json pins (exactly). */
export const PI_VERSION = manifest.dependencies[PI_NAME];
export const PI_SCOPE = PI_NAME.split("/")[0];
export const PI_DIR = join(HERE, "node_modules", PI_NAME);
export const PI_AI_DIR = join(HERE, "node_modules", PI_SCOPE, "pi-ai");
/** dist/core/<relative> of the pinned pi. */
export const piCore = (relative) => join(PI_DIR, "dist", "core", relative);
