import { describe, expect, it } from "vitest";
import {
  buildLatencyTree,
  callbackLabels,
  criticalDeviceLabels,
  criticalPhaseLabels,
  criticalSectionLabels,
  deviceLabels,
  phaseLabels,
  statusText,
  unmappedReasonLines,
  whatIfLabels,
} from "../src/latencyModel";
import { readCallback, readSlowestCallbacks, type Callback } from "../src/protocol";

function cb(over: Partial<Callback> & { phase: string; median_us: number }): Callback {
  const n = over.n ?? 10;
  return readCallback({
    driver: "foo",
    device: "foo.0",
    parent: "soc",
    layer: "driver",
    n,
    min_us: over.median_us * 0.8,
    mean_us: over.median_us,
    p95_us: over.median_us * 1.2,
    max_us: over.median_us * 1.5,
    total_us: over.median_us * n,
    source: { uri: "file:///w/foo.c", path: "/w/foo.c", line: 40, function: "foo_suspend" },
    unmapped_reason: null,
    ...over,
  })!;
}

describe("buildLatencyTree", () => {
  const tree = buildLatencyTree([
    cb({ phase: "suspend", median_us: 300 }),
    cb({ phase: "suspend", device: "foo.1", median_us: 900 }),
    cb({
      phase: "suspend",
      driver: "bar",
      device: "bar.0",
      median_us: 5000,
      source: { uri: "file:///w/bar.c", path: "/w/bar.c", line: 12, function: "bar_suspend" },
    }),
    cb({
      phase: "resume_noirq",
      driver: "baz",
      device: "baz.0",
      median_us: 20000,
      n: 100,
      source: null,
      unmapped_reason: "no driver struct registers the name 'baz'",
    }),
  ]);

  it("groups by phase, most total time first", () => {
    expect(tree.map((p) => p.phase)).toEqual(["resume_noirq", "suspend"]);
    expect(tree[1]!.deviceCount).toBe(3);
    expect(tree[1]!.total_us).toBe(3000 + 9000 + 50000);
  });

  it("sorts callbacks in a phase by measured time and merges devices of one callback", () => {
    const suspend = tree[1]!;
    expect(suspend.callbacks.map((c) => c.function)).toEqual(["bar_suspend", "foo_suspend"]);
    const foo = suspend.callbacks[1]!;
    expect(foo.devices.map((d) => d.device)).toEqual(["foo.1", "foo.0"]);
    expect(foo.median_us).toBe(900);
    expect(foo.samples).toBe(20);
  });

  it("keeps unmapped callbacks with their reason", () => {
    const baz = tree[0]!.callbacks[0]!;
    expect(baz.source).toBeNull();
    expect(baz.function).toBe("");
    expect(callbackLabels(baz).label).toBe("baz");
    expect(callbackLabels(baz).tooltip).toContain("not mapped to source: no driver struct registers the name 'baz'");
  });

  it("labels phases, callbacks and devices with times in ms and device counts", () => {
    expect(phaseLabels(tree[1]!).description).toBe("2 callbacks · 3 devices · 62.00 ms total");
    expect(callbackLabels(tree[1]!.callbacks[1]!)).toMatchObject({
      label: "foo_suspend",
      description: "median 900 us · p95 1.08 ms · 2 devices",
    });
    expect(callbackLabels(tree[1]!.callbacks[1]!).tooltip).toContain("/w/foo.c:40");
    expect(deviceLabels(tree[1]!.callbacks[1]!.devices[0]!).description).toBe("median 900 us · max 1.35 ms · 10 cycles");
  });

  it("is empty without callbacks", () => {
    expect(buildLatencyTree([])).toEqual([]);
  });
});

describe("status bar model", () => {
  const status = {
    files: 2,
    samples: 400,
    cycles: 100,
    callbacks_mapped: 3,
    callbacks_unmapped: 2,
    unmapped_reasons: { "bus callback without driver": 1, "driver 'baz' not in workspace": 4 },
    errors: ["x_ftrace.txt: line 7: no timestamp"],
  };

  it("shows traces loaded and mapped/unmapped counts", () => {
    expect(statusText(status).text).toBe("$(pulse) $(warning) 2 traces · 3/5 mapped");
    expect(statusText({ ...status, callbacks_unmapped: 0, errors: [] }).text).toBe("$(pulse) 2 traces · 3/3 mapped");
    expect(statusText({ ...status, files: 0 }).text).toBe("$(pulse) dpmlens");
  });

  it("lists unmapped reasons, most frequent first, then errors", () => {
    expect(unmappedReasonLines(status)).toEqual([
      "4× driver 'baz' not in workspace",
      "1× bus callback without driver",
      "error: x_ftrace.txt: line 7: no timestamp",
    ]);
  });
});

describe("critical path section", () => {
  const phase = {
    phase: "resume",
    runs: 10,
    wall_us: 548_000,
    replayed: true,
    devices: [
      { driver: "usb", device: "1-1.4", on_path: 7, runs: 10, contribution_us: 2_674_000 },
      { driver: "usb", device: "1-1", on_path: 10, runs: 10, contribution_us: 1_090_000 },
    ],
    whatif: [
      {
        change: "every device async",
        predicted_us: 420_000,
        saving_us: 128_000,
        evidence: "sched",
        band: { low_pct: -4.5, high_pct: 8 },
        capture_next: null,
      },
    ],
  };
  it("labels phases, devices and what-if savings", () => {
    expect(criticalSectionLabels([phase]).description).toBe("1 phase · what-if up to −128.00 ms");
    expect(criticalPhaseLabels(phase).description).toBe("548.00 ms mean · on the path: 1-1.4, 1-1");
    expect(criticalDeviceLabels(phase.devices[0]!).description).toBe("usb · on the path in 7 of 10 runs · 382.00 ms each");
    expect(whatIfLabels(phase.whatif[0]!, phase)).toMatchObject({
      label: "what if every device async",
      description: "−128.00 ms (548.00 ms → 420.00 ms, band −5%..+8%)",
    });
    expect(whatIfLabels(phase.whatif[0]!, phase).tooltip).toContain("with sched evidence −5%..+8% off");
    const unmeasured = { ...phase.whatif[0]!, band: null, capture_next: "to predict this change more surely, capture X" };
    expect(whatIfLabels(unmeasured, phase).description).toBe("−128.00 ms (548.00 ms → 420.00 ms, band not measured)");
    expect(whatIfLabels(unmeasured, phase).tooltip).toContain("To predict this change more surely, capture X.");
  });
  it("reads the server's section and tolerates an older server", () => {
    const read = readSlowestCallbacks({ callbacks: [], phases: [], critical: [phase, { nope: 1 }] });
    expect(read.critical).toEqual([phase]);
    expect(readSlowestCallbacks({ callbacks: [] }).critical).toEqual([]);
    const old = { ...phase, whatif: [{ change: "x", predicted_us: 1, saving_us: 2 }] };
    const [w] = readSlowestCallbacks({ callbacks: [], critical: [old] }).critical[0]!.whatif;
    expect(w).toEqual({ change: "x", predicted_us: 1, saving_us: 2, evidence: "", band: null, capture_next: null });
    expect(whatIfLabels(w!, phase).description).toBe("−2 us (548.00 ms → 1 us)");
  });
});
