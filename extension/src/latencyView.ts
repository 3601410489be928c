// The PM Latency tree view (explorer): renders latencyModel's tree.
import * as vscode from "vscode";
import {
  buildLatencyTree,
  callbackLabels,
  deviceLabels,
  phaseLabels,
  type CallbackGroup,
  type Labels,
  type PhaseGroup,
} from "./latencyModel";
import type { Callback, SlowestCallbacks } from "./protocol";

type Node =
  | { kind: "phase"; phase: PhaseGroup }
  | { kind: "callback"; group: CallbackGroup }
  | { kind: "device"; callback: Callback; group: CallbackGroup };

export const OPEN_SOURCE_COMMAND = "dpmlens.openCallbackSource";

function treeItem(labels: Labels, state: vscode.TreeItemCollapsibleState): vscode.TreeItem {
  const item = new vscode.TreeItem(labels.label, state);
  item.description = labels.description;
  item.tooltip = labels.tooltip;
  return item;
}

export class LatencyTreeProvider implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.changed.event;
  private phases: PhaseGroup[] = [];

  update(data: SlowestCallbacks | undefined): void {
    this.phases = data ? buildLatencyTree(data.callbacks) : [];
    this.changed.fire(undefined);
  }

  get isEmpty(): boolean {
    return this.phases.length === 0;
  }

  getChildren(node?: Node): Node[] {
    if (!node) return this.phases.map((phase) => ({ kind: "phase", phase }));
    if (node.kind === "phase") return node.phase.callbacks.map((group) => ({ kind: "callback", group }));
    if (node.kind === "callback" && node.group.devices.length > 1) {
      return node.group.devices.map((callback) => ({ kind: "device", callback, group: node.group }));
    }
    return [];
  }

  getTreeItem(node: Node): vscode.TreeItem {
    if (node.kind === "phase") {
      const item = treeItem(phaseLabels(node.phase), vscode.TreeItemCollapsibleState.Expanded);
      item.iconPath = new vscode.ThemeIcon("debug-step-over");
      item.contextValue = "dpmlens.phase";
      item.id = `phase:${node.phase.phase}`;
      return item;
    }
    if (node.kind === "callback") {
      const item = treeItem(
        callbackLabels(node.group),
        node.group.devices.length > 1 ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None,
      );
      item.iconPath = new vscode.ThemeIcon(node.group.source ? "symbol-method" : "warning");
      item.contextValue = node.group.source ? "dpmlens.callback" : "dpmlens.callback.unmapped";
      item.command = { command: OPEN_SOURCE_COMMAND, title: "Open Callback Source", arguments: [node.group] };
      return item;
    }
    const item = treeItem(deviceLabels(node.callback), vscode.TreeItemCollapsibleState.None);
    item.iconPath = new vscode.ThemeIcon("circuit-board");
    item.command = { command: OPEN_SOURCE_COMMAND, title: "Open Callback Source", arguments: [node.group] };
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
