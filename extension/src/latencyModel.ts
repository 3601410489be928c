// The PM Latency tree: phases -> callbacks (sorted by measured time) -> devices, then a
// "Runtime PM" section: runtime_resume / runtime_suspend -> callbacks -> devices.
// vscode-free: unit-tested under vitest; latencyView.ts renders it.
import {
  formatDuration,
  type Callback,
  type CallbackSource,
  type CriticalDevice,
  type CriticalPhase,
  type RuntimeCallback,
  type WhatIfSaving,
} from "./protocol";

/** One callback function of one driver in one phase, over all devices that ran it. */
export interface CallbackGroup {
  phase: string;
  driver: string;
  function: string;
  source: CallbackSource | null;
  unmappedReason: string | null;
  layers: string[];
  devices: Callback[]; // sorted slowest first
  /** The slowest device's median: what the group is sorted by. */
  median_us: number;
  p95_us: number;
  max_us: number;
  samples: number;
  total_us: number;
}

export interface PhaseGroup {
  phase: string;
  callbacks: CallbackGroup[];
  deviceCount: number;
  total_us: number;
}

export interface Labels {
  label: string;
  description: string;
  tooltip: string;
}

const bySlowest = (a: { median_us: number; total_us: number }, b: { median_us: number; total_us: number }) =>
  b.median_us - a.median_us || b.total_us - a.total_us;

function groupKey(cb: Callback): string {
  const where = cb.source ? `${cb.source.path || cb.source.uri}:${cb.source.line}` : "";
  return `${cb.phase}\u0000${cb.driver}\u0000${where}`;
}

export function buildLatencyTree(callbacks: readonly Callback[]): PhaseGroup[] {
  const groups = new Map<string, CallbackGroup>();
  for (const cb of callbacks) {
    const key = groupKey(cb);
    let group = groups.get(key);
    if (!group) {
      group = {
        phase: cb.phase,
        driver: cb.driver,
        function: cb.source?.function ?? "",
        source: cb.source,
        unmappedReason: cb.unmapped_reason,
        layers: [],
        devices: [],
        median_us: 0,
        p95_us: 0,
        max_us: 0,
        samples: 0,
        total_us: 0,
      };
      groups.set(key, group);
    }
    group.devices.push(cb);
    if (cb.layer && !group.layers.includes(cb.layer)) group.layers.push(cb.layer);
    group.median_us = Math.max(group.median_us, cb.median_us);
    group.p95_us = Math.max(group.p95_us, cb.p95_us);
    group.max_us = Math.max(group.max_us, cb.max_us);
    group.samples += cb.n;
    group.total_us += cb.total_us;
  }

  const phases = new Map<string, PhaseGroup>();
  for (const group of groups.values()) {
    group.devices.sort(bySlowest);
    let phase = phases.get(group.phase);
    if (!phase) {
      phase = { phase: group.phase, callbacks: [], deviceCount: 0, total_us: 0 };
      phases.set(group.phase, phase);
    }
    phase.callbacks.push(group);
    phase.deviceCount += group.devices.length;
    phase.total_us += group.total_us;
  }
  const result = [...phases.values()];
  for (const phase of result) phase.callbacks.sort(bySlowest);
  // The phase that costs the most wall time overall comes first.
  result.sort((a, b) => b.total_us - a.total_us || a.phase.localeCompare(b.phase));
  return result;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export function phaseLabels(phase: PhaseGroup): Labels {
  return {
    label: phase.phase,
    description: `${plural(phase.callbacks.length, "callback")} · ${plural(phase.deviceCount, "device")} · ${formatDuration(phase.total_us)} total`,
    tooltip: `${phase.phase}: ${formatDuration(phase.total_us)} spent over all cycles in ${plural(phase.callbacks.length, "callback")} on ${plural(phase.deviceCount, "device")}`,
  };
}

export function callbackLabels(group: CallbackGroup): Labels {
  const name = group.function || group.driver || "(unknown driver)";
  const where = group.source
    ? `${group.source.path || group.source.uri}:${group.source.line}`
    : `not mapped to source: ${group.unmappedReason ?? "no reason given"}`;
  return {
    label: name,
    description: `median ${formatDuration(group.median_us)} · p95 ${formatDuration(group.p95_us)} · ${plural(group.devices.length, "device")}`,
    tooltip: [
      `${group.driver} ${group.phase}${group.layers.length ? ` (${group.layers.join(", ")})` : ""}`,
      where,
      `median ${formatDuration(group.median_us)}, p95 ${formatDuration(group.p95_us)}, max ${formatDuration(group.max_us)} over ${plural(group.samples, "sample")}`,
    ].join("\n"),
  };
}

export function deviceLabels(cb: Callback): Labels {
  return {
    label: cb.device || "(device)",
    description: `median ${formatDuration(cb.median_us)} · max ${formatDuration(cb.max_us)} · ${plural(cb.n, "cycle")}`,
    tooltip: `${cb.device}${cb.parent ? ` (parent ${cb.parent})` : ""}, ${cb.layer || "driver"} layer\nmin ${formatDuration(cb.min_us)}, median ${formatDuration(cb.median_us)}, mean ${formatDuration(cb.mean_us)}, p95 ${formatDuration(cb.p95_us)}, max ${formatDuration(cb.max_us)}`,
  };
}

/** Status bar text for the loaded traces. */
export function statusText(status: {
  files: number;
  callbacks_mapped: number;
  callbacks_unmapped: number;
  errors: string[];
  runtime_devices?: number;
}): { text: string; tooltip: string } {
  if (status.files === 0) return { text: "$(pulse) dpmlens", tooltip: "dpmlens: no traces loaded" };
  const total = status.callbacks_mapped + status.callbacks_unmapped;
  const warn = status.callbacks_unmapped > 0 || status.errors.length > 0 ? "$(warning) " : "";
  const runtime = status.runtime_devices ? plural(status.runtime_devices, "device") : "";
  return {
    text: `$(pulse) ${warn}${plural(status.files, "trace")} · ${status.callbacks_mapped}/${total} mapped${runtime ? ` · runtime PM ${runtime}` : ""}`,
    tooltip:
      `dpmlens: ${plural(status.files, "trace file")} loaded; ${status.callbacks_mapped} callbacks mapped to source, ` +
      `${status.callbacks_unmapped} unmapped${status.errors.length ? `, ${plural(status.errors.length, "error")}` : ""}` +
      `${runtime ? `; runtime PM of ${runtime}` : ""}. Click for details.`,
  };
}

/** The lines shown when the status bar item is clicked: unmapped reasons, most frequent first. */
export function unmappedReasonLines(status: { unmapped_reasons: Record<string, number>; errors: string[] }): string[] {
  const reasons = Object.entries(status.unmapped_reasons)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([reason, count]) => `${count}× ${reason}`);
  return [...reasons, ...status.errors.map((e) => `error: ${e}`)];
}

/** The view's runtime PM section: its own phases (runtime_resume, runtime_suspend). */
export interface RuntimeSection {
  phases: PhaseGroup[];
  devices: number;
  transitions: number;
  errors: number;
}

export function buildRuntimeSection(rows: readonly RuntimeCallback[]): RuntimeSection | null {
  if (rows.length === 0) return null;
  const devices = new Set(rows.map((r) => r.device));
  const errors = new Map<string, number>();
  for (const r of rows) errors.set(r.device, r.runtime.errors.reduce((n, e) => n + e.count, 0));
  return {
    phases: buildLatencyTree(rows),
    devices: devices.size,
    transitions: rows.reduce((n, r) => n + r.n, 0),
    errors: [...errors.values()].reduce((a, b) => a + b, 0),
  };
}

export function runtimeSectionLabels(section: RuntimeSection): Labels {
  const errors = section.errors ? ` · ${plural(section.errors, "error")}` : "";
  return {
    label: "Runtime PM",
    description: `${plural(section.devices, "device")} · ${plural(section.transitions, "transition")}${errors}`,
    tooltip:
      `Runtime PM (rpm_* events): ${plural(section.transitions, "suspend/resume transition")} of ${plural(section.devices, "device")}; ` +
      "latency is the rpm_suspend/rpm_resume event to its rpm_return_int",
  };
}

const isRuntime = (cb: Callback): cb is RuntimeCallback => "runtime" in cb;

/** A runtime callback group: transitions, latency, and the worst share of suspended periods
 * shorter than the break-even (resume + suspend cost) among its devices. */
export function runtimeCallbackLabels(group: CallbackGroup): Labels {
  const base = callbackLabels(group);
  const rows = group.devices.filter(isRuntime);
  const shares = rows.map((r) => r.runtime.short_share).filter((x): x is number => x !== null);
  const share = shares.length ? ` · ${Math.round(100 * Math.max(...shares))}% under break-even` : "";
  const errors = rows.reduce((n, r) => n + r.runtime.errors.reduce((m, e) => m + e.count, 0), 0);
  const lines = rows.map((r) => {
    const rt = r.runtime;
    const bits = [`${r.device}: ${r.n}×, median ${formatDuration(r.median_us)}`];
    if (rt.break_even_us !== null) bits.push(`break-even ${formatDuration(rt.break_even_us)}`);
    if (rt.short_share !== null) bits.push(`${rt.short_periods}/${rt.suspended_periods} suspended periods shorter`);
    if (rt.autosuspend_median_us !== null) bits.push(`autosuspend after ${formatDuration(rt.autosuspend_median_us)}`);
    for (const e of rt.errors) bits.push(`${e.call} ${e.name} ${e.count}×`);
    return bits.join(", ");
  });
  return {
    label: base.label,
    description: `${group.samples} × · median ${formatDuration(group.median_us)} · p95 ${formatDuration(group.p95_us)}${share}${errors ? ` · ${plural(errors, "error")}` : ""}`,
    tooltip: [base.tooltip.split("\n")[1] ?? "", ...lines].filter(Boolean).join("\n"),
  };
}

/** The "Critical path" section: per phase, what its wall time waited for, and what two
 * what-if replays of the capture (every device async; Linux 6.16's async ordering) win back. */
export function criticalSectionLabels(phases: readonly CriticalPhase[]): Labels {
  const best = Math.max(0, ...phases.flatMap((p) => p.whatif.map((w) => w.saving_us)));
  return {
    label: "Critical path",
    description: `${plural(phases.length, "phase")}${best > 0 ? ` · what-if up to −${formatDuration(best)}` : ""}`,
    tooltip:
      "What each phase's wall time waited for (the chain of callbacks back from the one that ended last), " +
      "the devices most often on it, and what replaying the capture with changes predicts.",
  };
}

export function criticalPhaseLabels(phase: CriticalPhase): Labels {
  const top = phase.devices[0];
  const names = phase.devices.slice(0, 3).map((d) => d.device).join(", ");
  return {
    label: phase.phase,
    description: `${formatDuration(phase.wall_us)} mean · on the path: ${names}`,
    tooltip:
      `${phase.phase}: ${formatDuration(phase.wall_us)} mean wall time over ${plural(phase.runs, "run")}` +
      (top ? `; ${top.device} (${top.driver || "no driver"}) was on its critical path in ${top.on_path} of ${top.runs}` : "") +
      (phase.replayed ? "" : "; too many runs to replay what-ifs"),
  };
}

export function criticalDeviceLabels(d: CriticalDevice): Labels {
  const mean = d.on_path ? d.contribution_us / d.on_path : 0;
  return {
    label: d.device,
    description: `${d.driver || "?"} · on the path in ${d.on_path} of ${plural(d.runs, "run")} · ${formatDuration(mean)} each`,
    tooltip: `${d.device} (${d.driver || "no driver"}): on the phase's critical path in ${d.on_path} of ${plural(d.runs, "run")}, adding ${formatDuration(mean)} each time`,
  };
}

/** "−5%..+8%": how far the lab measured such predictions off, for the label. */
export function bandText(band: { low_pct: number; high_pct: number }): string {
  const pct = (v: number) => `${v < 0 ? "−" : "+"}${Math.round(Math.abs(v))}%`;
  return `${pct(band.low_pct)}..${pct(band.high_pct)}`;
}

export function whatIfLabels(w: WhatIfSaving, phase: CriticalPhase): Labels {
  const band = w.band ? `, band ${bandText(w.band)}` : w.evidence ? ", band not measured" : "";
  const sure = w.band
    ? ` The lab measured such predictions from captures with ${w.evidence} evidence ${bandText(w.band)} off.`
    : w.evidence
      ? ` No lab band for this change with ${w.evidence} evidence.`
      : "";
  return {
    label: `what if ${w.change}`,
    description: `−${formatDuration(w.saving_us)} (${formatDuration(phase.wall_us)} → ${formatDuration(w.predicted_us)}${band})`,
    tooltip:
      `Replaying the capture's ${phase.phase} runs with ${w.change} predicts ${formatDuration(w.predicted_us)} ` +
      `instead of ${formatDuration(phase.wall_us)} (dpmlens trace whatif gives the assumptions).${sure}` +
      (w.capture_next ? ` ${w.capture_next[0].toUpperCase()}${w.capture_next.slice(1)}.` : ""),
  };
}
