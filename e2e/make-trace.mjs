// Writes an ftrace capture (the `power:` events a kernel with pm_print_times/ftrace emits) of
// N suspend/resume cycles of the e2e fixture driver. Deterministic: the same N gives the same
// bytes. Usage: node e2e/make-trace.mjs OUT [CYCLES]
import { closeSync, openSync, writeSync } from "node:fs";

/** Durations in µs per (driver, device, phase): base and jitter, so medians are predictable. */
const CALLBACKS = [
  { driver: "zeta-touch", device: "zeta-touch.0", parent: "platform", ops: "driver", verb: "suspend", phase: "suspend", base: 1200, jitter: 300 },
  { driver: "zeta-touch", device: "zeta-touch.1", parent: "platform", ops: "driver", verb: "suspend", phase: "suspend", base: 900, jitter: 200 },
  { driver: "zeta-touch", device: "zeta-touch.0", parent: "platform", ops: "noirq driver", verb: "suspend", phase: "suspend_noirq", base: 2100, jitter: 500 },
  { driver: "zeta-touch", device: "zeta-touch.1", parent: "platform", ops: "noirq driver", verb: "suspend", phase: "suspend_noirq", base: 1800, jitter: 400 },
  { driver: "other-chip", device: "other-chip.0", parent: "platform", ops: "driver", verb: "suspend", phase: "suspend", base: 400, jitter: 100 },
  { driver: "zeta-touch", device: "zeta-touch.0", parent: "platform", ops: "driver", verb: "resume", phase: "resume", base: 5600, jitter: 900 },
  { driver: "zeta-touch", device: "zeta-touch.1", parent: "platform", ops: "driver", verb: "resume", phase: "resume", base: 5400, jitter: 700 },
];

const PHASE_EVENTS = { suspend: "dpm_suspend[2]", suspend_noirq: "dpm_suspend_noirq[2]", resume: "dpm_resume[16]" };

/** Yields the capture in pieces (one per cycle), so a large one never sits in memory whole. */
export function* traceChunks(cycles) {
  let seed = 20261122;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  yield [
    "# tracer: nop",
    "#",
    "#                              _-----=> irqs-off",
    "#           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION",
    "#              | |       |   ||||       |         |",
    "",
  ].join("\n");
  let t = 100_000_000; // µs
  for (let cycle = 0; cycle < cycles; cycle++) {
    const lines = [];
    const line = (what) => {
      const s = (t / 1e6).toFixed(6);
      lines.push(`            bash-1234  [000] .... ${s.padStart(12)}: ${what}`);
    };
    line("suspend_resume: suspend_enter[3] begin");
    for (const phase of ["suspend", "suspend_noirq", "resume"]) {
      if (phase === "resume") t += 500_000; // asleep
      line(`suspend_resume: ${PHASE_EVENTS[phase]} begin`);
      for (const cb of CALLBACKS.filter((c) => c.phase === phase)) {
        t += 50;
        line(`device_pm_callback_start: ${cb.driver} ${cb.device}, parent: ${cb.parent}, ${cb.ops} [${cb.verb}]`);
        t += Math.round(cb.base + (rand() - 0.5) * 2 * cb.jitter);
        line(`device_pm_callback_end: ${cb.driver} ${cb.device}, err=0`);
      }
      t += 50;
      line(`suspend_resume: ${PHASE_EVENTS[phase]} end`);
    }
    t += 1000;
    line("suspend_resume: suspend_enter[3] end");
    // Runtime PM of zeta-touch.0 between suspends (rpm.h's layouts; fixed durations, so the
    // random sequence of the callbacks above is unchanged): a resume and an autosuspend.
    t += 1_000_000;
    line("rpm_resume: zeta-touch.0 flags-4 cnt-1  dep-0  auto-1 p-0 irq-0 child-0");
    t += 1800;
    line("rpm_return_int: rpm_resume+0x1a4/0x6e0:zeta-touch.0 ret=0");
    t += 2_000_000;
    line("rpm_suspend: zeta-touch.0 flags-a cnt-0  dep-0  auto-1 p-0 irq-0 child-0");
    t += 700;
    line("rpm_return_int: rpm_suspend+0x2c0/0x6a0:zeta-touch.0 ret=0");
    t += 7_000_000;
    yield lines.join("\n") + "\n";
  }
}

export function makeTrace(cycles) {
  return [...traceChunks(cycles)].join("");
}

/** Writes the capture to `out` piece by piece. */
export function writeTrace(out, cycles) {
  const fd = openSync(out, "w");
  try {
    let batch = "";
    for (const chunk of traceChunks(cycles)) {
      batch += chunk;
      if (batch.length > 1 << 20) {
        writeSync(fd, batch);
        batch = "";
      }
    }
    writeSync(fd, batch);
  } finally {
    closeSync(fd);
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [out, cycles = "100"] = process.argv.slice(2);
  if (!out) {
    console.error("usage: node e2e/make-trace.mjs OUT [CYCLES]");
    process.exit(2);
  }
  writeTrace(out, Number(cycles));
}
