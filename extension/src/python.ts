// Finding a Python >= 3.10 to run the server from. vscode-free: unit-tested under vitest.
//
// Order (as in microsoft/vscode-python-tools-extension-template): the `dpmlens.interpreter`
// setting, else the Python extension's selected interpreter, else python3 / python on PATH.
// An explicit setting is authoritative: when it is unusable we say so instead of silently
// running some other Python the user did not choose.
import { execFile } from "node:child_process";

export const MIN_PYTHON = { major: 3, minor: 10 } as const;

export type CandidateSource = "setting" | "python-extension" | "path";

export interface Candidate {
  source: CandidateSource;
  command: string;
}

export interface PythonInfo {
  executable: string;
  version: [number, number, number];
  /** venv with ensurepip works (Debian/Ubuntu ship it separately as python3-venv). */
  canCreateVenv: boolean;
}

export interface Interpreter extends PythonInfo {
  source: CandidateSource;
  command: string;
}

export interface Rejection {
  candidate: Candidate;
  reason: string;
}

export interface DiscoveryResult {
  interpreter?: Interpreter;
  rejected: Rejection[];
  /** Set when nothing fits: the one message to show the user. */
  message?: string;
}

export interface DiscoveryInput {
  /** The `dpmlens.interpreter` setting, already variable-expanded; empty/undefined when unset. */
  setting?: string;
  /** The Python extension's selected interpreter, if that extension is installed. */
  pythonExtension?: () => Promise<string | undefined>;
  /** Names tried on PATH, in order. */
  pathNames?: string[];
}

/** Runs a candidate and reports what it is; rejects with a one-line reason. */
export type Probe = (command: string) => Promise<PythonInfo>;

export const defaultPathNames = (platform: NodeJS.Platform = process.platform): string[] =>
  platform === "win32" ? ["python", "python3"] : ["python3", "python"];

const PROBE_SCRIPT = [
  "import json, sys",
  "try:",
  "    import ensurepip, venv  # noqa: F401",
  "    ok = True",
  "except Exception:",
  "    ok = False",
  "print(json.dumps({'executable': sys.executable, 'version': list(sys.version_info[:3]), 'venv': ok}))",
].join("\n");

export const probePython: Probe = (command) =>
  new Promise((resolve, reject) => {
    execFile(command, ["-c", PROBE_SCRIPT], { timeout: 15000, windowsHide: true }, (err, stdout) => {
      if (err) {
        const code = (err as NodeJS.ErrnoException).code;
        reject(new Error(code === "ENOENT" ? "not found" : `does not run (${err.message.split("\n")[0]})`));
        return;
      }
      try {
        const line = stdout.trim().split("\n").pop() ?? "";
        const data = JSON.parse(line) as { executable: string; version: number[]; venv: boolean };
        const [major, minor, micro] = data.version;
        resolve({
          executable: data.executable || command,
          version: [major ?? 0, minor ?? 0, micro ?? 0],
          canCreateVenv: data.venv,
        });
      } catch {
        reject(new Error("is not a Python interpreter"));
      }
    });
  });

export function versionText(version: [number, number, number]): string {
  return version.join(".");
}

/** Why `info` cannot run the server, or undefined when it can. */
export function unsuitableReason(info: PythonInfo): string | undefined {
  const [major, minor] = info.version;
  if (major < MIN_PYTHON.major || (major === MIN_PYTHON.major && minor < MIN_PYTHON.minor)) {
    return `is Python ${versionText(info.version)}, older than ${MIN_PYTHON.major}.${MIN_PYTHON.minor}`;
  }
  if (!info.canCreateVenv) {
    return `is Python ${versionText(info.version)} without the venv module (Debian/Ubuntu: apt install python3-venv)`;
  }
  return undefined;
}

export async function discoverPython(input: DiscoveryInput, probe: Probe = probePython): Promise<DiscoveryResult> {
  const rejected: Rejection[] = [];

  const attempt = async (candidate: Candidate): Promise<Interpreter | undefined> => {
    try {
      const info = await probe(candidate.command);
      const reason = unsuitableReason(info);
      if (reason === undefined) return { ...info, ...candidate };
      rejected.push({ candidate, reason });
    } catch (err) {
      rejected.push({ candidate, reason: err instanceof Error ? err.message : String(err) });
    }
    return undefined;
  };

  const setting = input.setting?.trim();
  if (setting) {
    const interpreter = await attempt({ source: "setting", command: setting });
    if (interpreter) return { interpreter, rejected };
    return {
      rejected,
      message:
        `dpmlens: the interpreter in the "dpmlens.interpreter" setting (${setting}) ${rejected[0]?.reason}. ` +
        `Set it to a Python ${MIN_PYTHON.major}.${MIN_PYTHON.minor} or newer, or clear it to use the one on PATH.`,
    };
  }

  if (input.pythonExtension) {
    let selected: string | undefined;
    try {
      selected = await input.pythonExtension();
    } catch (err) {
      rejected.push({
        candidate: { source: "python-extension", command: "(Python extension)" },
        reason: `could not be asked (${err instanceof Error ? err.message : String(err)})`,
      });
    }
    if (selected) {
      const interpreter = await attempt({ source: "python-extension", command: selected });
      if (interpreter) return { interpreter, rejected };
    }
  }

  for (const name of input.pathNames ?? defaultPathNames()) {
    const interpreter = await attempt({ source: "path", command: name });
    if (interpreter) return { interpreter, rejected };
  }

  const tried = rejected.map((r) => `${r.candidate.command} ${r.reason}`).join("; ");
  return {
    rejected,
    message:
      `dpmlens needs Python ${MIN_PYTHON.major}.${MIN_PYTHON.minor} or newer to run its language server, ` +
      `and none was found (${tried || "nothing to try"}). Install Python ${MIN_PYTHON.major}.${MIN_PYTHON.minor}+ ` +
      `with its venv module, or point the "dpmlens.interpreter" setting at one.`,
  };
}

/** The last interpreter discovery chose, remembered across sessions (VS Code globalState). */
export interface CachedInterpreter {
  /** What discovery was asked (setting, Python extension present): another question, another answer. */
  key: string;
  interpreter: Interpreter;
  /** mtime of interpreter.executable when it was probed. */
  mtimeMs: number;
}

export function discoveryKey(setting: string | undefined, hasPythonExtension: boolean): string {
  return JSON.stringify({ setting: setting?.trim() || "", hasPythonExtension });
}

/**
 * The cached interpreter when it still answers the same question and its executable is
 * unchanged. Probing costs a Python start-up (~0.1-1 s): with this, a window reload starts the
 * server without waiting for it, and discovery re-runs in the background to catch changes
 * (a new `python3` on PATH, another selection in the Python extension).
 */
export function reusableInterpreter(
  cached: CachedInterpreter | undefined,
  key: string,
  currentMtimeMs: number | undefined,
): Interpreter | undefined {
  if (!cached || cached.key !== key || currentMtimeMs === undefined) return undefined;
  return cached.mtimeMs === currentMtimeMs && unsuitableReason(cached.interpreter) === undefined ? cached.interpreter : undefined;
}
