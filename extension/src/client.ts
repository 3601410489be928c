// The language client: starts `dpmlens serve` over stdio from the managed environment.
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  State,
  WorkDoneProgress,
  type LanguageClientOptions,
  type ServerOptions,
  type WorkDoneProgressBegin,
  type WorkDoneProgressReport,
} from "vscode-languageclient/node";
import type { ServerSettings } from "./settings";

export interface ClientOptions {
  serverCommand: string[];
  settings: () => ServerSettings;
  output: vscode.LogOutputChannel;
  onDiagnostics: (uri: vscode.Uri, count: number) => void;
}

export const DOCUMENT_SELECTOR = [
  { scheme: "file", language: "c" },
  { scheme: "untitled", language: "c" },
  // VS Code opens `.h` as C++ unless files.associations says otherwise; kernel headers are C.
  { scheme: "file", language: "cpp", pattern: "**/*.h" },
];

export function createClient(opts: ClientOptions): LanguageClient {
  const [command, ...args] = opts.serverCommand;
  const serverOptions: ServerOptions = {
    command: command!,
    args,
    // No `transport`: TransportKind.stdio would append `--stdio`, which `dpmlens serve` does
    // not take; a plain executable already talks LSP over stdin/stdout.
    options: { env: { ...process.env, PYTHONUNBUFFERED: "1" } },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: DOCUMENT_SELECTOR,
    outputChannel: opts.output,
    initializationOptions: opts.settings(),
    // Errors are reported in our own notification with "Show Output", not by focusing output.
    revealOutputChannelOn: 4 /* RevealOutputChannelOn.Never */,
    middleware: {
      handleDiagnostics: (uri, diagnostics, next) => {
        opts.onDiagnostics(uri, diagnostics.length);
        next(uri, diagnostics);
      },
      workspace: {
        // A server that pulls `dpmlens` gets the translated settings, as at initialize.
        configuration: async (params, token, next) => {
          const result = await next(params, token);
          if (!Array.isArray(result)) return result;
          return params.items.map((item, i) => (item.section === "dpmlens" ? opts.settings() : result[i]));
        },
      },
    },
  };
  return new LanguageClient("dpmlens", "dpmlens language server", serverOptions, clientOptions);
}

export function isRunning(client: LanguageClient | undefined): client is LanguageClient {
  return client !== undefined && client.state === State.Running;
}

export async function pushSettings(client: LanguageClient, settings: ServerSettings): Promise<void> {
  await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { dpmlens: settings } });
}

/**
 * `workspace/executeCommand` with `$/progress` forwarded to a VS Code progress and the
 * cancellation token forwarded as `$/cancelRequest`.
 */
export async function executeServerCommand(
  client: LanguageClient,
  command: string,
  args: unknown[],
  progress?: vscode.Progress<{ message?: string; increment?: number }>,
  token?: vscode.CancellationToken,
): Promise<unknown> {
  const workDoneToken = progress ? `dpmlens-${Date.now()}-${Math.random().toString(36).slice(2)}` : undefined;
  let last = 0;
  const listener =
    progress && workDoneToken
      ? client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
          if (value.kind === "end") return;
          const v = value as WorkDoneProgressBegin | WorkDoneProgressReport;
          const pct = typeof v.percentage === "number" ? v.percentage : undefined;
          progress.report({ message: v.message, increment: pct !== undefined && pct > last ? pct - last : undefined });
          if (pct !== undefined) last = Math.max(last, pct);
        })
      : undefined;
  try {
    return await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args, workDoneToken }, token);
  } finally {
    listener?.dispose();
  }
}
