// Path mappings (build machine -> this workspace) and the `${...}` variables in settings.
// vscode-free: unit-tested under vitest.
import * as path from "node:path";

export interface PathMapping {
  from: string;
  to: string;
}

export interface VariableContext {
  workspaceFolders: { name: string; path: string }[];
  userHome: string;
}

/**
 * Expands `${workspaceFolder}` (the first folder), `${workspaceFolder:name}`, `${userHome}`,
 * `${env:NAME}` and a leading `~`. Unknown variables are left as they are, so the server (or
 * the user, in the log) can still see what was meant. Returns the errors it met.
 */
export function expandVariables(
  text: string,
  ctx: VariableContext,
  env: Record<string, string | undefined> = process.env,
): { value: string; errors: string[] } {
  const errors: string[] = [];
  let value = text.replace(/\$\{([^}]+)\}/g, (whole, name: string) => {
    if (name === "workspaceFolder") {
      const first = ctx.workspaceFolders[0];
      if (!first) errors.push(`${whole} used but no folder is open`);
      return first ? first.path : whole;
    }
    if (name.startsWith("workspaceFolder:")) {
      const wanted = name.slice("workspaceFolder:".length);
      const folder = ctx.workspaceFolders.find((f) => f.name === wanted);
      if (!folder) errors.push(`${whole}: no workspace folder named "${wanted}"`);
      return folder ? folder.path : whole;
    }
    if (name === "userHome") return ctx.userHome;
    if (name.startsWith("env:")) return env[name.slice(4)] ?? "";
    return whole;
  });
  if (value === "~" || value.startsWith("~/")) value = ctx.userHome + value.slice(1);
  return { value, errors };
}

function trimSeparator(p: string): string {
  return p.length > 1 && (p.endsWith("/") || p.endsWith("\\")) ? p.slice(0, -1) : p;
}

/** Validates raw `dpmlens.pathMappings` entries and expands their variables. */
export function normalizeMappings(raw: unknown, ctx: VariableContext): { mappings: PathMapping[]; errors: string[] } {
  const mappings: PathMapping[] = [];
  const errors: string[] = [];
  if (raw === undefined || raw === null) return { mappings, errors };
  if (!Array.isArray(raw)) {
    return { mappings, errors: ['dpmlens.pathMappings must be a list of {"from", "to"} objects'] };
  }
  raw.forEach((entry: unknown, index) => {
    const item = entry as { from?: unknown; to?: unknown } | null;
    if (!item || typeof item.from !== "string" || typeof item.to !== "string" || !item.from || !item.to) {
      errors.push(`dpmlens.pathMappings[${index}] needs non-empty "from" and "to" strings; ignored`);
      return;
    }
    const from = expandVariables(item.from, ctx);
    const to = expandVariables(item.to, ctx);
    errors.push(...from.errors.map((e) => `dpmlens.pathMappings[${index}].from: ${e}`));
    errors.push(...to.errors.map((e) => `dpmlens.pathMappings[${index}].to: ${e}`));
    mappings.push({ from: trimSeparator(from.value), to: trimSeparator(to.value) });
  });
  return { mappings, errors };
}

/**
 * Maps a path recorded elsewhere (a build machine, a trace) onto this machine: the longest
 * `from` prefix that matches on a whole path segment wins. Unmatched paths come back unchanged.
 */
export function mapPath(p: string, mappings: readonly PathMapping[]): string {
  let best: PathMapping | undefined;
  for (const m of mappings) {
    const matches = p === m.from || p.startsWith(m.from + "/") || p.startsWith(m.from + "\\");
    if (matches && (!best || m.from.length > best.from.length)) best = m;
  }
  if (!best) return p;
  const rest = p.slice(best.from.length).replace(/^[/\\]/, "");
  return rest ? path.posix.join(best.to.replace(/\\/g, "/"), rest.replace(/\\/g, "/")) : best.to;
}
