// Prepackage step: stage the Python server (package + rules/ + grammars/) in a temporary
// directory and build its wheel into bundled/, which the .vsix ships and serverEnv.ts installs from.
//
// rules/ and grammars/ go under dpmlens/data/ so that dpmlens.core.paths finds them in an
// installed server (see server/dpmlens/core/paths.py).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const top = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const out = join(top, "bundled");
const stage = mkdtempSync(join(tmpdir(), "dpmlens-stage-"));

function fail(message) {
  rmSync(stage, { recursive: true, force: true });
  console.error(`bundle-server: ${message}`);
  process.exit(1);
}

const skip = (src) => !/(__pycache__|\.pyc$|\.egg-info)/.test(src);

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
cpSync(join(top, "server", "dpmlens"), join(stage, "dpmlens"), { recursive: true, filter: skip });
for (const dir of ["rules", "grammars"]) {
  const src = join(top, dir);
  if (!existsSync(src)) fail(`${src} is missing`);
  cpSync(src, join(stage, "dpmlens", "data", dir), { recursive: true, filter: skip });
}
cpSync(join(top, "README.md"), join(stage, "README.md"));

// The checkout's pyproject points its readme one level up and ships no data files; the staged
// copy is self-contained and declares dpmlens/data/** as package data (beside the package's
// own data files, such as traces/*.yaml).
let pyproject = readFileSync(join(top, "server", "pyproject.toml"), "utf8");
pyproject = pyproject.replace(/^readme\s*=.*$/m, 'readme = "README.md"');
if (pyproject.includes("[tool.setuptools.package-data]")) {
  pyproject = pyproject.replace(/^dpmlens = \[/m, 'dpmlens = ["data/**/*", ');
} else {
  pyproject += '\n[tool.setuptools.package-data]\ndpmlens = ["data/**/*"]\n';
}
writeFileSync(join(stage, "pyproject.toml"), pyproject);
writeFileSync(join(stage, "MANIFEST.in"), "recursive-include dpmlens/data *\n");

const python =
  process.env.DPMLENS_BUILD_PYTHON ??
  (existsSync(join(top, ".venv", "bin", "python")) ? join(top, ".venv", "bin", "python") : "python3");
try {
  execFileSync(
    python,
    ["-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", out, stage],
    { stdio: ["ignore", "inherit", "inherit"], env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1" } },
  );
} catch (err) {
  fail(`building the server wheel with ${python} failed: ${err.message}`);
}
rmSync(stage, { recursive: true, force: true });

const wheels = readdirSync(out).filter((f) => f.endsWith(".whl"));
if (wheels.length !== 1) fail(`expected one wheel in ${out}, found ${wheels.join(", ") || "none"}`);
const wheel = wheels[0];

// A wheel without the rule data would install a server that finds no rules: refuse it.
const listing = execFileSync(python, ["-m", "zipfile", "-l", join(out, wheel)], { encoding: "utf8" });
for (const dir of ["rules", "grammars"]) {
  const hasFiles = readdirSync(join(top, dir)).length > 0;
  if (hasFiles && !listing.includes(`dpmlens/data/${dir}/`)) fail(`${wheel} lacks dpmlens/data/${dir}/`);
}

const sha256 = createHash("sha256").update(readFileSync(join(out, wheel))).digest("hex");
const version = wheel.split("-")[1];
writeFileSync(join(out, "manifest.json"), JSON.stringify({ wheel, version, sha256 }, null, 2) + "\n");
console.log(`bundle-server: ${wheel} (${version}, sha256 ${sha256.slice(0, 12)})`);
