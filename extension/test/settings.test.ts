import { describe, expect, it } from "vitest";
import { DEFAULTS, toServerSettings, toggledEnable } from "../src/settings";

const ctx = { workspaceFolders: [{ name: "linux", path: "/home/dev/linux" }], userHome: "/home/dev" };
const reader = (values: Record<string, unknown>) => (key: string) => values[key];

describe("toServerSettings", () => {
  it("gives the contract's defaults when nothing is set", () => {
    const { settings, errors } = toServerSettings(reader({}), ctx);
    expect(errors).toEqual([]);
    expect(settings).toEqual(DEFAULTS);
    // The exact keys of docs/lsp-protocol.md; `interpreter` is the client's own business.
    expect(Object.keys(settings).sort()).toEqual(
      ["debounceMs", "enable", "helperDepth", "indexFindings", "logLevel", "pathMappings", "rules", "run", "traceGlobs", "traceLinks", "fleetStore"].sort(),
    );
  });

  it("translates every dpmlens.* setting and expands path variables", () => {
    const { settings, errors } = toServerSettings(
      reader({
        enable: false,
        indexFindings: false,
        interpreter: "/usr/bin/python3.12",
        rules: {
          "wake-setup-in-noirq": { enabled: true, severity: "error" },
          "padded-spec-delay": { enabled: false },
        },
        helperDepth: 5,
        debounceMs: 40,
        traceGlobs: ["**/*.dmesg"],
        traceLinks: " captures/devlink.txt ",
        fleetStore: "/data/fleet",
        pathMappings: [
          { from: "/build/linux/", to: "${workspaceFolder}" },
          { from: "/srv/other", to: "~/other" },
        ],
        logLevel: "debug",
        run: "onSave",
      }),
      ctx,
    );
    expect(errors).toEqual([]);
    expect(settings).toEqual({
      enable: false,
      indexFindings: false,
      rules: {
        "wake-setup-in-noirq": { enabled: true, severity: "error" },
        "padded-spec-delay": { enabled: false },
      },
      helperDepth: 5,
      debounceMs: 40,
      traceGlobs: ["**/*.dmesg"],
      traceLinks: "captures/devlink.txt",
      fleetStore: "/data/fleet",
      pathMappings: [
        { from: "/build/linux", to: "/home/dev/linux" },
        { from: "/srv/other", to: "/home/dev/other" },
      ],
      logLevel: "debug",
      run: "onSave",
    });
    expect(settings).not.toHaveProperty("interpreter");
  });

  it("accepts shorthands for rules: a boolean, a severity, or 'off'", () => {
    const { settings, errors } = toServerSettings(
      reader({ rules: { a: false, b: "Warning", c: "off", d: { severity: "information" } } }),
      ctx,
    );
    expect(errors).toEqual([]);
    expect(settings.rules).toEqual({
      a: { enabled: false },
      b: { severity: "warning" },
      c: { enabled: false },
      d: { severity: "info" },
    });
  });

  it("reports bad values in one line each and keeps going with safe values", () => {
    const { settings, errors } = toServerSettings(
      reader({
        rules: { x: { severity: "fatal", enabled: "yes" }, y: 3 },
        helperDepth: 99,
        debounceMs: "fast",
        traceGlobs: "*.txt",
        traceLinks: 3,
        pathMappings: [{ from: "/a" }, { from: "/b", to: "${workspaceFolder:nope}" }],
        logLevel: "verbose",
        indexFindings: "no",
      }),
      ctx,
    );
    expect(settings.indexFindings).toBe(true);
    expect(settings.helperDepth).toBe(10);
    expect(settings.debounceMs).toBe(150);
    expect(settings.traceGlobs).toEqual(DEFAULTS.traceGlobs);
    expect(settings.traceLinks).toBe("");
    expect(settings.logLevel).toBe("info");
    expect(settings.rules).toEqual({ x: {} });
    expect(settings.pathMappings).toEqual([{ from: "/b", to: "${workspaceFolder:nope}" }]);
    const text = errors.join("\n");
    expect(text).toContain('dpmlens.rules["x"]: unknown severity "fatal"');
    expect(text).toContain('dpmlens.rules["x"].enabled must be true or false');
    expect(text).toContain('dpmlens.rules["y"] must be');
    expect(text).toContain("dpmlens.indexFindings must be true or false");
    expect(text).toContain("dpmlens.helperDepth = 99 is outside 0..10; using 10");
    expect(text).toContain("dpmlens.debounceMs must be a number");
    expect(text).toContain("dpmlens.traceGlobs must be a list");
    expect(text).toContain("dpmlens.traceLinks must be a file path");
    expect(text).toContain('dpmlens.pathMappings[0] needs non-empty "from" and "to"');
    expect(text).toContain('no workspace folder named "nope"');
    expect(text).toContain('dpmlens.logLevel: unknown level "verbose"');
    for (const line of errors) expect(line).not.toContain("\n");
  });

  it("rejects an unknown run mode and keeps onType", () => {
    const { settings, errors } = toServerSettings(reader({ run: "onIdle" }), ctx);
    expect(settings.run).toBe("onType");
    expect(errors).toEqual(['dpmlens.run: unknown mode "onIdle" (expected onType, onSave); using onType']);
  });

  it("lists which settings shared with .dpmlens.toml the user set", () => {
    const set = new Set(["helperDepth", "debounceMs"]);
    const { settings } = toServerSettings(reader({ helperDepth: 4 }), ctx, (key) => set.has(key));
    // rules was not set: the project's .dpmlens.toml keeps its say; debounceMs is editor-only.
    expect(settings.explicitKeys).toEqual(["helperDepth"]);
    expect(toServerSettings(reader({}), ctx).settings).not.toHaveProperty("explicitKeys");
  });
});

describe("toggledEnable", () => {
  it("flips dpmlens.enable, in the workspace when one is open", () => {
    expect(toggledEnable(true, true)).toEqual({ value: false, target: "workspace" });
    expect(toggledEnable(false, true)).toEqual({ value: true, target: "workspace" });
    expect(toggledEnable(undefined, false)).toEqual({ value: false, target: "global" });
  });
});
