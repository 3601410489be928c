import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { envPaths, existingServerEnv, isCurrent, readManifest, run } from "../src/serverEnv";

const dir = mkdtempSync(join(tmpdir(), "dpmlens-env-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const manifest = { wheel: "dpmlens-0.1.0-py3-none-any.whl", version: "0.1.0", sha256: "abc" };

describe("server environment reuse", () => {
  it("reuses an environment only for the same bundled wheel and base interpreter", () => {
    const stamp = { sha256: "abc", version: "0.1.0", basePython: "/usr/bin/python3", basePythonVersion: "3.11.2" };
    expect(isCurrent(stamp, manifest, "/usr/bin/python3")).toBe(true);
    expect(isCurrent(stamp, { ...manifest, sha256: "def" }, "/usr/bin/python3")).toBe(false);
    expect(isCurrent(stamp, manifest, "/usr/local/bin/python3.12")).toBe(false);
    expect(isCurrent(undefined, manifest, "/usr/bin/python3")).toBe(false);
  });

  it("finds no environment before one was created", async () => {
    const bundleDir = join(dir, "bundled");
    rmSync(bundleDir, { recursive: true, force: true });
    await import("node:fs/promises").then((fs) => fs.mkdir(bundleDir));
    writeFileSync(join(bundleDir, "manifest.json"), JSON.stringify(manifest));
    const env = await existingServerEnv({
      basePython: { executable: "/usr/bin/python3", version: [3, 11, 2] },
      bundleDir,
      storageDir: join(dir, "storage"),
    });
    expect(env).toBeUndefined();
  });

  it("says to reinstall when the bundle manifest is missing or incomplete", async () => {
    await expect(readManifest(join(dir, "nowhere"))).rejects.toThrow(/bundled server is missing or damaged.*reinstall/);
    const partial = join(dir, "partial");
    await import("node:fs/promises").then((fs) => fs.mkdir(partial));
    writeFileSync(join(partial, "manifest.json"), JSON.stringify({ wheel: "x.whl" }));
    await expect(readManifest(partial)).rejects.toThrow("lacks wheel/version/sha256");
  });

  it("lays out the venv per platform", () => {
    expect(envPaths("/s/env", "linux")).toEqual({ python: "/s/env/bin/python", dpmlens: "/s/env/bin/dpmlens" });
    expect(envPaths("/s/env", "win32").dpmlens).toMatch(/Scripts.dpmlens\.exe$/);
  });

  it("runs a process line by line and reports the tail of a failure", async () => {
    const lines: string[] = [];
    await run("python3", ["-c", "print('one'); print('two')"], (l) => lines.push(l));
    expect(lines).toEqual(["one", "two"]);
    await expect(run("python3", ["-c", "import sys; print('boom'); sys.exit(3)"], () => undefined)).rejects.toThrow(
      /exited with 3: boom/,
    );
    await expect(run(join(dir, "missing"), [], () => undefined)).rejects.toThrow("could not be started");
  });
});
