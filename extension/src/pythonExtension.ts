// The Python extension's selected interpreter (ms-python.python), when that extension is installed.
import * as vscode from "vscode";

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(env: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

const PYTHON_EXTENSION = "ms-python.python";

async function api(): Promise<PythonApi | undefined> {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION);
  if (!ext) return undefined;
  if (!ext.isActive) await ext.activate();
  return ext.exports;
}

export async function pythonExtensionInterpreter(): Promise<string | undefined> {
  const environments = (await api())?.environments;
  if (!environments) return undefined;
  const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
  const active = environments.getActiveEnvironmentPath(resource);
  const resolved = await environments.resolveEnvironment(active);
  return resolved?.executable.uri?.fsPath ?? active.path;
}

/** Calls `listener` when the user selects another interpreter in the Python extension. */
export function onPythonInterpreterChanged(listener: () => void): vscode.Disposable | undefined {
  const ext = vscode.extensions.getExtension<PythonApi>(PYTHON_EXTENSION);
  if (!ext) return undefined;
  const subscription: { current?: vscode.Disposable; disposed: boolean } = { disposed: false };
  api().then(
    (a) => {
      if (!subscription.disposed && a?.environments) {
        subscription.current = a.environments.onDidChangeActiveEnvironmentPath(() => listener());
      }
    },
    () => undefined,
  );
  return new vscode.Disposable(() => {
    subscription.disposed = true;
    subscription.current?.dispose();
  });
}
