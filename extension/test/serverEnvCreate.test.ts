// ensureServerEnv for real: a venv is created with the base python3, a small wheel (built here,
// no dependencies, so pip needs no index) is installed, the env is reused, and re-created when
// the bundled wheel changes.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ensureServerEnv, existingServerEnv } from "../src/serverEnv";
import { probePython } from "../src/python";

const dir = mkdtempSync(join(tmpdir(), "dpmlens-envcreate-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a minimal but valid wheel of a package `dpmlens` with a `dpmlens` console script. */
function buildWheel(bundleDir: string, marker: string): void {
  mkdirSync(bundleDir, { recursive: true });
  const script = `
import base64, hashlib, json, sys, zipfile
out, marker = sys.argv[1], sys.argv[2]
name = "dpmlens-0.1.0-py3-none-any.whl"
files = {
    "dpmlens/__init__.py": f"MARKER = {marker!r}\\n",
    "dpmlens/cli.py": "def main():\\n    print('serve stub')\\n",
    "dpmlens-0.1.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: dpmlens\\nVersion: 0.1.0\\n",
    "dpmlens-0.1.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
    "dpmlens-0.1.0.dist-info/entry_points.txt": "[console_scripts]\\ndpmlens = dpmlens.cli:main\\n",
}
record = []
with zipfile.ZipFile(f"{out}/{name}", "w") as z:
    for path, text in files.items():
        data = text.encode()
        z.writestr(path, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append("dpmlens-0.1.0.dist-info/RECORD,,")
    z.writestr("dpmlens-0.1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
sha = hashlib.sha256(open(f"{out}/{name}", "rb").read()).hexdigest()
json.dump({"wheel": name, "version": "0.1.0", "sha256": sha}, open(f"{out}/manifest.json", "w"))
`;
  execFileSync("python3", ["-c", script, bundleDir, marker]);
}

describe("ensureServerEnv (real venv + pip)", () => {
  it("creates the environment once, reuses it, and re-creates it for a new bundle", async () => {
    const base = await probePython("python3");
    const bundleDir = join(dir, "bundled");
    const storageDir = join(dir, "storage");
    buildWheel(bundleDir, "first");
    const progress: string[] = [];
    const opts = { basePython: base, bundleDir, storageDir, log: () => undefined, progress: (m: string) => progress.push(m) };

    expect(await existingServerEnv(opts)).toBeUndefined();
    const created = await ensureServerEnv(opts);
    expect(created.created).toBe(true);
    expect(existsSync(created.serverCommand[0]!)).toBe(true);
    expect(created.serverCommand[1]).toBe("serve");
    expect(progress.some((m) => m.startsWith("Creating a Python"))).toBe(true);
    expect(progress.some((m) => m.startsWith("Installing dpmlens 0.1.0"))).toBe(true);
    const marker = () => execFileSync(created.python, ["-c", "import dpmlens; print(dpmlens.MARKER)"], { encoding: "utf8" }).trim();
    expect(marker()).toBe("first");

    const reused = await ensureServerEnv(opts);
    expect(reused.created).toBe(false);
    expect((await existingServerEnv(opts))?.envDir).toBe(created.envDir);

    // A new extension version ships another wheel: the old environment is not used any more.
    buildWheel(bundleDir, "second");
    expect(await existingServerEnv(opts)).toBeUndefined();
    const recreated = await ensureServerEnv(opts);
    expect(recreated.created).toBe(true);
    expect(marker()).toBe("second");
  }, 120_000);

  it("fails with the tail of pip's output when the wheel cannot be installed", async () => {
    const bundleDir = join(dir, "broken");
    mkdirSync(bundleDir, { recursive: true });
    writeFileSync(join(bundleDir, "dpmlens-0.1.0-py3-none-any.whl"), "not a zip");
    writeFileSync(join(bundleDir, "manifest.json"), JSON.stringify({ wheel: "dpmlens-0.1.0-py3-none-any.whl", version: "0.1.0", sha256: "x" }));
    const base = await probePython("python3");
    await expect(
      ensureServerEnv({ basePython: base, bundleDir, storageDir: join(dir, "storage-broken"), log: () => undefined, progress: () => undefined }),
    ).rejects.toThrow(/exited with \d+/);
    // The stamp is written last, so a failed install never counts as an environment.
    expect(await existingServerEnv({ basePython: base, bundleDir, storageDir: join(dir, "storage-broken") })).toBeUndefined();
  }, 120_000);
});
