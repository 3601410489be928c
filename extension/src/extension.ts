// Wiring: logger, Python discovery, the managed server environment, the language client's
// lifecycle and settings, the status bar; command handlers and views are in commands.ts.
// No analysis happens here.
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { State, type LanguageClient } from "vscode-languageclient/node";
import { createClient, isRunning, pushSettings } from "./client";
import { Commands } from "./commands";
import type { CallbackGroup } from "./latencyModel";
import { OPEN_SOURCE_COMMAND } from "./latencyView";
import { expandVariables, type VariableContext } from "./pathMapping";
import {
  discoverPython,
  discoveryKey,
  reusableInterpreter,
  versionText,
  type CachedInterpreter,
  type DiscoveryInput,
  type Interpreter,
} from "./python";
import { pythonExtensionInterpreter, onPythonInterpreterChanged } from "./pythonExtension";
import { ensureServerEnv, existingServerEnv, type ServerEnv } from "./serverEnv";
import { toServerSettings, toggledEnable, type ServerSettings } from "./settings";
import { SHOW_UNMAPPED_COMMAND, TraceStatusBar } from "./statusBar";

const INTERPRETER_KEY = "dpmlens.lastInterpreter";

async function mtimeOf(file: string): Promise<number | undefined> {
  try {
    return (await fs.stat(file)).mtimeMs;
  } catch {
    return undefined;
  }
}

class DpmlensExtension implements vscode.Disposable {
  private readonly output = vscode.window.createOutputChannel("dpmlens", { log: true });
  private readonly statusBar = new TraceStatusBar();
  private readonly commands: Commands;
  private readonly disposables: vscode.Disposable[] = [];
  private client: LanguageClient | undefined;
  private lifecycle: Promise<void> = Promise.resolve();
  private readonly activatedAt = Date.now();
  private sawDiagnostics = false;
  private lastNotice: string | undefined;
  private configTimer: NodeJS.Timeout | undefined;

  constructor(private readonly context: vscode.ExtensionContext) {
    this.commands = new Commands(
      {
        output: this.output,
        runningClient: () => this.runningClient(),
        client: () => this.client,
        settings: () => this.settings(),
        variableContext: () => this.variableContext(),
      },
      this.statusBar,
    );
    this.disposables.push(this.output, this.statusBar, this.commands);
    this.registerCommands();
    this.disposables.push(vscode.workspace.onDidChangeConfiguration((e) => this.onConfigurationChanged(e)));
    const pythonWatch = onPythonInterpreterChanged(() => {
      if (!this.config().get<string>("interpreter")) {
        this.output.info("the Python extension's interpreter changed; restarting the server");
        this.restart();
      }
    });
    if (pythonWatch) this.disposables.push(pythonWatch);
  }

  // ---- lifecycle -------------------------------------------------------------------------

  private config(): vscode.WorkspaceConfiguration {
    return vscode.workspace.getConfiguration("dpmlens");
  }

  private variableContext(): VariableContext {
    return {
      workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => ({ name: f.name, path: f.uri.fsPath })),
      userHome: os.homedir(),
    };
  }

  private settings(): { settings: ServerSettings; errors: string[] } {
    const config = this.config();
    const isSet = (key: string): boolean => {
      const seen = config.inspect(key);
      return [seen?.globalValue, seen?.workspaceValue, seen?.workspaceFolderValue].some((v) => v !== undefined);
    };
    return toServerSettings((key) => config.get(key), this.variableContext(), isSet);
  }

  /** Serializes start/stop so a restart never races a start still in progress. */
  private queue(step: () => Promise<void>): Promise<void> {
    this.lifecycle = this.lifecycle.then(step, step);
    return this.lifecycle;
  }

  start(): Promise<void> {
    return this.queue(() => this.doStart());
  }

  restart(): Promise<void> {
    return this.queue(async () => {
      await this.doStop();
      await this.doStart();
    });
  }

  private notifyOnce(message: string, kind: "error" | "warning", ...actions: string[]): void {
    // One clear notification per distinct problem, not one per restart.
    if (this.lastNotice === message) return;
    this.lastNotice = message;
    const show = kind === "error" ? vscode.window.showErrorMessage : vscode.window.showWarningMessage;
    void show(message, ...actions).then((choice) => {
      if (choice === "Show Output") this.output.show(true);
      if (choice === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "dpmlens.interpreter");
    });
  }

  private async doStart(): Promise<void> {
    const { settings, errors } = this.settings();
    for (const e of errors) this.output.warn(e);
    if (!settings.enable) {
      this.output.info("dpmlens.enable is false; the language server is not started");
      this.statusBar.setServerState("$(circle-slash) dpmlens", "dpmlens is disabled (dpmlens.enable)");
      return;
    }
    this.statusBar.setServerState("$(sync~spin) dpmlens", "dpmlens: starting the language server");
    try {
      const found = await this.findPython();
      if (!found) return;
      const { python, fromCache } = found;
      this.output.info(`using Python ${versionText(python.version)} at ${python.executable} (from ${python.source})`);

      const env = await this.serverEnv(python);
      this.output.info(`starting ${env.serverCommand.join(" ")}`);
      const started = Date.now();
      const client = createClient({
        serverCommand: env.serverCommand,
        settings: () => this.settings().settings,
        output: this.output,
        onDiagnostics: (uri, count) => this.onDiagnostics(uri, count),
      });
      this.client = client;
      client.onDidChangeState((e) => {
        // The client gives up after repeated crashes; say so instead of going quiet.
        if (e.newState === State.Stopped && this.client === client) {
          this.output.error("the language server stopped; use dpmlens: Restart Server");
          this.statusBar.setServerState("$(error) dpmlens", "dpmlens: the language server stopped. Click for details; Restart Server to try again.");
        }
      });
      await client.start();
      this.output.info(`[perf] server initialized in ${Date.now() - started} ms (${Date.now() - this.activatedAt} ms after activation)`);
      this.lastNotice = undefined;
      this.statusBar.setServerState(undefined);
      await this.commands.refreshTraces();
      if (fromCache) void this.recheckPython(python);
    } catch (err) {
      const message = `dpmlens: the language server could not start: ${err instanceof Error ? err.message : String(err)}`;
      this.output.error(message);
      this.statusBar.setServerState("$(error) dpmlens", message);
      this.notifyOnce(message, "error", "Show Output");
      await this.doStop();
    }
  }

  private discoveryInput(): { key: string; input: DiscoveryInput } {
    const setting = (this.config().get<string>("interpreter") ?? "").trim();
    const hasPythonExtension = vscode.extensions.getExtension("ms-python.python") !== undefined;
    return {
      key: discoveryKey(setting, hasPythonExtension),
      input: {
        setting: setting ? expandVariables(setting, this.variableContext()).value : undefined,
        pythonExtension: hasPythonExtension ? pythonExtensionInterpreter : undefined,
      },
    };
  }

  /** Discovery, or the remembered answer when it still holds (rechecked after start-up). */
  private async findPython(): Promise<{ python: Interpreter; fromCache: boolean } | undefined> {
    const { key, input } = this.discoveryInput();
    const cached = this.context.globalState.get<CachedInterpreter>(INTERPRETER_KEY);
    const reusable = reusableInterpreter(cached, key, cached && (await mtimeOf(cached.interpreter.executable)));
    if (reusable) return { python: reusable, fromCache: true };
    const discovery = await discoverPython(input);
    for (const r of discovery.rejected) this.output.info(`Python candidate ${r.candidate.command} (${r.candidate.source}) ${r.reason}`);
    const python = discovery.interpreter;
    if (!python) {
      const message = discovery.message ?? "dpmlens: no suitable Python found";
      this.output.error(message);
      this.statusBar.setServerState("$(error) dpmlens", message);
      this.notifyOnce(message, "error", "Open Settings", "Show Output");
      return undefined;
    }
    const mtimeMs = await mtimeOf(python.executable);
    if (mtimeMs !== undefined) {
      await this.context.globalState.update(INTERPRETER_KEY, { key, interpreter: python, mtimeMs } satisfies CachedInterpreter);
    }
    return { python, fromCache: false };
  }

  /** After a start from the cached interpreter: rediscover, and restart if the answer changed. */
  private async recheckPython(used: Interpreter): Promise<void> {
    const { key, input } = this.discoveryInput();
    const discovery = await discoverPython(input);
    const now = discovery.interpreter;
    if (now && now.executable === used.executable && versionText(now.version) === versionText(used.version)) return;
    await this.context.globalState.update(INTERPRETER_KEY, undefined);
    this.output.info(
      `Python changed since the last session (${used.executable} -> ${now?.executable ?? "none"}, key ${key}); restarting the server`,
    );
    void this.restart();
  }

  private async serverEnv(python: { executable: string; version: [number, number, number] }): Promise<ServerEnv> {
    const opts = {
      basePython: python,
      bundleDir: path.join(this.context.extensionPath, "bundled"),
      storageDir: this.context.globalStorageUri.fsPath,
      log: (line: string) => this.output.trace(line),
    };
    const existing = await existingServerEnv(opts);
    if (existing) return existing;
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "dpmlens: setting up the language server (first use)" },
      async (progress) => {
        const env = await ensureServerEnv({ ...opts, progress: (message) => progress.report({ message }) });
        this.output.info(`server environment ready at ${env.envDir}`);
        return env;
      },
    );
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(3000);
      } catch (err) {
        this.output.warn(`stopping the server: ${err instanceof Error ? err.message : String(err)}`);
      }
      await client.dispose().catch(() => undefined);
    }
    this.commands.reset();
  }

  private onDiagnostics(uri: vscode.Uri, count: number): void {
    if (this.sawDiagnostics) return;
    this.sawDiagnostics = true;
    this.output.info(`[perf] first diagnostics ${Date.now() - this.activatedAt} ms after activation (${count} in ${uri.fsPath})`);
  }

  private onConfigurationChanged(e: vscode.ConfigurationChangeEvent): void {
    if (!e.affectsConfiguration("dpmlens")) return;
    const restart = e.affectsConfiguration("dpmlens.interpreter") || e.affectsConfiguration("dpmlens.enable");
    if (this.configTimer) clearTimeout(this.configTimer);
    // Settings UIs write on every keystroke; act once they settle.
    this.configTimer = setTimeout(() => {
      if (restart) {
        this.output.info("dpmlens.interpreter or dpmlens.enable changed; restarting the server");
        this.lastNotice = undefined;
        void this.restart();
        return;
      }
      const { settings, errors } = this.settings();
      for (const error of errors) this.output.warn(error);
      if (errors.length) this.notifyOnce(`dpmlens settings: ${errors.join("; ")}`, "warning", "Show Output");
      if (isRunning(this.client)) {
        pushSettings(this.client, settings).then(
          () => this.output.info("settings sent to the server"),
          (err: Error) => this.output.error(`sending settings: ${err.message}`),
        );
      }
    }, 300);
  }

  // ---- commands (handlers in commands.ts) ---------------------------------------------------

  private registerCommands(): void {
    const register = (id: string, handler: (...args: unknown[]) => unknown) =>
      this.disposables.push(vscode.commands.registerCommand(id, handler));
    register("dpmlens.loadTraceFiles", (arg, ...rest) => this.commands.loadTraces(arg, rest));
    register("dpmlens.clearTraceData", () => this.commands.clearTraces());
    register("dpmlens.showSlowestCallbacks", () => this.commands.showSlowest());
    register("dpmlens.showRuleExplanation", (arg) => this.commands.explainRule(arg));
    register("dpmlens.openTimeline", () => this.commands.openTimeline());
    register("dpmlens.toggleChecking", () => this.toggleChecking());
    register("dpmlens.restartServer", () => {
      this.lastNotice = undefined;
      return this.restart();
    });
    register("dpmlens.showOutput", () => this.output.show(true));
    register(SHOW_UNMAPPED_COMMAND, () => this.statusBar.showDetails());
    register("dpmlens.refreshLatencyView", () => this.commands.refreshTraces());
    register(OPEN_SOURCE_COMMAND, (group) => this.commands.openSource(group as CallbackGroup | undefined));
  }

  /** Flips `dpmlens.enable` for this workspace; the configuration change restarts or stops the server. */
  private async toggleChecking(): Promise<void> {
    const hasWorkspace = (vscode.workspace.workspaceFolders ?? []).length > 0;
    const { value, target } = toggledEnable(this.config().get("enable"), hasWorkspace);
    const where = target === "workspace" ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
    await this.config().update("enable", value, where);
    this.output.info(`dpmlens checking ${value ? "enabled" : "disabled"} for the ${target === "workspace" ? "workspace" : "user"}`);
    void vscode.window.setStatusBarMessage(`dpmlens: checking ${value ? "on" : "off"}`, 3000);
  }

  /** Waits for a start in progress; tells the user once when there is no server to ask. */
  private async runningClient(): Promise<LanguageClient | undefined> {
    await this.lifecycle;
    if (isRunning(this.client)) return this.client;
    void vscode.window
      .showErrorMessage("dpmlens: the language server is not running.", "Show Output", "Restart Server")
      .then((choice) => {
        if (choice === "Show Output") this.output.show(true);
        if (choice === "Restart Server") void this.restart();
      });
    return undefined;
  }

  dispose(): void {
    if (this.configTimer) clearTimeout(this.configTimer);
    for (const d of this.disposables) d.dispose();
  }

  async stop(): Promise<void> {
    await this.queue(() => this.doStop());
  }
}

let extension: DpmlensExtension | undefined;

export function activate(context: vscode.ExtensionContext): void {
  extension = new DpmlensExtension(context);
  context.subscriptions.push(extension);
  // Not awaited: creating the server environment on first use must not hold up the window.
  void extension.start();
}

export async function deactivate(): Promise<void> {
  await extension?.stop();
  extension = undefined;
}
