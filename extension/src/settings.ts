// `dpmlens.*` settings -> the object the server reads from initializationOptions and
// workspace/didChangeConfiguration (docs/lsp-protocol.md). vscode-free: unit-tested.
import { normalizeMappings, type PathMapping, type VariableContext } from "./pathMapping";

export const SEVERITIES = ["error", "warning", "info", "hint"] as const;
export type SeverityName = (typeof SEVERITIES)[number];
export const LOG_LEVELS = ["error", "warning", "info", "debug"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const RUN_MODES = ["onType", "onSave"] as const;
export type RunMode = (typeof RUN_MODES)[number];
/** Settings the project's `.dpmlens.toml` also has: the editor's value wins only when the user set it. */
export const FILE_KEYS = ["rules", "helperDepth"] as const;

export interface RuleSettings {
  enabled?: boolean;
  severity?: SeverityName;
}

export interface ServerSettings {
  enable: boolean;
  /** Compute every C file's findings in the background after the workspace index. */
  indexFindings: boolean;
  rules: Record<string, RuleSettings>;
  helperDepth: number;
  debounceMs: number;
  traceGlobs: string[];
  /** Device links file for the critical paths; "" = `.dpmlens.toml`'s `[traces] links`. */
  traceLinks: string;
  /** A `dpmlens fleet` store folder; "" = `.dpmlens.toml`'s `[fleet] store`. */
  fleetStore: string;
  pathMappings: PathMapping[];
  logLevel: LogLevel;
  run: RunMode;
  /** Which of FILE_KEYS the user set (any scope); the others come from `.dpmlens.toml`. */
  explicitKeys?: string[];
}

export const DEFAULTS: ServerSettings = {
  enable: true,
  indexFindings: true,
  rules: {},
  helperDepth: 3,
  debounceMs: 150,
  traceGlobs: ["**/*_dmesg.txt", "**/*_ftrace.txt", "**/*.perfetto-trace"],
  traceLinks: "",
  fleetStore: "",
  pathMappings: [],
  logLevel: "info",
  run: "onType",
};

/** Settings that change how the server process is started, not just how it behaves. */
export const RESTART_KEYS = ["interpreter"] as const;

/** Reads one `dpmlens.<key>` value (VS Code: WorkspaceConfiguration.get). */
export type SettingReader = (key: string) => unknown;

function intInRange(value: unknown, min: number, max: number, fallback: number, key: string, errors: string[]): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isFinite(value)) {
    errors.push(`dpmlens.${key} must be a number; using ${fallback}`);
    return fallback;
  }
  const clamped = Math.min(max, Math.max(min, Math.round(value)));
  if (clamped !== value) errors.push(`dpmlens.${key} = ${value} is outside ${min}..${max}; using ${clamped}`);
  return clamped;
}

function readRules(value: unknown, errors: string[]): Record<string, RuleSettings> {
  const rules: Record<string, RuleSettings> = {};
  if (value === undefined || value === null) return rules;
  if (typeof value !== "object" || Array.isArray(value)) {
    errors.push('dpmlens.rules must be an object keyed by rule id, e.g. {"wake-setup-in-noirq": {"severity": "error"}}');
    return rules;
  }
  for (const [id, entry] of Object.entries(value as Record<string, unknown>)) {
    // A bare boolean or severity string is a common shorthand; accept it.
    if (typeof entry === "boolean") {
      rules[id] = { enabled: entry };
      continue;
    }
    if (typeof entry === "string") {
      entry === "off" ? (rules[id] = { enabled: false }) : readSeverity(id, entry, rules, {}, errors);
      continue;
    }
    if (typeof entry !== "object" || entry === null) {
      errors.push(`dpmlens.rules["${id}"] must be {"enabled": bool, "severity": "error|warning|info|hint"}; ignored`);
      continue;
    }
    const raw = entry as { enabled?: unknown; severity?: unknown };
    const out: RuleSettings = {};
    if (raw.enabled !== undefined) {
      if (typeof raw.enabled === "boolean") out.enabled = raw.enabled;
      else errors.push(`dpmlens.rules["${id}"].enabled must be true or false; ignored`);
    }
    if (raw.severity !== undefined) readSeverity(id, raw.severity, rules, out, errors);
    rules[id] = out;
  }
  return rules;
}

function readSeverity(
  id: string,
  value: unknown,
  rules: Record<string, RuleSettings>,
  out: RuleSettings,
  errors: string[],
): void {
  const text = typeof value === "string" ? value.toLowerCase() : value;
  const normalized = text === "information" ? "info" : text;
  if (typeof normalized === "string" && (SEVERITIES as readonly string[]).includes(normalized)) {
    out.severity = normalized as SeverityName;
    rules[id] = out;
  } else {
    errors.push(`dpmlens.rules["${id}"]: unknown severity ${JSON.stringify(value)} (expected ${SEVERITIES.join(", ")}); ignored`);
  }
}

function readGlobs(value: unknown, errors: string[]): string[] {
  if (value === undefined || value === null) return [...DEFAULTS.traceGlobs];
  if (!Array.isArray(value)) {
    errors.push("dpmlens.traceGlobs must be a list of glob strings; using the defaults");
    return [...DEFAULTS.traceGlobs];
  }
  const globs = value.filter((g): g is string => typeof g === "string" && g.trim() !== "");
  if (globs.length !== value.length) errors.push("dpmlens.traceGlobs: non-string or empty entries ignored");
  return globs;
}

function readPath(value: unknown, key: string, errors: string[]): string {
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") {
    errors.push(`dpmlens.${key} must be a file path; ignored`);
    return "";
  }
  return value.trim();
}

/** Whether the user set `dpmlens.<key>` in any scope (VS Code: WorkspaceConfiguration.inspect). */
export type SetChecker = (key: string) => boolean;

/** `dpmlens.toggleChecking`: the new `dpmlens.enable` and where it goes (the workspace when one is open). */
export function toggledEnable(current: unknown, hasWorkspace: boolean): { value: boolean; target: "workspace" | "global" } {
  const enabled = typeof current === "boolean" ? current : DEFAULTS.enable;
  return { value: !enabled, target: hasWorkspace ? "workspace" : "global" };
}

/** Translates the user's settings; every problem found becomes a one-line message in `errors`. */
export function toServerSettings(
  read: SettingReader,
  ctx: VariableContext,
  isSet?: SetChecker,
): { settings: ServerSettings; errors: string[] } {
  const errors: string[] = [];
  const enable = read("enable");
  const indexFindings = read("indexFindings");
  if (indexFindings !== undefined && indexFindings !== null && typeof indexFindings !== "boolean") {
    errors.push(`dpmlens.indexFindings must be true or false; using ${DEFAULTS.indexFindings}`);
  }
  const logLevel = read("logLevel");
  const { mappings, errors: mappingErrors } = normalizeMappings(read("pathMappings"), ctx);
  errors.push(...mappingErrors);
  const settings: ServerSettings = {
    enable: typeof enable === "boolean" ? enable : DEFAULTS.enable,
    indexFindings: typeof indexFindings === "boolean" ? indexFindings : DEFAULTS.indexFindings,
    rules: readRules(read("rules"), errors),
    helperDepth: intInRange(read("helperDepth"), 0, 10, DEFAULTS.helperDepth, "helperDepth", errors),
    debounceMs: intInRange(read("debounceMs"), 0, 5000, DEFAULTS.debounceMs, "debounceMs", errors),
    traceGlobs: readGlobs(read("traceGlobs"), errors),
    traceLinks: readPath(read("traceLinks"), "traceLinks", errors),
    fleetStore: readPath(read("fleetStore"), "fleetStore", errors),
    pathMappings: mappings,
    logLevel: DEFAULTS.logLevel,
    run: DEFAULTS.run,
  };
  const run = read("run");
  if (run !== undefined && run !== null) {
    if (typeof run === "string" && (RUN_MODES as readonly string[]).includes(run)) settings.run = run as RunMode;
    else errors.push(`dpmlens.run: unknown mode ${JSON.stringify(run)} (expected ${RUN_MODES.join(", ")}); using onType`);
  }
  if (isSet) settings.explicitKeys = FILE_KEYS.filter((key) => isSet(key));
  if (logLevel !== undefined) {
    if (typeof logLevel === "string" && (LOG_LEVELS as readonly string[]).includes(logLevel)) {
      settings.logLevel = logLevel as LogLevel;
    } else {
      errors.push(`dpmlens.logLevel: unknown level ${JSON.stringify(logLevel)} (expected ${LOG_LEVELS.join(", ")}); using info`);
    }
  }
  return { settings, errors };
}
