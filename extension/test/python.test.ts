// Interpreter discovery order, run against real processes: fake interpreters are small
// executables that answer the probe like a Python of a given version would.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { discoverPython, discoveryKey, probePython, reusableInterpreter, unsuitableReason } from "../src/python";

let dir: string;
const fake = (name: string, version: number[], venv = true): string => {
  const file = join(dir, name);
  const answer = JSON.stringify({ executable: `/opt/${name}/bin/python`, version, venv });
  writeFileSync(file, `#!/bin/sh\necho '${answer}'\n`);
  chmodSync(file, 0o755);
  return file;
};
let py312: string;
let py38: string;
let py311NoVenv: string;
let notPython: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "dpmlens-python-"));
  py312 = fake("py312", [3, 12, 1]);
  py38 = fake("py38", [3, 8, 10]);
  py311NoVenv = fake("py311novenv", [3, 11, 2], false);
  notPython = join(dir, "notpython");
  writeFileSync(notPython, "#!/bin/sh\necho hello\n");
  chmodSync(notPython, 0o755);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("probePython", () => {
  it("reads version, executable and venv support from a real python3", async () => {
    const info = await probePython("python3");
    expect(info.version[0]).toBe(3);
    expect(info.executable).toMatch(/python/);
    expect(typeof info.canCreateVenv).toBe("boolean");
  });

  it("says 'not found' for a missing command and 'not a Python' for something else", async () => {
    await expect(probePython(join(dir, "missing"))).rejects.toThrow("not found");
    await expect(probePython(notPython)).rejects.toThrow("is not a Python interpreter");
  });
});

describe("discoverPython", () => {
  it("uses the dpmlens.interpreter setting before the Python extension and PATH", async () => {
    let asked = false;
    const result = await discoverPython({
      setting: py312,
      pythonExtension: async () => {
        asked = true;
        return py312;
      },
      pathNames: ["python3"],
    });
    expect(result.interpreter?.source).toBe("setting");
    expect(result.interpreter?.executable).toBe("/opt/py312/bin/python");
    expect(asked).toBe(false);
  });

  it("does not fall back when the explicit setting is unusable, and says why", async () => {
    const result = await discoverPython({ setting: py38, pathNames: ["python3"] });
    expect(result.interpreter).toBeUndefined();
    expect(result.message).toContain('"dpmlens.interpreter" setting');
    expect(result.message).toContain("3.8.10, older than 3.10");
  });

  it("uses the Python extension's interpreter when there is no setting", async () => {
    const result = await discoverPython({ setting: "  ", pythonExtension: async () => py312, pathNames: [py38] });
    expect(result.interpreter?.source).toBe("python-extension");
    expect(result.interpreter?.version).toEqual([3, 12, 1]);
  });

  it("falls back to PATH when the Python extension's interpreter is too old", async () => {
    const result = await discoverPython({ pythonExtension: async () => py38, pathNames: [join(dir, "missing"), py312] });
    expect(result.interpreter?.source).toBe("path");
    expect(result.interpreter?.command).toBe(py312);
    expect(result.rejected.map((r) => r.candidate.source)).toEqual(["python-extension", "path"]);
  });

  it("falls back to PATH when the Python extension has no selection or fails", async () => {
    const none = await discoverPython({ pythonExtension: async () => undefined, pathNames: [py312] });
    expect(none.interpreter?.source).toBe("path");
    const broken = await discoverPython({
      pythonExtension: async () => {
        throw new Error("API not ready");
      },
      pathNames: [py312],
    });
    expect(broken.interpreter?.source).toBe("path");
    expect(broken.rejected[0]?.reason).toContain("API not ready");
  });

  it("finds the real python3 on PATH with the default names", async () => {
    const result = await discoverPython({});
    // This machine's python3 is >= 3.10 (the project needs it), so discovery must succeed.
    expect(result.interpreter?.source).toBe("path");
    expect(result.interpreter!.version[1]).toBeGreaterThanOrEqual(10);
  });

  it("gives one message naming every candidate and what to install when nothing fits", async () => {
    const result = await discoverPython({ pythonExtension: async () => py38, pathNames: [py311NoVenv, join(dir, "nope")] });
    expect(result.interpreter).toBeUndefined();
    expect(result.message).toContain("needs Python 3.10 or newer");
    expect(result.message).toContain(`${py38} is Python 3.8.10, older than 3.10`);
    expect(result.message).toContain("without the venv module (Debian/Ubuntu: apt install python3-venv)");
    expect(result.message).toContain("nope not found");
  });
});

describe("unsuitableReason", () => {
  it("accepts 3.10 and newer with venv, rejects older or venv-less", () => {
    expect(unsuitableReason({ executable: "x", version: [3, 10, 0], canCreateVenv: true })).toBeUndefined();
    expect(unsuitableReason({ executable: "x", version: [4, 0, 0], canCreateVenv: true })).toBeUndefined();
    expect(unsuitableReason({ executable: "x", version: [3, 9, 18], canCreateVenv: true })).toContain("older");
    expect(unsuitableReason({ executable: "x", version: [2, 7, 18], canCreateVenv: true })).toContain("older");
    expect(unsuitableReason({ executable: "x", version: [3, 12, 0], canCreateVenv: false })).toContain("venv");
  });
});

describe("reusableInterpreter", () => {
  const interpreter = {
    executable: "/usr/bin/python3.11",
    version: [3, 11, 2] as [number, number, number],
    canCreateVenv: true,
    source: "path" as const,
    command: "python3",
  };
  const key = discoveryKey("", false);
  const cached = { key, interpreter, mtimeMs: 1000 };

  it("reuses the last answer for the same question and an unchanged executable", () => {
    expect(reusableInterpreter(cached, discoveryKey("  ", false), 1000)).toEqual(interpreter);
  });

  it("rediscovers when the setting, the Python extension or the executable changed", () => {
    expect(reusableInterpreter(cached, discoveryKey("/opt/py/bin/python", false), 1000)).toBeUndefined();
    expect(reusableInterpreter(cached, discoveryKey("", true), 1000)).toBeUndefined();
    expect(reusableInterpreter(cached, key, 2000)).toBeUndefined();
    expect(reusableInterpreter(cached, key, undefined)).toBeUndefined();
    expect(reusableInterpreter(undefined, key, 1000)).toBeUndefined();
  });
});
