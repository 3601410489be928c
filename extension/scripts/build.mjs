// Bundle the extension into dist/extension.js (one CommonJS file; `vscode` is provided by the host).
import { build } from "esbuild";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const top = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const production = process.argv.includes("--production");

await build({
  entryPoints: [join(top, "extension", "src", "extension.ts")],
  outfile: join(top, "dist", "extension.js"),
  bundle: true,
  platform: "node",
  target: "node20",
  format: "cjs",
  external: ["vscode"],
  sourcemap: production ? false : "linked",
  minify: production,
  logLevel: "warning",
});
