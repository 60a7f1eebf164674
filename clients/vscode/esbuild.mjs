// Bundles the extension and everything it imports (the Node library, vscode-jsonrpc) into one
// file, dist/extension.js, so that the .vsix needs no node_modules. `vscode` is the host's.
import { build } from "esbuild";

const result = await build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  external: ["vscode"],
  outfile: "dist/extension.js",
  minify: true,
  keepNames: true,
  legalComments: "external",
  metafile: true,
  logLevel: "warning",
});
const inputs = Object.keys(result.metafile.inputs);
if (!inputs.some((input) => input.includes("vscode-jsonrpc")) || !inputs.some((input) => /(^|\/)node\/out\/src\/client\.js$/.test(input))) {
  throw new Error(`the bundle lacks the Node library: ${inputs.join(", ")}`);
}
