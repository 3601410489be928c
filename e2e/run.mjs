// End-to-end test of the dpmlens extension in a real VS Code: code-server (VS Code 1.100 from
// npm) with the built .vsix installed, driven by playwright-core through Debian's chromium.
//
// It opens test-fixtures/e2e/ws/zeta_touch.c, waits for the expected diagnostics in the
// Problems panel (the first run also creates the server environment), reloads the window and
// measures activation -> first diagnostics, then loads a generated 100-cycle ftrace capture
// through `dpmlens: Load Trace Files...` with a path argument (a keybinding carrying `args`)
// and measures the time until the latency CodeLens shows, and checks the PM Latency view and
// the status bar. Screenshots and results.json go to e2e/artifacts/; outside CI the figures
// are also written into BENCHMARKS.md and one screenshot into docs/.
import { spawn, execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";
import { makeTrace, writeTrace } from "./make-trace.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const top = resolve(here, "..");
const artifacts = join(here, "artifacts");
const codeServer = join(here, "node_modules", ".bin", "code-server");
const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
const KEEP = process.env.E2E_KEEP === "1";
const UPDATE_DOCS = process.env.CI !== "true" && process.env.E2E_UPDATE_DOCS !== "0";
const ENV_TIMEOUT_MS = 420_000; // first use: venv + pip install of pygls, tree-sitter, ... from the index
const BUDGET_DIAG_MS = 2000;
const BUDGET_LENS_MS = 3000;
// A time budget is a benchmark: on a shared CI host other jobs' load only adds time, so under
// CI=true a budget missed is reported, not failed (E2E_BUDGETS=1 enforces it there too); a
// timing that never came (nothing shown) fails everywhere.
const ENFORCE_BUDGETS = process.env.CI !== "true" || process.env.E2E_BUDGETS === "1";
const RELOADS = 3;
const BIG_CYCLES = 120_000; // ~340 MB: ~15 s of parsing here, long enough to press Cancel on a loaded machine
// (msleep-under-20ms is a quiet hint since issue 20: VS Code keeps hints out of Problems)
const EXPECTED_RULES = ["wake-setup-in-noirq", "get-sync-without-put-on-error"];

const results = { checks: [], timings: {}, screenshots: [] };
let failures = 0;

function log(message) {
  console.log(`e2e: ${message}`);
}

function check(name, ok, detail = "") {
  results.checks.push({ name, ok, detail });
  if (!ok) failures++;
  console.log(`${ok ? "PASS" : "FAIL"} ${name}${detail ? ` (${detail})` : ""}`);
}

function budget(name, ms, limit, detail) {
  if (ENFORCE_BUDGETS || ms === undefined) {
    check(name, ms !== undefined && ms <= limit, detail);
    return;
  }
  const within = ms <= limit;
  const note = `${detail}; ${within ? "within" : "OVER"} budget, not enforced under CI`;
  results.checks.push({ name, ok: true, detail: note });
  console.log(`${within ? "PASS" : "SLOW"} ${name} (${note})`);
}

function newestVsix() {
  const found = readdirSync(top)
    .filter((f) => /^dpmlens-.*\.vsix$/.test(f))
    .map((f) => ({ f, t: statSync(join(top, f)).mtimeMs }))
    .sort((a, b) => b.t - a.t);
  if (!found.length) throw new Error(`no dpmlens-*.vsix in ${top}: run \`make package\` first`);
  return join(top, found[0].f);
}

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

function startCodeServer(port, dirs) {
  const args = [
    "--bind-addr", `127.0.0.1:${port}`,
    "--auth", "none",
    "--disable-telemetry",
    "--disable-update-check",
    "--disable-workspace-trust",
    "--disable-getting-started-override",
    "--user-data-dir", dirs.userData,
    "--extensions-dir", dirs.extensions,
    "--config", dirs.config,
    dirs.ws,
  ];
  // Own process group, so the whole code-server tree can be stopped by its id at the end.
  const child = spawn(codeServer, args, { detached: true, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env } });
  const lines = [];
  const ready = new Promise((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`code-server did not start in 60 s:\n${lines.join("\n")}`)), 60_000);
    const onData = (buf) => {
      for (const line of buf.toString().split("\n")) {
        if (!line.trim()) continue;
        lines.push(line);
        if (/HTTP server listening/.test(line)) {
          clearTimeout(timer);
          res();
        }
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => rej(new Error(`code-server exited with ${code}:\n${lines.join("\n")}`)));
  });
  return { child, ready, lines };
}

function stopProcessGroup(child) {
  if (!child || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    /* already gone */
  }
}

/** Every `[perf]` line the extension logged to its output channel, oldest first. */
function perfLines(userData) {
  const out = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name === "dpmlens.log") {
        for (const line of readFileSync(p, "utf8").split("\n")) if (line.includes("[perf]")) out.push(line);
      }
    }
  };
  const logs = join(userData, "logs");
  if (existsSync(logs)) walk(logs);
  return out.sort(); // lines start with an ISO-like timestamp
}

function extensionLog(userData) {
  const out = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name === "dpmlens.log") out.push(`--- ${p}\n${readFileSync(p, "utf8")}`);
    }
  };
  const logs = join(userData, "logs");
  if (existsSync(logs)) walk(logs);
  return out.join("\n");
}

async function shot(page, name) {
  const file = join(artifacts, `${name}.png`);
  await page.screenshot({ path: file });
  results.screenshots.push(file);
  log(`screenshot ${file}`);
  return file;
}

async function runCommand(page, title) {
  // The palette can lose a race with a focus change (a view or preview opening): retry once.
  for (let attempt = 1; ; attempt++) {
    try {
      await page.keyboard.press("F1");
      const input = page.locator(".quick-input-widget input");
      await input.waitFor({ state: "visible", timeout: 10_000 });
      await input.fill(`>${title}`, { timeout: 10_000 });
      await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 10_000 });
      await page.keyboard.press("Enter");
      return;
    } catch (err) {
      if (attempt >= 3) throw new Error(`running "${title}" from the command palette: ${err.message.split("\n")[0]}`);
      log(`command palette: retrying "${title}" (${err.message.split("\n")[0]})`);
      await page.keyboard.press("Escape");
      await page.waitForTimeout(500);
    }
  }
}

/** Runs one independent part of the test; a crash there is a failed check, not the end of the run. */
async function step(page, name, fn) {
  try {
    await fn();
  } catch (err) {
    check(`${name} (step crashed)`, false, err.message.split("\n")[0]);
    await shot(page, `failure-${name.replace(/\W+/g, "-")}`).catch(() => undefined);
    await page.keyboard.press("Escape").catch(() => undefined);
  }
}

async function openFile(page, name) {
  await runCommand(page, "Go to File...");
  const input = page.locator(".quick-input-widget input");
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press("Enter");
  await page.locator(".tab.active", { hasText: name }).waitFor({ timeout: 15_000 });
}

async function waitForWorkbench(page) {
  await page.locator(".monaco-workbench .part.statusbar").waitFor({ timeout: 90_000 });
  await page.locator(".monaco-workbench .part.editor").waitFor({ timeout: 30_000 });
}

async function problemsText(page) {
  return (await page.locator(".markers-panel").allInnerTexts()).join("\n");
}

async function waitForProblems(page, timeout, userData) {
  const started = Date.now();
  for (;;) {
    const text = await problemsText(page).catch(() => "");
    if (EXPECTED_RULES.every((r) => text.includes(r))) return Date.now() - started;
    const failed = userData && /\[error\] (dpmlens needs Python|dpmlens: the .*could not start.*)/.exec(extensionLog(userData));
    if (failed) throw new Error(`the extension reported: ${failed[0]}`);
    if (Date.now() - started > timeout) throw new Error(`Problems panel never showed ${EXPECTED_RULES.join(", ")}; it shows:\n${text}`);
    await page.waitForTimeout(100);
  }
}

async function main() {
  rmSync(artifacts, { recursive: true, force: true }); // no screenshot of an earlier run left behind
  mkdirSync(artifacts, { recursive: true });
  const vsix = newestVsix();
  const work = mkdtempSync(join(tmpdir(), "dpmlens-e2e-"));
  const dirs = {
    userData: join(work, "user-data"),
    extensions: join(work, "extensions"),
    config: join(work, "code-server.yaml"),
    ws: join(work, "ws"),
  };
  cpSync(join(top, "test-fixtures", "e2e", "ws"), dirs.ws, { recursive: true });
  const traceDir = join(work, "traces");
  mkdirSync(traceDir);
  const trace = join(traceDir, "zeta_ftrace.txt");
  writeFileSync(trace, makeTrace(100));
  const bigTrace = join(traceDir, "big_ftrace.txt");
  writeTrace(bigTrace, BIG_CYCLES);
  // a Perfetto capture: the managed environment must read it (perfetto is a regular dependency)
  const perfettoTrace = join(traceDir, "basic.perfetto-trace");
  cpSync(join(top, "test-fixtures", "traces", "perfetto_basic.perfetto-trace"), perfettoTrace);
  writeFileSync(dirs.config, "bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n");
  mkdirSync(join(dirs.userData, "User"), { recursive: true });
  writeFileSync(
    join(dirs.userData, "User", "settings.json"),
    JSON.stringify(
      {
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": false,
        "workbench.enableExperiments": false,
        "security.workspace.trust.enabled": false,
        "telemetry.telemetryLevel": "off",
        "extensions.autoCheckUpdates": false,
        "extensions.autoUpdate": false,
        "extensions.ignoreRecommendations": true,
        "update.mode": "none",
        "editor.minimap.enabled": false,
        "window.zoomLevel": 0,
        "dpmlens.logLevel": "info",
      },
      null,
      2,
    ),
  );
  // A keybinding with `args` is how a user (or this test) runs the command with a path argument.
  writeFileSync(
    join(dirs.userData, "User", "keybindings.json"),
    JSON.stringify(
      [
        { key: "ctrl+alt+shift+l", command: "dpmlens.loadTraceFiles", args: trace },
        { key: "ctrl+alt+shift+b", command: "dpmlens.loadTraceFiles", args: bigTrace },
        { key: "ctrl+alt+shift+p", command: "dpmlens.loadTraceFiles", args: perfettoTrace },
      ],
      null,
      2,
    ),
  );

  log(`installing ${vsix}`);
  execFileSync(codeServer, ["--user-data-dir", dirs.userData, "--extensions-dir", dirs.extensions, "--install-extension", vsix], {
    stdio: "inherit",
  });
  check("vsix installs into code-server", existsSync(dirs.extensions) && readdirSync(dirs.extensions).some((d) => d.startsWith("dpmlens.dpmlens-")));

  const port = await freePort();
  const server = startCodeServer(port, dirs);
  let browser;
  try {
    await server.ready;
    log(`code-server on 127.0.0.1:${port}`);
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        "--disable-sync",
      ],
    });
    const page = await browser.newPage({ viewport: { width: 1500, height: 920 } });
    page.on("pageerror", (err) => log(`page error: ${err.message}`));
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(dirs.ws)}`);
    await waitForWorkbench(page);
    log("workbench loaded");

    // 1. First use: opening a C file activates the extension, which creates the server env.
    const firstStart = Date.now();
    await openFile(page, "zeta_touch.c");
    const progress = page.locator(".notifications-toasts .notification-toast", { hasText: "setting up the language server" });
    const sawProgress = await progress.first().waitFor({ timeout: 20_000 }).then(() => true, () => false);
    if (sawProgress) await shot(page, "00-first-use-progress");
    check("first use shows a progress notification while the server environment is created", sawProgress);
    await runCommand(page, "View: Focus Problems");
    await page.locator(".markers-panel").waitFor({ timeout: 15_000 });
    try {
      await waitForProblems(page, ENV_TIMEOUT_MS, dirs.userData);
      results.timings.first_use_open_to_diagnostics_ms = Date.now() - firstStart;
      check("diagnostics in the Problems panel on first use", true, `${EXPECTED_RULES.join(", ")} after ${results.timings.first_use_open_to_diagnostics_ms} ms incl. environment creation`);
    } catch (err) {
      check("diagnostics in the Problems panel on first use", false, err.message.split("\n")[0]);
      await shot(page, "failure-first-use");
      throw err;
    }
    await shot(page, "01-problems-first-use");

    // 2. With the environment in place: reload the window and measure activation -> first
    // diagnostics, as the extension logs it. Three reloads, judged by the fastest: other load
    // on this shared 2-core machine only ever adds time, so the minimum is the cost of the
    // extension + server themselves (as timeit takes the min); all three are reported.
    const samples = [];
    for (let round = 0; round < RELOADS; round++) {
      const perfBefore = perfLines(dirs.userData).length;
      const reloadStart = Date.now();
      await runCommand(page, "Developer: Reload Window");
      await page.waitForTimeout(500);
      await waitForWorkbench(page);
      await page.locator(".tab.active", { hasText: "zeta_touch.c" }).waitFor({ timeout: 30_000 });
      await runCommand(page, "View: Focus Problems");
      await waitForProblems(page, 30_000, undefined);
      results.timings.reload_to_problems_shown_ms = Date.now() - reloadStart;
      let ms;
      for (let i = 0; i < 50 && ms === undefined; i++) {
        const hit = perfLines(dirs.userData)
          .slice(perfBefore)
          .map((l) => /first diagnostics (\d+) ms after activation/.exec(l))
          .find(Boolean);
        if (hit) ms = Number(hit[1]);
        else await page.waitForTimeout(200);
      }
      if (ms !== undefined) samples.push(ms);
    }
    samples.sort((x, y) => x - y);
    const activationToDiag = samples.length === RELOADS ? samples[0] : undefined;
    results.timings.activation_to_first_diagnostics_ms = activationToDiag;
    results.timings.activation_to_first_diagnostics_samples_ms = samples;
    budget(
      "activation -> first diagnostics within 2 s (server env exists)",
      activationToDiag,
      BUDGET_DIAG_MS,
      `fastest ${activationToDiag ?? "n/a"} ms of ${samples.join(", ")} ms over ${RELOADS} window reloads`,
    );
    const problems = await problemsText(page);
    for (const rule of EXPECTED_RULES) check(`Problems panel lists ${rule}`, problems.includes(rule));
    await shot(page, "02-problems");

    const settingsFile = join(dirs.userData, "User", "settings.json");
    const baseSettings = JSON.parse(readFileSync(settingsFile, "utf8"));
    const editSettings = async (value) => {
      await runCommand(page, "Preferences: Open User Settings (JSON)");
      await page.locator(".tab.active", { hasText: "settings.json" }).waitFor({ timeout: 15_000 });
      await page.locator(".editor-instance .monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+A");
      await page.keyboard.insertText(JSON.stringify(value, null, 2)); // no auto-closing brackets
      await page.keyboard.press("Control+S");
      await page.waitForTimeout(300);
      await page.keyboard.press("Control+W");
    };

    // 2b. A settings change reaches the server without a reload: in the user settings JSON
    // editor, turn one rule off (save), see its diagnostic go, then turn it back on.
    await step(page, "settings change without reload", async () => {
      await editSettings({ ...baseSettings, "dpmlens.rules": { "get-sync-without-put-on-error": { enabled: false } } });
      let gone = false;
      for (let i = 0; i < 100 && !gone; i++) {
        const text = await problemsText(page);
        gone = text.includes("wake-setup-in-noirq") && !text.includes("get-sync-without-put-on-error");
        if (!gone) await page.waitForTimeout(100);
      }
      check("turning a rule off in the settings removes its diagnostic without a reload", gone);
      await editSettings(baseSettings);
      await waitForProblems(page, 10_000, undefined).then(
        () => check("turning it back on brings the diagnostic back", true),
        () => check("turning it back on brings the diagnostic back", false),
      );
      await page.locator(".tab.active", { hasText: "zeta_touch.c" }).waitFor({ timeout: 10_000 });
    });

    // 2c. dpmlens.run = onSave (issue 12): an unsaved edit is not analyzed. Empty the
    // document without saving: the last diagnostics stay; undo, and go back to onType.
    const rulesGone = async () => {
      for (let i = 0; i < 100; i++) {
        const text = await problemsText(page);
        if (!EXPECTED_RULES.some((r) => text.includes(r))) return true;
        await page.waitForTimeout(100);
      }
      return false;
    };
    await step(page, "run on save", async () => {
      // (VS Code for the web, code-server, saves after a delay by default: that would be a save)
      await editSettings({ ...baseSettings, "dpmlens.run": "onSave", "files.autoSave": "off" });
      await page.locator(".tab.active", { hasText: "zeta_touch.c" }).waitFor({ timeout: 10_000 });
      // the settings reach the server, which re-analyzes open documents once: let that settle
      await waitForProblems(page, 10_000, undefined).catch(() => undefined);
      await page.waitForTimeout(1500);
      await page.locator(".monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+A");
      await page.keyboard.press("Delete");
      await page.waitForTimeout(1500); // onType would have re-analyzed the empty text by now
      const text = await problemsText(page);
      check("with dpmlens.run = onSave an unsaved edit keeps the last diagnostics", EXPECTED_RULES.every((r) => text.includes(r)), text.slice(0, 300));
      await page.keyboard.press("Control+Z");
      await editSettings(baseSettings);
      await waitForProblems(page, 10_000, undefined).catch(() => undefined);
    });

    // 2d. dpmlens: Toggle Checking for the Workspace (issue 12): off, then on again.
    await step(page, "toggle checking for the workspace", async () => {
      await runCommand(page, "dpmlens: Toggle Checking for the Workspace");
      check("Toggle Checking turns dpmlens off (its diagnostics go)", await rulesGone());
      const wsSettings = join(dirs.ws, ".vscode", "settings.json");
      const recorded = existsSync(wsSettings) && JSON.parse(readFileSync(wsSettings, "utf8"))["dpmlens.enable"] === false;
      check("Toggle Checking records dpmlens.enable = false in the workspace settings", recorded);
      await runCommand(page, "dpmlens: Toggle Checking for the Workspace");
      await waitForProblems(page, 30_000, undefined).then(
        () => check("toggling again brings the diagnostics back", true),
        () => check("toggling again brings the diagnostics back", false),
      );
      await page.locator(".tab", { hasText: "zeta_touch.c" }).first().click();
    });

    // 3. Load the 100-cycle capture with a path argument and wait for the latency CodeLens.
    await page.locator(".monaco-editor .view-lines").first().click();
    // Bring the three callbacks into view: CodeLens renders only for visible lines.
    await page.keyboard.press("F1");
    await page.locator(".quick-input-widget input").fill(":33");
    await page.keyboard.press("Enter");
    await page.waitForTimeout(300);
    const lensStart = Date.now();
    await page.keyboard.press("Control+Alt+Shift+L");
    const lens = page.locator(".monaco-editor .codelens-decoration", { hasText: "median" });
    let lensText = "";
    try {
      await lens.first().waitFor({ timeout: 30_000 });
      results.timings.trace_load_to_codelens_ms = Date.now() - lensStart;
      // The lenses of one refresh render one after another; wait for the noirq one too.
      await page.locator(".monaco-editor .codelens-decoration", { hasText: "suspend_noirq" }).first().waitFor({ timeout: 5000 }).catch(() => undefined);
      lensText = (await page.locator(".monaco-editor .codelens-decoration").allInnerTexts()).filter((t) => t.trim()).join(" | ");
    } catch (err) {
      results.timings.trace_load_to_codelens_ms = undefined;
      await shot(page, "failure-codelens");
    }
    budget(
      "trace load of a 100-cycle capture -> CodeLens within 3 s",
      results.timings.trace_load_to_codelens_ms,
      BUDGET_LENS_MS,
      `${results.timings.trace_load_to_codelens_ms ?? "no CodeLens"} ms`,
    );
    results.codelens = lensText;
    check("CodeLens shows the measured suspend_noirq latency", /suspend_noirq · median [\d.]+ (ms|us)/.test(lensText), lensText);
    check("CodeLens counts 100 cycles", /100 cycles/.test(lensText), lensText);
    await shot(page, "03-codelens");

    // 4. The PM Latency view and the status bar.
    await step(page, "PM Latency view", async () => {
      await runCommand(page, "dpmlens: Show Slowest Callbacks");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "zeta_resume" }).first().waitFor({ timeout: 10_000 });
      const slowest = (await page.locator(".quick-input-list .monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " "));
      check("Show Slowest Callbacks puts zeta_resume first", slowest[0]?.includes("zeta_resume") ?? false, slowest[0] ?? "");
      await page.keyboard.press("Escape");
      await runCommand(page, "Focus on PM Latency View");
      // Widen the side bar so the screenshot shows the view's descriptions.
      const sidebar = await page.locator(".part.sidebar").boundingBox();
      if (sidebar) {
        const edge = sidebar.x + sidebar.width + 1;
        const y = sidebar.y + sidebar.height / 2;
        await page.mouse.move(edge, y);
        await page.mouse.down();
        await page.mouse.move(edge + 160, y, { steps: 8 });
        await page.mouse.up();
      }
      const pane = page.locator(".pane", { has: page.locator(".pane-header", { hasText: "PM Latency" }) });
      await pane.locator(".monaco-list-row", { hasText: "zeta_resume" }).first().waitFor({ timeout: 10_000 });
      const rows = (await pane.locator(".monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
      results.latency_view = rows;
      check("PM Latency view groups by phase, slowest phase first", rows[0]?.startsWith("resume") ?? false, rows[0] ?? "");
      check("PM Latency view shows device counts", rows.some((r) => /zeta_resume.*2 devices/.test(r)), rows.join(" / "));
      check("PM Latency view lists the unmapped driver", rows.some((r) => r.includes("other-chip")), "");
      const status = (await page.locator(".part.statusbar").innerText()).replace(/\s+/g, " ");
      check("status bar shows traces loaded and mapped/unmapped callbacks", /1 trace · \d+\/\d+ mapped/.test(status), status.match(/\d+ traces? · \d+\/\d+ mapped/)?.[0] ?? status);
      // Clicking a callback opens its source at the definition line.
      await pane.locator(".monaco-list-row", { hasText: "zeta_suspend_noirq" }).first().click();
      await page.mouse.move(1420, 420); // empty editor space: no hover tooltip over the screenshot
      await page.waitForTimeout(700);
      const cursor = (await page.locator(".part.statusbar").innerText()).match(/Ln (\d+)/)?.[1];
      const expectedLine = readFileSync(join(dirs.ws, "zeta_touch.c"), "utf8").split("\n").findIndex((l) => l.startsWith("static int zeta_suspend_noirq")) + 1;
      check("clicking a callback in the view opens its definition", Number(cursor) === expectedLine, `cursor at line ${cursor}, definition at ${expectedLine}`);
      await shot(page, "04-pm-latency-view");
      // The capture's rpm_* events of zeta-touch.0 (e2e/make-trace.mjs): 100 runtime resumes
      // (1.8 ms each) and 99 suspends. The Runtime PM section is the last root of the view:
      // move the focus to the last row so that the list renders it.
      await pane.locator(".monaco-list").first().focus();
      await page.keyboard.press("End");
      await pane.locator(".monaco-list-row", { hasText: "Runtime PM" }).first().waitFor({ timeout: 5000 }).catch(() => undefined);
      const runtimeRows = (await pane.locator(".monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
      results.latency_view_runtime = runtimeRows;
      check("PM Latency view has a Runtime PM section", runtimeRows.some((r) => /^Runtime PM.*1 device.*transitions/.test(r)), runtimeRows.join(" / "));
      check("Runtime PM section lists runtime_resume with its transitions", runtimeRows.some((r) => /^runtime_resume/.test(r)) && runtimeRows.some((r) => /zeta-touch.*\d+ × · median 1\.80 ms/.test(r)), runtimeRows.join(" / "));
      // The Critical path section (issue 9) is the last root: expand it and its phases.
      await pane.locator(".monaco-list").first().focus();
      await page.keyboard.press("End");
      const critRow = pane.locator(".monaco-list-row", { hasText: "Critical path" }).first();
      const hasCrit = await critRow.waitFor({ timeout: 5000 }).then(() => true, () => false);
      if (hasCrit) {
        await critRow.click();
        await page.keyboard.press("ArrowRight"); // expand the section
        await page.waitForTimeout(300);
        await page.keyboard.press("End");
        await page.waitForTimeout(300);
      }
      const critRows = (await pane.locator(".monaco-list-row").allInnerTexts()).map((t) => t.replace(/\s+/g, " ").trim());
      results.latency_view_critical = critRows;
      check("PM Latency view has a Critical path section naming the devices on each phase's path", hasCrit && critRows.some((r) => /^Critical path\s*\d+ phases?/.test(r)) && critRows.some((r) => /on the path: zeta-touch/.test(r)), critRows.join(" / "));
    });

    // 4a. dpmlens: Open Timeline (issue 9): the server's HTML timeline in a webview.
    await step(page, "Open Timeline", async () => {
      await runCommand(page, "dpmlens: Open Timeline");
      const tab = page.locator(".tab", { hasText: "dpmlens Timeline" });
      const opened = await tab.first().waitFor({ timeout: 20_000 }).then(() => true, () => false);
      const tabText = opened ? (await tab.first().innerText()).replace(/\s+/g, " ") : "";
      results.timeline_tab = tabText;
      check("Open Timeline shows the loaded capture's timeline in a webview", opened && /dpmlens Timeline: .+/.test(tabText), tabText);
      // the page itself runs in the webview's iframe: its canvas is drawn there
      let drawn = false;
      for (let i = 0; i < 50 && !drawn; i++) {
        for (const frame of page.frames()) {
          if (await frame.locator("canvas#c").count().catch(() => 0)) drawn = true;
        }
        if (!drawn) await page.waitForTimeout(200);
      }
      check("the timeline webview holds the drawn canvas", drawn);
      await page.waitForTimeout(500);
      await shot(page, "04a-timeline");
      if (opened) {
        await tab.first().click();
        await page.keyboard.press("Control+W");
      }
    });

    // 4b. Hover and quick fix, from the server, in the real editor.
    await step(page, "hover and quick fix", async () => {
      const goTo = async (where) => {
        // F1 can lose a race with a hover or a focus change, as in runCommand: retry
        const input = page.locator(".quick-input-widget input");
        for (let attempt = 1; ; attempt++) {
          await page.keyboard.press("F1");
          const shown = await input.waitFor({ state: "visible", timeout: 5_000 }).then(() => true, () => false);
          if (shown || attempt >= 3) break;
          log(`go to ${where}: the palette did not open, retrying`);
          await page.keyboard.press("Escape");
          await page.waitForTimeout(500);
        }
        await input.fill(`:${where}`);
        await page.keyboard.press("Enter");
        await page.waitForTimeout(300);
      };
      await page.locator(".tab", { hasText: "zeta_touch.c" }).first().click();
      await goTo("34:20"); // inside the name zeta_suspend_noirq
      await page.keyboard.press("Control+K");
      await page.keyboard.press("Control+I");
      const hover = page.locator(".monaco-hover:not(.hidden) .monaco-hover-content");
      await hover.first().waitFor({ timeout: 10_000 });
      const hoverText = (await hover.first().innerText()).replace(/\s+/g, " ");
      results.hover = hoverText;
      check("hover on a callback shows its phase and measured latency", /suspend_noirq/.test(hoverText) && /median|ms/.test(hoverText), hoverText.slice(0, 160));
      await shot(page, "04b-hover");
      await page.keyboard.press("Escape");
      await goTo("77:10"); // ret = pm_runtime_get_sync(dev);
      await page.keyboard.press("Control+Period");
      const fix = page.locator(".action-widget .monaco-list-row", { hasText: "pm_runtime_resume_and_get" });
      await fix.first().waitFor({ timeout: 10_000 });
      await shot(page, "04c-quick-fix");
      await page.keyboard.press("Enter"); // the first (focused) action: Use pm_runtime_resume_and_get()
      const fixed = page.locator(".monaco-editor .view-line", { hasText: "pm_runtime_resume_and_get(" });
      const applied = await fixed.first().waitFor({ timeout: 10_000 }).then(() => true, () => false);
      let cleared = false;
      for (let i = 0; i < 50 && applied && !cleared; i++) {
        cleared = !(await problemsText(page)).includes("get-sync-without-put-on-error");
        if (!cleared) await page.waitForTimeout(100);
      }
      check("the get_sync quick fix rewrites the call and its diagnostic goes away", applied && cleared);
      await page.keyboard.press("Control+Z"); // back to the fixture's text for the steps below
      await waitForProblems(page, 10_000, undefined);
    });

    // 5. Explain Rule: pick a rule reported in the open file; its documentation opens as a preview.
    await step(page, "Explain Rule", async () => {
      await runCommand(page, "dpmlens: Explain Rule");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "wake-setup-in-noirq" }).first().waitFor({ timeout: 10_000 });
      await page.locator(".quick-input-widget input").fill("wake-setup-in-noirq");
      await page.keyboard.press("Enter");
      const explained = await page
        .locator(".tab", { hasText: "wake-setup-in-noirq" })
        .first()
        .waitFor({ timeout: 15_000 })
        .then(() => true, () => false);
      check("Explain Rule opens the rule's documentation", explained);
      await page.waitForTimeout(800);
      await shot(page, "05-explain-rule");
    });

    // 6. Clear Traces, then load through the file picker (code-server's simple file dialog).
    await step(page, "Clear Traces and the file picker", async () => {
      await runCommand(page, "dpmlens: Clear Traces");
      await page.locator(".part.statusbar", { hasText: "1 trace" }).waitFor({ state: "detached", timeout: 10_000 }).catch(() => undefined);
      const cleared = !/\d+ traces? · \d+\/\d+ mapped/.test(await page.locator(".part.statusbar").innerText());
      check("Clear Traces empties the status bar count", cleared);
      await page.waitForTimeout(500); // let the palette finish closing before it is opened again
      await runCommand(page, "dpmlens: Load Trace Files...");
      await page.locator(".quick-input-list .monaco-list-row", { hasText: "Trace files..." }).first().waitFor({ timeout: 10_000 });
      await page.keyboard.press("Enter");
      const dialogInput = page.locator(".quick-input-widget input");
      await page.waitForTimeout(500);
      await dialogInput.fill(trace);
      await page.waitForTimeout(500);
      await page.keyboard.press("Enter");
      const picked = await page
        .locator(".part.statusbar", { hasText: "1 trace" })
        .waitFor({ timeout: 15_000 })
        .then(() => true, () => false);
      check("Load Trace Files... through the file picker loads the trace", picked);
      if (!picked) await shot(page, "failure-picker");
    });

    // 6b. A large capture shows progress and can be cancelled; the loaded traces stay as they were.
    await step(page, "cancel a large trace load", async () => {
      await page.locator(".tab", { hasText: "zeta_touch.c" }).first().click();
      await page.locator(".monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+Alt+Shift+B");
      // .last(): the toast of a load that just ended may still be fading out above this one
      const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "loading traces" });
      await toast.last().waitFor({ timeout: 10_000 });
      await shot(page, "07-trace-progress");
      // A click on a toast that is still sliding in can miss: press Cancel again while the
      // load's toast is there and the extension has not logged the cancel (at most 5 times).
      const cancelLogged = async (tenths) => {
        for (let i = 0; i < tenths; i++) {
          if (extensionLog(dirs.userData).includes("trace loading cancelled")) return true;
          await page.waitForTimeout(100);
        }
        return false;
      };
      let cancelled = false;
      for (let attempt = 0; attempt < 5 && !cancelled; attempt++) {
        const button = toast.last().locator(".monaco-button", { hasText: "Cancel" }).first();
        if (!(await button.isVisible().catch(() => false))) break;
        await button.click({ timeout: 2_000 }).catch(() => undefined);
        cancelled = await cancelLogged(20);
      }
      cancelled = cancelled || (await cancelLogged(100));
      check("a large trace load shows a progress notification and can be cancelled", cancelled);
      await page.waitForTimeout(BIG_CYCLES / 10); // past the end of the parse the cancel stopped
      const status = (await page.locator(".part.statusbar").innerText()).replace(/\s+/g, " ");
      const lenses = (await page.locator(".monaco-editor .codelens-decoration").allInnerTexts()).join(" | ");
      check(
        "after the cancel the previously loaded trace is still the one shown",
        /1 trace · 6\/7 mapped/.test(status) && !lenses.includes(`${BIG_CYCLES} cycles`),
        status.match(/\d+ traces? · \d+\/\d+ mapped/)?.[0] ?? status,
      );
    });

    // 6c. A Perfetto trace loads in the extension's managed environment (issue 9).
    await step(page, "Perfetto trace", async () => {
      await page.locator(".tab", { hasText: "zeta_touch.c" }).first().click();
      await page.locator(".monaco-editor .view-lines").first().click();
      const seen = extensionLog(dirs.userData).length;
      await page.keyboard.press("Control+Alt+Shift+P");
      let line = "";
      for (let i = 0; i < 100 && !line; i++) {
        const after = extensionLog(dirs.userData).slice(seen).split("\n");
        line = after.find((l) => /traces loaded: .* from \d+ file\(s\)/.test(l)) ?? "";
        if (!line) await page.waitForTimeout(100);
      }
      await page.waitForTimeout(500); // the status bar follows the load's answer
      const status = (await page.locator(".part.statusbar").innerText()).replace(/\s+/g, " ");
      const broken = /perfetto|protobuf/i.test(extensionLog(dirs.userData).split("\n").filter((l) => /error|warning/i.test(l)).join("\n"));
      check("a Perfetto trace loads in the managed environment beside the ftrace one", / 705 samples from 2 file\(s\)/.test(line) && /2 traces/.test(status) && !broken, `${line} | ${status.match(/\d+ traces?[^|]*/)?.[0] ?? status} | broken=${broken}`);
    });

    // 7. An unusable dpmlens.interpreter gives one clear notification; clearing it restarts the server.
    await step(page, "interpreter notification", async () => {
      await editSettings({ ...baseSettings, "dpmlens.interpreter": "/nonexistent/python3" });
      const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "dpmlens.interpreter" });
      const toastShown = await toast.first().waitFor({ timeout: 15_000 }).then(() => true, () => false);
      const toastText = toastShown ? (await toast.first().innerText()).replace(/\s+/g, " ") : "";
      check("an unusable interpreter setting gives one clear notification", toastShown && /not found/.test(toastText), toastText.slice(0, 200));
      await shot(page, "06-interpreter-notification");
      check("with no usable server its diagnostics are gone", !(await problemsText(page)).includes("wake-setup-in-noirq"));
      await editSettings(baseSettings);
      await page.waitForTimeout(500);
      const recovered = await waitForProblems(page, 30_000, undefined).then(() => true, () => false);
      check("clearing the interpreter setting restarts the server without a reload", recovered);
    });

  } finally {
    results.perf = perfLines(dirs.userData);
    writeFileSync(join(artifacts, "extension.log"), extensionLog(dirs.userData));
    writeFileSync(join(artifacts, "code-server.log"), server.lines.join("\n"));
    await browser?.close().catch(() => undefined);
    stopProcessGroup(server.child);
    if (!KEEP) rmSync(work, { recursive: true, force: true });
    else log(`kept ${work}`);
  }
}

function commit() {
  try {
    return execFileSync("git", ["-C", top, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {
    return "unknown";
  }
}

function updateDocs() {
  const shotFile = join(artifacts, "04-pm-latency-view.png");
  if (existsSync(shotFile)) {
    mkdirSync(join(top, "docs"), { recursive: true });
    cpSync(shotFile, join(top, "docs", "vscode-e2e.png"));
  }
  const bench = join(top, "BENCHMARKS.md");
  const t = results.timings;
  const fmt = (ms) => (ms === undefined ? "not measured" : `${ms} ms`);
  const section = [
    "<!-- e2e:start (written by `make e2e`) -->",
    `Measured by \`make e2e\` (e2e/run.mjs) at ${new Date().toISOString().slice(0, 16).replace("T", " ")} UTC, commit ${commit()}, ` +
      `load average ${loadavg()[0].toFixed(1)} on ${cpus().length} cores: code-server 4.100.3 (VS Code 1.100.3) in headless chromium, ` +
      "the server env already created for the first row, fixture test-fixtures/e2e/ws/zeta_touch.c, trace from e2e/make-trace.mjs (100 cycles, 700 samples).",
    "",
    "| what | budget | measured |",
    "|---|---|---|",
    `| activation -> first diagnostics in an open driver (server env exists; fastest of ${(t.activation_to_first_diagnostics_samples_ms ?? []).join(" / ")} ms over 3 window reloads) | <= 2 s | ${fmt(t.activation_to_first_diagnostics_ms)} |`,
    `| trace load of a 100-cycle capture -> CodeLens shown | <= 3 s | ${fmt(t.trace_load_to_codelens_ms)} |`,
    `| window reload -> Problems panel filled again (UI, includes workbench start) | - | ${fmt(t.reload_to_problems_shown_ms)} |`,
    `| first use: open driver -> diagnostics, including creating the server env (venv + pip install; pip's cache was warm) | - | ${fmt(t.first_use_open_to_diagnostics_ms)} |`,
    "<!-- e2e:end -->",
  ].join("\n");
  let text = existsSync(bench) ? readFileSync(bench, "utf8") : "# Benchmarks\n";
  if (/<!-- e2e:start[\s\S]*?<!-- e2e:end -->/.test(text)) {
    text = text.replace(/<!-- e2e:start[\s\S]*?<!-- e2e:end -->/, section);
  } else if (/^## Extension.*$/m.test(text)) {
    text = text.replace(/^(## Extension.*\n)/m, `$1\n${section}\n`);
  } else {
    text = `${text.trimEnd()}\n\n## Extension (VS Code end-to-end)\n\n${section}\n`;
  }
  writeFileSync(bench, text);
  log("updated BENCHMARKS.md and docs/vscode-e2e.png");
}

const deadline = setTimeout(() => {
  console.error("e2e: gave up after 15 minutes");
  process.exit(1);
}, 15 * 60_000);
deadline.unref();

try {
  await main();
} catch (err) {
  failures++;
  console.error(`e2e: ${err.stack ?? err}`);
}
writeFileSync(join(artifacts, "results.json"), JSON.stringify(results, null, 2));
const passed = results.checks.filter((c) => c.ok).length;
if (failures === 0 && UPDATE_DOCS) updateDocs();
// A crash before all checks ran counts as one failure, so the summary never reads all-green.
const failed = results.checks.length - passed + (failures > results.checks.length - passed ? 1 : 0);
console.log(`${passed} passed, ${failed} failed`);
process.exit(failures === 0 ? 0 : 1);
