// The PM Latency tree view (explorer): renders latencyModel's tree.
import * as vscode from "vscode";
import {
  buildLatencyTree,
  buildRuntimeSection,
  callbackLabels,
  criticalDeviceLabels,
  criticalPhaseLabels,
  criticalSectionLabels,
  deviceLabels,
  whatIfLabels,
  phaseLabels,
  runtimeCallbackLabels,
  runtimeSectionLabels,
  type CallbackGroup,
  type Labels,
  type PhaseGroup,
  type RuntimeSection,
} from "./latencyModel";
import type { Callback, CriticalDevice, CriticalPhase, SlowestCallbacks, WhatIfSaving } from "./protocol";

type Node =
  | { kind: "phase"; phase: PhaseGroup }
  | { kind: "runtime"; section: RuntimeSection }
  | { kind: "callback"; group: CallbackGroup }
  | { kind: "device"; callback: Callback; group: CallbackGroup }
  | { kind: "critical"; phases: CriticalPhase[] }
  | { kind: "criticalPhase"; phase: CriticalPhase }
  | { kind: "criticalDevice"; device: CriticalDevice; phase: CriticalPhase }
  | { kind: "whatif"; whatif: WhatIfSaving; phase: CriticalPhase };

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
  private runtime: RuntimeSection | null = null;
  private critical: CriticalPhase[] = [];

  update(data: SlowestCallbacks | undefined): void {
    this.phases = data ? buildLatencyTree(data.callbacks) : [];
    this.runtime = data ? buildRuntimeSection(data.runtime) : null;
    this.critical = data ? data.critical : [];
    this.changed.fire(undefined);
  }

  get isEmpty(): boolean {
    return this.phases.length === 0 && this.runtime === null;
  }

  getChildren(node?: Node): Node[] {
    if (!node) {
      const roots: Node[] = this.phases.map((phase) => ({ kind: "phase", phase }));
      if (this.runtime) roots.push({ kind: "runtime", section: this.runtime });
      if (this.critical.length) roots.push({ kind: "critical", phases: this.critical });
      return roots;
    }
    if (node.kind === "critical") return node.phases.map((phase) => ({ kind: "criticalPhase", phase }));
    if (node.kind === "criticalPhase") {
      return [
        ...node.phase.whatif.map((whatif): Node => ({ kind: "whatif", whatif, phase: node.phase })),
        ...node.phase.devices.map((device): Node => ({ kind: "criticalDevice", device, phase: node.phase })),
      ];
    }
    if (node.kind === "runtime") return node.section.phases.map((phase) => ({ kind: "phase", phase }));
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
    if (node.kind === "runtime") {
      const item = treeItem(runtimeSectionLabels(node.section), vscode.TreeItemCollapsibleState.Expanded);
      item.iconPath = new vscode.ThemeIcon("pulse");
      item.contextValue = "dpmlens.runtime";
      item.id = "runtime";
      return item;
    }
    if (node.kind === "critical") {
      const item = treeItem(criticalSectionLabels(node.phases), vscode.TreeItemCollapsibleState.Collapsed);
      item.iconPath = new vscode.ThemeIcon("flame");
      item.id = "critical";
      return item;
    }
    if (node.kind === "criticalPhase") {
      const item = treeItem(criticalPhaseLabels(node.phase), vscode.TreeItemCollapsibleState.Collapsed);
      item.iconPath = new vscode.ThemeIcon("debug-step-over");
      item.id = `critical:${node.phase.phase}`;
      return item;
    }
    if (node.kind === "whatif") {
      const item = treeItem(whatIfLabels(node.whatif, node.phase), vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon("lightbulb");
      return item;
    }
    if (node.kind === "criticalDevice") {
      const item = treeItem(criticalDeviceLabels(node.device), vscode.TreeItemCollapsibleState.None);
      item.iconPath = new vscode.ThemeIcon("circuit-board");
      return item;
    }
    if (node.kind === "callback") {
      const runtime = node.group.phase.startsWith("runtime_");
      const item = treeItem(
        runtime ? runtimeCallbackLabels(node.group) : callbackLabels(node.group),
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
