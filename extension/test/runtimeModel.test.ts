import { describe, expect, it } from "vitest";
import { buildRuntimeSection, runtimeCallbackLabels, runtimeSectionLabels, statusText } from "../src/latencyModel";
import { readRuntimeCallback, readSlowestCallbacks, type RuntimeCallback } from "../src/protocol";

// The shape `dpmlens.slowestCallbacks` returns for the 6.12 runtime PM fixture
// (test-fixtures/traces/rpm_6.12_trace_cmd.txt mapped onto rpm_src/foo_i2c.c).
function row(over: Record<string, unknown> & { phase: string; median_us: number }): unknown {
  return {
    driver: "foo_i2c",
    device: "i2c_foo.0",
    parent: "",
    layer: "",
    n: 6,
    min_us: 2800,
    mean_us: 3183.333,
    p95_us: 3800,
    max_us: 4000,
    total_us: 19100,
    source: { uri: "file:///w/foo_i2c.c", path: "/w/foo_i2c.c", line: 19, function: "foo_i2c_runtime_resume" },
    unmapped_reason: null,
    runtime: {
      break_even_us: 4050,
      short_share: 0.6,
      suspended_periods: 5,
      short_periods: 3,
      suspended_us: 663120,
      active_us: 547520,
      autosuspend_median_us: 50100,
      errors: [
        { call: "rpm_resume", name: "-EACCES", count: 1 },
        { call: "rpm_idle", name: "-EAGAIN", count: 1 },
      ],
      nested_median_us: 1510,
      states: "rpm_status",
    },
    ...over,
  };
}

const rows = [
  row({ phase: "runtime_resume", median_us: 3050 }),
  row({
    phase: "runtime_suspend",
    median_us: 1000,
    p95_us: 1150,
    source: { uri: "file:///w/foo_i2c.c", path: "/w/foo_i2c.c", line: 11, function: "foo_i2c_runtime_suspend" },
  }),
  row({
    phase: "runtime_resume",
    driver: "xhci_hcd",
    device: "0000:00:14.0",
    n: 1,
    median_us: 800,
    p95_us: 800,
    source: null,
    unmapped_reason: "driver name not found in source",
    runtime: { break_even_us: 1400, short_share: null, errors: [], autosuspend_median_us: 2000200, states: "rpm_status" },
  }),
];

describe("runtime PM rows", () => {
  it("reads the runtime facts and drops rows without them", () => {
    const r = readRuntimeCallback(rows[0])!;
    expect(r.runtime.short_share).toBe(0.6);
    expect(r.runtime.errors).toHaveLength(2);
    expect(r.source?.function).toBe("foo_i2c_runtime_resume");
    expect(readRuntimeCallback({ phase: "runtime_resume", median_us: 1 })).toBeNull();
    const slow = readSlowestCallbacks({ callbacks: [], phases: [], status: {}, runtime: [...rows, { phase: 3 }] });
    expect(slow.runtime).toHaveLength(3);
    // an older server sends no runtime key
    expect(readSlowestCallbacks({ callbacks: [] }).runtime).toEqual([]);
  });

  it("builds the Runtime PM section: its phases, devices, transitions and errors", () => {
    const runtime = readSlowestCallbacks({ runtime: rows }).runtime;
    const section = buildRuntimeSection(runtime)!;
    expect(section.phases.map((p) => p.phase)).toEqual(["runtime_resume", "runtime_suspend"]);
    expect(section.devices).toBe(2);
    expect(section.transitions).toBe(13);
    expect(section.errors).toBe(2);
    expect(runtimeSectionLabels(section)).toMatchObject({
      label: "Runtime PM",
      description: "2 devices · 13 transitions · 2 errors",
    });
    expect(buildRuntimeSection([])).toBeNull();
  });

  it("labels a runtime callback with transitions, latency and the break-even share", () => {
    const runtime = readSlowestCallbacks({ runtime: rows }).runtime as RuntimeCallback[];
    const resume = buildRuntimeSection(runtime)!.phases[0]!;
    const [foo, xhci] = resume.callbacks;
    const labels = runtimeCallbackLabels(foo!);
    expect(labels.label).toBe("foo_i2c_runtime_resume");
    expect(labels.description).toBe("6 × · median 3.05 ms · p95 3.80 ms · 60% under break-even · 2 errors");
    expect(labels.tooltip).toContain("i2c_foo.0: 6×, median 3.05 ms, break-even 4.05 ms, 3/5 suspended periods shorter");
    expect(labels.tooltip).toContain("rpm_resume -EACCES 1×");
    const unmapped = runtimeCallbackLabels(xhci!);
    expect(unmapped.label).toBe("xhci_hcd");
    expect(unmapped.description).toBe("1 × · median 800 us · p95 800 us");
    expect(unmapped.tooltip).toContain("not mapped to source: driver name not found in source");
    expect(unmapped.tooltip).toContain("autosuspend after 2.00 s");
  });
});

describe("status bar with runtime PM", () => {
  it("counts the runtime PM devices, and only when there are some", () => {
    const status = { files: 1, callbacks_mapped: 1, callbacks_unmapped: 0, errors: [] };
    expect(statusText({ ...status, runtime_devices: 3 }).text).toBe("$(pulse) 1 trace · 1/1 mapped · runtime PM 3 devices");
    expect(statusText({ ...status, runtime_devices: 3 }).tooltip).toContain("; runtime PM of 3 devices.");
    expect(statusText({ ...status, runtime_devices: 0 }).text).toBe("$(pulse) 1 trace · 1/1 mapped");
  });
});
