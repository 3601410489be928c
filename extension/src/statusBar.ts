// Status bar item: server state, traces loaded, callbacks mapped/unmapped.
import * as vscode from "vscode";
import { statusText, unmappedReasonLines } from "./latencyModel";
import { EMPTY_STATUS, type TraceStatus } from "./protocol";

export const SHOW_UNMAPPED_COMMAND = "dpmlens.showUnmappedReasons";

export class TraceStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("dpmlens.status", vscode.StatusBarAlignment.Left, 50);
  private status: TraceStatus = EMPTY_STATUS;
  private serverProblem: string | undefined;

  constructor() {
    this.item.name = "dpmlens";
    this.item.command = SHOW_UNMAPPED_COMMAND;
    this.update(EMPTY_STATUS);
  }

  /** Shown while the server is starting or has failed; `undefined` returns to trace status. */
  setServerState(text: string | undefined, tooltip?: string): void {
    this.serverProblem = text?.startsWith("$(error)") ? (tooltip ?? text) : undefined;
    if (text === undefined) {
      this.update(this.status);
      return;
    }
    this.item.text = text;
    this.item.tooltip = tooltip ?? text;
    this.item.show();
  }

  update(status: TraceStatus): void {
    this.status = status;
    if (this.serverProblem) return; // the server problem stays visible until a start succeeds
    const { text, tooltip } = statusText(status);
    this.item.text = text;
    this.item.tooltip = tooltip;
    this.item.show();
  }

  get current(): TraceStatus {
    return this.status;
  }

  /** Click handler: the reasons callbacks could not be mapped, and import errors. */
  async showDetails(): Promise<void> {
    if (this.serverProblem) {
      const choice = await vscode.window.showErrorMessage(this.serverProblem, "Show Output", "Restart Server");
      if (choice === "Show Output") await vscode.commands.executeCommand("dpmlens.showOutput");
      if (choice === "Restart Server") await vscode.commands.executeCommand("dpmlens.restartServer");
      return;
    }
    const lines = unmappedReasonLines(this.status);
    if (this.status.files === 0) {
      void vscode.window.showInformationMessage("dpmlens: no traces loaded. Use \"dpmlens: Load Trace Files...\".");
      return;
    }
    if (lines.length === 0) {
      void vscode.window.showInformationMessage(
        `dpmlens: all ${this.status.callbacks_mapped} traced callbacks are mapped to source.`,
      );
      return;
    }
    await vscode.window.showQuickPick(lines, {
      title: `dpmlens: ${this.status.callbacks_unmapped} callbacks not mapped to source`,
      placeHolder: "Why traced callbacks could not be found in the source (count × reason)",
    });
  }

  dispose(): void {
    this.item.dispose();
  }
}
