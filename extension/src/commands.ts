// The user-facing commands around traces and rules, and the views they feed (PM Latency
// tree, status bar, rule documentation). The language server does the work; this renders it.
import * as path from "node:path";
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { executeServerCommand, isRunning } from "./client";
import type { CallbackGroup } from "./latencyModel";
import { LatencyTreeProvider } from "./latencyView";
import { expandVariables, mapPath, type VariableContext } from "./pathMapping";
import {
  EMPTY_STATUS,
  ServerCommand,
  formatDuration,
  readLoadTracesArgument,
  readRuleExplanation,
  readSlowestCallbacks,
  readTimelineLink,
  readTimelinePage,
  readTraceStatus,
  type CallbackSource,
  type SlowestCallbacks,
} from "./protocol";
import type { ServerSettings } from "./settings";
import type { TraceStatusBar } from "./statusBar";

const RULE_SCHEME = "dpmlens-rule";

/** What the commands need from the extension's lifecycle. */
export interface CommandHost {
  readonly output: vscode.LogOutputChannel;
  /** The running client, after waiting for a start in progress; undefined (and the user told) otherwise. */
  runningClient(): Promise<LanguageClient | undefined>;
  /** The client as it is now, without waiting. */
  client(): LanguageClient | undefined;
  settings(): { settings: ServerSettings; errors: string[] };
  variableContext(): VariableContext;
}

export class Commands implements vscode.Disposable {
  private readonly tree = new LatencyTreeProvider();
  private readonly treeView: vscode.TreeView<unknown>;
  private readonly ruleDocs = new Map<string, string>();
  private readonly ruleDocChanged = new vscode.EventEmitter<vscode.Uri>();
  private readonly disposables: vscode.Disposable[] = [];
  private timeline: vscode.WebviewPanel | undefined;

  constructor(
    private readonly host: CommandHost,
    private readonly statusBar: TraceStatusBar,
  ) {
    this.treeView = vscode.window.createTreeView("dpmlens.latency", { treeDataProvider: this.tree, showCollapseAll: true });
    this.disposables.push(
      this.tree,
      this.treeView,
      this.ruleDocChanged,
      vscode.workspace.registerTextDocumentContentProvider(RULE_SCHEME, {
        onDidChange: this.ruleDocChanged.event,
        provideTextDocumentContent: (uri) => this.ruleDocs.get(uri.path) ?? "",
      }),
    );
  }

  /** The server went away: nothing it measured is shown any more. */
  reset(): void {
    this.tree.update(undefined);
    this.statusBar.update(EMPTY_STATUS);
    this.treeView.message = undefined;
    void vscode.commands.executeCommand("setContext", "dpmlens.tracesLoaded", false);
  }

  private async pickTracePaths(): Promise<string[] | undefined> {
    // Linux and Windows dialogs cannot offer files and folders at once: ask which first.
    const choice = await vscode.window.showQuickPick(
      [
        { label: "$(file) Trace files...", detail: "dmesg, ftrace, sleepgraph *_dmesg.txt / *_ftrace.txt, Perfetto", folders: false },
        { label: "$(folder) A directory of traces...", detail: "every file matching dpmlens.traceGlobs", folders: true },
      ],
      { title: "dpmlens: Load Trace Files" },
    );
    if (!choice) return undefined;
    const uris = await vscode.window.showOpenDialog({
      canSelectFiles: !choice.folders,
      canSelectFolders: choice.folders,
      canSelectMany: true,
      openLabel: "Load Traces",
      title: "dpmlens: suspend/resume traces to load",
    });
    return uris?.map((u) => u.fsPath);
  }

  async loadTraces(arg: unknown, rest: unknown[]): Promise<unknown> {
    let paths = readLoadTracesArgument(arg, rest) ?? (await this.pickTracePaths());
    if (!paths?.length) return undefined;
    const base = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
    paths = paths.map((p) => path.resolve(base, expandVariables(p, this.host.variableContext()).value));
    const client = await this.host.runningClient();
    if (!client) return undefined;
    const started = Date.now();
    this.host.output.info(`loading traces: ${paths.join(", ")}`);
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "dpmlens: loading traces", cancellable: true },
      async (progress, token) => {
        try {
          return await executeServerCommand(client, ServerCommand.loadTraces, [{ paths }], progress, token);
        } catch (err) {
          if (token.isCancellationRequested) {
            this.host.output.info("trace loading cancelled");
            void vscode.window.showInformationMessage("dpmlens: trace loading cancelled.");
            return undefined;
          }
          throw err;
        }
      },
    ).then(undefined, (err: Error) => {
      this.host.output.error(`loading traces failed: ${err.message}`);
      void vscode.window.showErrorMessage(`dpmlens: loading traces failed: ${err.message}`, "Show Output").then((c) => {
        if (c) this.host.output.show(true);
      });
      return undefined;
    });
    if (result === undefined) return undefined;
    const status = readTraceStatus(result);
    this.host.output.info(
      `[perf] traces loaded in ${Date.now() - started} ms: ${status.files} files, ${status.samples} samples, ${status.cycles} cycles, ` +
        `${status.callbacks_mapped} callbacks mapped, ${status.callbacks_unmapped} unmapped`,
    );
    for (const e of status.errors) this.host.output.warn(`trace: ${e}`);
    if (status.errors.length) {
      void vscode.window.showWarningMessage(
        `dpmlens: ${status.errors.length} problem(s) reading traces: ${status.errors.slice(0, 2).join("; ")}`,
        "Show Output",
      ).then((c) => c && this.host.output.show(true));
    }
    await this.refreshTraces();
    return status;
  }

  async clearTraces(): Promise<void> {
    const client = await this.host.runningClient();
    if (!client) return;
    await executeServerCommand(client, ServerCommand.clearTraces, []);
    this.host.output.info("traces cleared");
    await this.refreshTraces();
  }

  private async fetchSlowest(limit: number): Promise<SlowestCallbacks | undefined> {
    const client = this.host.client();
    if (!isRunning(client)) return undefined;
    return readSlowestCallbacks(await executeServerCommand(client, ServerCommand.slowestCallbacks, [{ limit }]));
  }

  async refreshTraces(): Promise<void> {
    try {
      const data = await this.fetchSlowest(1000);
      this.tree.update(data);
      const status = data?.status ?? EMPTY_STATUS;
      this.statusBar.update(status);
      this.treeView.message =
        status.files > 0
          ? `${status.files} trace file(s), ${status.cycles} cycles · ${status.callbacks_mapped} mapped, ${status.callbacks_unmapped} unmapped`
          : undefined;
      void vscode.commands.executeCommand("setContext", "dpmlens.tracesLoaded", status.files > 0);
    } catch (err) {
      this.host.output.error(`reading trace results: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async showSlowest(): Promise<void> {
    const client = await this.host.runningClient();
    if (!client) return;
    const data = await this.fetchSlowest(50);
    if (!data || data.callbacks.length === 0) {
      void vscode.window.showInformationMessage("dpmlens: no traced callbacks yet. Load traces first.", "Load Trace Files...").then(
        (c) => c && vscode.commands.executeCommand("dpmlens.loadTraceFiles"),
      );
      return;
    }
    // Show the view first: focusing it after the quick pick opened would close the pick.
    await vscode.commands.executeCommand("dpmlens.latency.focus");
    const picked = await vscode.window.showQuickPick(
      data.callbacks.map((cb) => ({
        label: `${cb.source?.function || cb.driver} · ${cb.phase}`,
        description: `median ${formatDuration(cb.median_us)} · p95 ${formatDuration(cb.p95_us)} · max ${formatDuration(cb.max_us)} · ${cb.device}`,
        detail: cb.source ? `${cb.source.path}:${cb.source.line}` : `not mapped: ${cb.unmapped_reason ?? "no reason given"}`,
        cb,
      })),
      { title: "dpmlens: slowest PM callbacks (by median)", matchOnDescription: true, matchOnDetail: true },
    );
    if (picked) await this.openSource({ source: picked.cb.source, unmappedReason: picked.cb.unmapped_reason });
  }

  async openSource(group: Pick<CallbackGroup, "source" | "unmappedReason"> | undefined): Promise<void> {
    const source: CallbackSource | null | undefined = group?.source;
    if (!source) {
      void vscode.window.showInformationMessage(
        `dpmlens: this callback is not mapped to source: ${group?.unmappedReason ?? "no reason given"}`,
      );
      return;
    }
    const mappings = this.host.settings().settings.pathMappings;
    let uri = source.uri ? vscode.Uri.parse(source.uri) : vscode.Uri.file(mapPath(source.path, mappings));
    try {
      await vscode.workspace.fs.stat(uri);
    } catch {
      // The server's path may be from the build machine; try the user's path mappings.
      uri = vscode.Uri.file(mapPath(source.path || uri.fsPath, mappings));
    }
    const line = Math.max(0, source.line - 1);
    try {
      const editor = await vscode.window.showTextDocument(uri, { preview: true });
      const position = new vscode.Position(line, 0);
      editor.selection = new vscode.Selection(position, position);
      editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenterIfOutsideViewport);
    } catch (err) {
      void vscode.window.showErrorMessage(
        `dpmlens: cannot open ${uri.fsPath} (${err instanceof Error ? err.message : String(err)}); set dpmlens.pathMappings if the trace came from another tree.`,
      );
    }
  }

  async explainRule(arg: unknown): Promise<void> {
    const client = await this.host.runningClient();
    if (!client) return;
    let ruleId = typeof arg === "string" ? arg : undefined;
    if (!ruleId) {
      const codes = new Set<string>();
      for (const [, diagnostics] of vscode.languages.getDiagnostics()) {
        for (const d of diagnostics) {
          if (d.source !== "dpmlens") continue;
          const code = typeof d.code === "object" ? d.code.value : d.code;
          if (code !== undefined) codes.add(String(code));
        }
      }
      const typed = "$(edit) Enter a rule id...";
      const pick = await vscode.window.showQuickPick([...[...codes].sort(), typed], {
        title: "dpmlens: Explain Rule",
        placeHolder: "Rules reported in open files",
      });
      ruleId = pick === typed ? await vscode.window.showInputBox({ prompt: "Rule id, e.g. wake-setup-in-noirq" }) : pick;
    }
    if (!ruleId) return;
    let explanation;
    try {
      explanation = readRuleExplanation(await executeServerCommand(client, ServerCommand.explainRule, [ruleId]));
    } catch (err) {
      void vscode.window.showErrorMessage(`dpmlens: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (!explanation) {
      void vscode.window.showErrorMessage(`dpmlens: no rule named "${ruleId}".`);
      return;
    }
    // The server's markdown carries the id, checkpatch type, severity and documentation link.
    const uri = vscode.Uri.from({ scheme: RULE_SCHEME, path: `/${explanation.id}.md` });
    this.ruleDocs.set(uri.path, explanation.markdown);
    this.ruleDocChanged.fire(uri);
    try {
      await vscode.commands.executeCommand("markdown.showPreview", uri);
    } catch {
      await vscode.window.showTextDocument(uri, { preview: true });
    }
  }

  /** dpmlens: Open Timeline — the server's HTML timeline of the loaded traces in a webview;
   * a click on a bar opens its callback. */
  async openTimeline(): Promise<void> {
    const client = await this.host.runningClient();
    if (!client) return;
    let page;
    try {
      page = readTimelinePage(await executeServerCommand(client, ServerCommand.timelineHtml, []));
    } catch (err) {
      void vscode.window.showErrorMessage(`dpmlens: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    if (!page) {
      void vscode.window.showErrorMessage("dpmlens: the server sent no timeline.");
      return;
    }
    const title = `dpmlens Timeline: ${page.files.map((f) => path.basename(f)).join(", ") || "traces"}`;
    if (!this.timeline) {
      this.timeline = vscode.window.createWebviewPanel("dpmlens.timeline", title, vscode.ViewColumn.Active, {
        enableScripts: true, // the page draws on a canvas; it loads nothing from anywhere
        retainContextWhenHidden: true,
      });
      this.timeline.onDidDispose(() => (this.timeline = undefined), undefined, this.disposables);
      this.timeline.webview.onDidReceiveMessage(
        (msg) => {
          const link = readTimelineLink(msg);
          if (link) void this.openSource({ source: { uri: "", path: link.path, line: link.line + 1, function: "" }, unmappedReason: "" });
        },
        undefined,
        this.disposables,
      );
    }
    this.timeline.title = title;
    this.timeline.webview.html = page.html;
    this.timeline.reveal();
  }

  dispose(): void {
    this.timeline?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}
