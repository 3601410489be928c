import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ServerCommand,
  formatDuration,
  readLoadTracesArgument,
  readRuleExplanation,
  readSlowestCallbacks,
  readTimelineLink,
  readTimelinePage,
  readTraceStatus,
} from "../src/protocol";

describe("readers of the server's JSON", () => {
  it("reads a TraceStatus and tolerates missing fields", () => {
    expect(readTraceStatus({ files: 1, cycles: 100, unmapped_reasons: { r: 2 }, errors: ["e"] })).toEqual({
      files: 1,
      samples: 0,
      cycles: 100,
      callbacks_mapped: 0,
      callbacks_unmapped: 0,
      unmapped_reasons: { r: 2 },
      errors: ["e"],
      runtime_devices: 0,
      runtime_mapped: 0,
    });
    expect(readTraceStatus(null).files).toBe(0);
    expect(readTraceStatus({ files: 1, runtime_devices: 3, runtime_mapped: 2 })).toMatchObject({ runtime_devices: 3, runtime_mapped: 2 });
  });

  it("reads slowestCallbacks and drops entries without a phase", () => {
    const data = readSlowestCallbacks({
      callbacks: [
        { driver: "foo", phase: "suspend", median_us: 10, source: { uri: "file:///a.c", path: "/a.c", line: 3, function: "f" } },
        { driver: "nophase" },
      ],
      phases: [{ phase: "suspend", cycles: 2, mean_us: 5, sd_us: 1 }],
      status: { files: 1 },
    });
    expect(data.callbacks).toHaveLength(1);
    expect(data.callbacks[0]!.source).toEqual({ uri: "file:///a.c", path: "/a.c", line: 3, function: "f" });
    expect(data.phases[0]!.phase).toBe("suspend");
    expect(data.status.files).toBe(1);
  });

  it("reads a rule explanation or nothing", () => {
    expect(readRuleExplanation({ id: "r", title: "T", markdown: "m" })?.title).toBe("T");
    expect(readRuleExplanation(null)).toBeNull();
  });
});

describe("readLoadTracesArgument", () => {
  it("accepts a path, a list, {paths}, and explorer Uris", () => {
    expect(readLoadTracesArgument("/t/a_dmesg.txt")).toEqual(["/t/a_dmesg.txt"]);
    expect(readLoadTracesArgument(["/a", "/b", "/a"])).toEqual(["/a", "/b"]);
    expect(readLoadTracesArgument({ paths: ["/c"] })).toEqual(["/c"]);
    expect(readLoadTracesArgument({ fsPath: "/d" }, [[{ fsPath: "/d" }, { fsPath: "/e" }]])).toEqual(["/d", "/e"]);
  });

  it("returns undefined when the command should open the picker", () => {
    expect(readLoadTracesArgument(undefined)).toBeUndefined();
    expect(readLoadTracesArgument("")).toBeUndefined();
    expect(readLoadTracesArgument({ paths: [] })).toBeUndefined();
  });
});

describe("formatDuration", () => {
  it("formats as the server does, from the shared table test-fixtures/durations.json", () => {
    const table = JSON.parse(
      readFileSync(join(__dirname, "..", "..", "test-fixtures", "durations.json"), "utf8"),
    ) as { cases: [number, string][] };
    expect(table.cases.length).toBeGreaterThan(5);
    for (const [us, text] of table.cases) expect(formatDuration(us)).toBe(text);
    expect(formatDuration(Number.NaN)).toBe("-");
  });
});

describe("package.json contributions", () => {
  it("never reuse a server command id (the language client registers those itself)", () => {
    const manifest = JSON.parse(readFileSync(join(__dirname, "..", "..", "package.json"), "utf8"));
    const ours: string[] = manifest.contributes.commands.map((c: { command: string }) => c.command);
    expect(ours).toContain("dpmlens.loadTraceFiles");
    for (const id of Object.values(ServerCommand)) expect(ours).not.toContain(id);
  });
});

describe("timeline page", () => {
  it("reads the server's page and only path:line links from it", () => {
    expect(readTimelinePage({ html: "<html></html>", files: ["/t/a.txt", 3] })).toEqual({ html: "<html></html>", files: ["/t/a.txt"] });
    expect(readTimelinePage({ html: "" })).toBeNull();
    expect(readTimelinePage(null)).toBeNull();
    expect(readTimelineLink({ open: "/src/drivers/usb/core/hub.c:3173" })).toEqual({ path: "/src/drivers/usb/core/hub.c", line: 3172 });
    expect(readTimelineLink({ open: "C:/x/y.c:1" })).toEqual({ path: "C:/x/y.c", line: 0 });
    expect(readTimelineLink({ open: "no-line" })).toBeNull();
    expect(readTimelineLink({ open: 5 })).toBeNull();
    expect(readTimelineLink("x")).toBeNull();
  });
});
