import { describe, expect, it } from "vitest";
import { expandVariables, mapPath, normalizeMappings } from "../src/pathMapping";

const ctx = {
  workspaceFolders: [
    { name: "linux", path: "/home/dev/linux" },
    { name: "next", path: "/home/dev/linux-next" },
  ],
  userHome: "/home/dev",
};

describe("expandVariables", () => {
  it("expands workspace folders, the home directory, env and ~", () => {
    expect(expandVariables("${workspaceFolder}/drivers", ctx).value).toBe("/home/dev/linux/drivers");
    expect(expandVariables("${workspaceFolder:next}", ctx).value).toBe("/home/dev/linux-next");
    expect(expandVariables("${userHome}/x", ctx).value).toBe("/home/dev/x");
    expect(expandVariables("~/x", ctx).value).toBe("/home/dev/x");
    expect(expandVariables("a~b", ctx).value).toBe("a~b");
    expect(expandVariables("${env:KSRC}/y", ctx, { KSRC: "/src" }).value).toBe("/src/y");
  });

  it("leaves unknown variables in place and reports missing folders", () => {
    expect(expandVariables("${cwd}/x", ctx)).toEqual({ value: "${cwd}/x", errors: [] });
    const none = expandVariables("${workspaceFolder}", { workspaceFolders: [], userHome: "/h" });
    expect(none.value).toBe("${workspaceFolder}");
    expect(none.errors[0]).toContain("no folder is open");
  });
});

describe("mapPath", () => {
  const { mappings } = normalizeMappings(
    [
      { from: "/build/linux", to: "${workspaceFolder}" },
      { from: "/build/linux/drivers/staging", to: "/home/dev/staging" },
    ],
    ctx,
  );

  it("maps on the longest matching prefix", () => {
    expect(mapPath("/build/linux/drivers/i2c/foo.c", mappings)).toBe("/home/dev/linux/drivers/i2c/foo.c");
    expect(mapPath("/build/linux/drivers/staging/bar.c", mappings)).toBe("/home/dev/staging/bar.c");
    expect(mapPath("/build/linux", mappings)).toBe("/home/dev/linux");
  });

  it("matches whole path segments only and leaves unmatched paths alone", () => {
    expect(mapPath("/build/linux-next/foo.c", mappings)).toBe("/build/linux-next/foo.c");
    expect(mapPath("relative/foo.c", mappings)).toBe("relative/foo.c");
    expect(mapPath("/build/linux/x.c", [])).toBe("/build/linux/x.c");
  });

  it("accepts Windows separators in recorded paths", () => {
    expect(mapPath("/build/linux\\drivers\\a.c", mappings)).toBe("/home/dev/linux/drivers/a.c");
  });

  it("rejects a non-list setting with one message", () => {
    expect(normalizeMappings({ from: "/a", to: "/b" }, ctx).errors).toEqual([
      'dpmlens.pathMappings must be a list of {"from", "to"} objects',
    ]);
  });
});
