// The JSON shapes of docs/lsp-protocol.md, and tolerant readers for them.
// vscode-free: unit-tested under vitest.

/** Server-side `workspace/executeCommand` ids (the contract with `dpmlens serve`). */
export const ServerCommand = {
  loadTraces: "dpmlens.loadTraces",
  clearTraces: "dpmlens.clearTraces",
  traceStatus: "dpmlens.traceStatus",
  slowestCallbacks: "dpmlens.slowestCallbacks",
  explainRule: "dpmlens.explainRule",
  timelineHtml: "dpmlens.timelineHtml",
} as const;

export interface TraceStatus {
  files: number;
  samples: number;
  cycles: number;
  callbacks_mapped: number;
  callbacks_unmapped: number;
  unmapped_reasons: Record<string, number>;
  errors: string[];
  /** Devices with rpm_* events, and runtime rows (device x runtime member) mapped to source. */
  runtime_devices: number;
  runtime_mapped: number;
}

export interface CallbackSource {
  uri: string;
  path: string;
  line: number; // 1-based
  function: string;
}

export interface Callback {
  driver: string;
  device: string;
  parent: string;
  phase: string;
  layer: string;
  n: number;
  min_us: number;
  median_us: number;
  mean_us: number;
  p95_us: number;
  max_us: number;
  total_us: number;
  source: CallbackSource | null;
  unmapped_reason: string | null;
}

export interface PhaseSummary {
  phase: string;
  cycles: number;
  mean_us: number;
  sd_us: number;
}

/** What a runtime PM row adds to a Callback (docs/lsp-protocol.md, "Runtime PM"). */
export interface RuntimeInfo {
  /** Median resume + median suspend latency of the device; null without both. */
  break_even_us: number | null;
  /** Share of closed suspended periods shorter than the break-even, 0..1; null if none. */
  short_share: number | null;
  suspended_periods: number;
  short_periods: number;
  suspended_us: number;
  active_us: number;
  autosuspend_median_us: number | null;
  errors: { call: string; name: string; count: number }[];
  /** runtime_resume: median time spent resuming others first (the parent). */
  nested_median_us: number;
  /** "rpm_status" (exact) or "inferred from calls" (kernels without rpm_status). */
  states: string;
}

/** One runtime PM callback (runtime_suspend / runtime_resume) of one device: n is the
 * number of transitions, the latencies are event to rpm_return_int. */
export interface RuntimeCallback extends Callback {
  runtime: RuntimeInfo;
}

export interface SlowestCallbacks {
  callbacks: Callback[];
  phases: PhaseSummary[];
  status: TraceStatus;
  /** Runtime PM rows; empty when the traces hold no rpm_* events (or an older server). */
  runtime: RuntimeCallback[];
  /** Per phase: the devices on its critical path and what-if savings (empty: older server). */
  critical: CriticalPhase[];
}

export interface CriticalDevice {
  driver: string;
  device: string;
  on_path: number; // phase runs in which it was on the critical path
  runs: number; // phase runs in which it had a callback
  contribution_us: number; // its callback time on the path, summed over those runs
}

export interface WhatIfSaving {
  change: string;
  predicted_us: number;
  saving_us: number;
  /** What the capture holds: kprobes+sched, kprobes, sched or neither ("" from older servers). */
  evidence: string;
  /** The lab's error band of such a prediction with that evidence (null: not measured). */
  band: { low_pct: number; high_pct: number } | null;
  /** What to capture next time for a surer prediction (null: nothing). */
  capture_next: string | null;
}

export interface CriticalPhase {
  phase: string;
  runs: number;
  wall_us: number; // mean over the runs
  devices: CriticalDevice[];
  whatif: WhatIfSaving[];
  replayed: boolean;
}

function readCriticalPhase(value: unknown): CriticalPhase | null {
  if (!isObject(value) || typeof value.phase !== "string") return null;
  const devices = Array.isArray(value.devices)
    ? value.devices.filter(isObject).map((d) => ({
        driver: str(d.driver),
        device: str(d.device),
        on_path: num(d.on_path),
        runs: num(d.runs),
        contribution_us: num(d.contribution_us),
      }))
    : [];
  const whatif = Array.isArray(value.whatif)
    ? value.whatif.filter(isObject).map((w) => ({
        change: str(w.change),
        predicted_us: num(w.predicted_us),
        saving_us: num(w.saving_us),
        evidence: str(w.evidence),
        band: isObject(w.band) ? { low_pct: num(w.band.low_pct), high_pct: num(w.band.high_pct) } : null,
        capture_next: typeof w.capture_next === "string" ? w.capture_next : null,
      }))
    : [];
  return { phase: value.phase, runs: num(value.runs), wall_us: num(value.wall_us), devices, whatif, replayed: value.replayed === true };
}

export interface RuleExplanation {
  id: string;
  title: string;
  severity: string;
  kernel_type: string;
  url: string;
  markdown: string;
}

export const EMPTY_STATUS: TraceStatus = {
  files: 0,
  samples: 0,
  cycles: 0,
  callbacks_mapped: 0,
  callbacks_unmapped: 0,
  unmapped_reasons: {},
  errors: [],
  runtime_devices: 0,
  runtime_mapped: 0,
};

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) ? value : 0;
}

function str(value: unknown): string {
  return typeof value === "string" ? value : "";
}

/** Reads a TraceStatus; missing or mistyped fields become zero/empty rather than crashing views. */
export function readTraceStatus(value: unknown): TraceStatus {
  if (!isObject(value)) return { ...EMPTY_STATUS, unmapped_reasons: {}, errors: [] };
  const reasons: Record<string, number> = {};
  if (isObject(value.unmapped_reasons)) {
    for (const [reason, count] of Object.entries(value.unmapped_reasons)) reasons[reason] = num(count);
  }
  return {
    files: num(value.files),
    samples: num(value.samples),
    cycles: num(value.cycles),
    callbacks_mapped: num(value.callbacks_mapped),
    callbacks_unmapped: num(value.callbacks_unmapped),
    unmapped_reasons: reasons,
    errors: Array.isArray(value.errors) ? value.errors.map(String) : [],
    runtime_devices: num(value.runtime_devices),
    runtime_mapped: num(value.runtime_mapped),
  };
}

function readSource(value: unknown): CallbackSource | null {
  if (!isObject(value)) return null;
  const path = str(value.path);
  const uri = str(value.uri);
  if (!path && !uri) return null;
  return { uri, path, line: Math.max(1, num(value.line)), function: str(value.function) };
}

export function readCallback(value: unknown): Callback | null {
  if (!isObject(value) || typeof value.phase !== "string") return null;
  return {
    driver: str(value.driver),
    device: str(value.device),
    parent: str(value.parent),
    phase: value.phase,
    layer: str(value.layer),
    n: num(value.n),
    min_us: num(value.min_us),
    median_us: num(value.median_us),
    mean_us: num(value.mean_us),
    p95_us: num(value.p95_us),
    max_us: num(value.max_us),
    total_us: num(value.total_us),
    source: readSource(value.source),
    unmapped_reason: typeof value.unmapped_reason === "string" ? value.unmapped_reason : null,
  };
}

function numOrNull(value: unknown): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

export function readRuntimeCallback(value: unknown): RuntimeCallback | null {
  const cb = readCallback(value);
  if (cb === null || !isObject(value) || !isObject(value.runtime)) return null;
  const rt = value.runtime;
  return {
    ...cb,
    runtime: {
      break_even_us: numOrNull(rt.break_even_us),
      short_share: numOrNull(rt.short_share),
      suspended_periods: num(rt.suspended_periods),
      short_periods: num(rt.short_periods),
      suspended_us: num(rt.suspended_us),
      active_us: num(rt.active_us),
      autosuspend_median_us: numOrNull(rt.autosuspend_median_us),
      errors: Array.isArray(rt.errors)
        ? rt.errors.filter(isObject).map((e) => ({ call: str(e.call), name: str(e.name), count: num(e.count) }))
        : [],
      nested_median_us: num(rt.nested_median_us),
      states: str(rt.states),
    },
  };
}

export function readSlowestCallbacks(value: unknown): SlowestCallbacks {
  const obj = isObject(value) ? value : {};
  const callbacks = Array.isArray(obj.callbacks)
    ? obj.callbacks.map(readCallback).filter((c): c is Callback => c !== null)
    : [];
  const phases = Array.isArray(obj.phases)
    ? obj.phases.filter(isObject).map((p) => ({
        phase: str(p.phase),
        cycles: num(p.cycles),
        mean_us: num(p.mean_us),
        sd_us: num(p.sd_us),
      }))
    : [];
  const runtime = Array.isArray(obj.runtime)
    ? obj.runtime.map(readRuntimeCallback).filter((c): c is RuntimeCallback => c !== null)
    : [];
  const critical = Array.isArray(obj.critical)
    ? obj.critical.map(readCriticalPhase).filter((c): c is CriticalPhase => c !== null)
    : [];
  return { callbacks, phases, status: readTraceStatus(obj.status), runtime, critical };
}

export function readRuleExplanation(value: unknown): RuleExplanation | null {
  if (!isObject(value) || typeof value.id !== "string") return null;
  return {
    id: value.id,
    title: str(value.title),
    severity: str(value.severity),
    kernel_type: str(value.kernel_type),
    url: str(value.url),
    markdown: str(value.markdown),
  };
}

/** The server's HTML timeline of the loaded traces (`dpmlens.timelineHtml`). */
export interface TimelinePage {
  html: string;
  files: string[];
}

export function readTimelinePage(value: unknown): TimelinePage | null {
  if (!isObject(value) || typeof value.html !== "string" || value.html.length === 0) return null;
  const files = Array.isArray(value.files) ? value.files.filter((f): f is string => typeof f === "string") : [];
  return { html: value.html, files };
}

/**
 * A bar's source link from the timeline page, "path:line", as a path and a 0-based line;
 * null for anything else (the page is data from a capture: never trust it further).
 */
export function readTimelineLink(value: unknown): { path: string; line: number } | null {
  if (!isObject(value) || typeof value.open !== "string") return null;
  const m = /^(.+):(\d+)$/.exec(value.open);
  if (!m) return null;
  return { path: m[1]!, line: Math.max(0, Number(m[2]) - 1) };
}

/**
 * "1.98 ms" / "850 us" / "2.41 s": the one duration format of dpmlens, the same as the server's
 * (server/dpmlens/traces/durations.py format_us); both are tested against
 * test-fixtures/durations.json.
 */
export function formatDuration(us: number): string {
  if (Number.isNaN(us)) return "-";
  const a = Math.abs(us);
  if (a >= 1_000_000) return `${(us / 1_000_000).toFixed(2)} s`;
  if (a >= 1000) return `${(us / 1000).toFixed(2)} ms`;
  return Number.isInteger(us) || a >= 10 ? `${us.toFixed(0)} us` : `${us.toFixed(1)} us`;
}

/**
 * The paths in a `dpmlens: Load Trace Files...` argument: a path, a list of paths,
 * `{paths: [...]}` (the server command's own shape), or Uri-like objects from the explorer.
 * Returns undefined when there is no usable argument (the command then opens a picker).
 */
export function readLoadTracesArgument(arg: unknown, extra: unknown[] = []): string[] | undefined {
  const one = (value: unknown): string[] => {
    if (typeof value === "string") return value.trim() ? [value.trim()] : [];
    if (Array.isArray(value)) return value.flatMap(one);
    if (isObject(value)) {
      if (Array.isArray(value.paths)) return value.paths.flatMap(one);
      if (typeof value.fsPath === "string") return [value.fsPath];
    }
    return [];
  };
  // The explorer passes (clicked, allSelected); prefer the full selection.
  const selection = extra.length > 0 && Array.isArray(extra[0]) ? one(extra[0]) : [];
  const paths = selection.length > 0 ? selection : one(arg);
  return paths.length > 0 ? [...new Set(paths)] : undefined;
}
