// The managed Python environment the server runs from: a venv in the extension's global
// storage with the bundled dpmlens wheel installed (its dependencies come from the package
// index pip is configured for). Created on first use, reused while the bundled wheel and the
// base interpreter stay the same, re-created when either changes. vscode-free: the caller
// passes the progress and log sinks.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import * as fs from "node:fs/promises";
import * as path from "node:path";

export interface BundleManifest {
  wheel: string;
  version: string;
  sha256: string;
}

export interface EnvStamp {
  sha256: string;
  version: string;
  basePython: string;
  basePythonVersion: string;
}

export interface ServerEnv {
  envDir: string;
  python: string;
  /** argv that starts the language server over stdio. */
  serverCommand: string[];
  created: boolean;
}

export interface EnsureOptions {
  basePython: { executable: string; version: [number, number, number] };
  bundleDir: string;
  storageDir: string;
  log: (line: string) => void;
  progress: (message: string) => void;
  platform?: NodeJS.Platform;
}

const STAMP = "dpmlens-env.json";
const LOCK_STALE_MS = 10 * 60 * 1000;

export async function readManifest(bundleDir: string): Promise<BundleManifest> {
  const file = path.join(bundleDir, "manifest.json");
  let data: Partial<BundleManifest>;
  try {
    data = JSON.parse(await fs.readFile(file, "utf8")) as Partial<BundleManifest>;
  } catch (err) {
    throw new Error(`the bundled server is missing or damaged (${file}: ${(err as Error).message}); reinstall the extension`);
  }
  if (!data.wheel || !data.sha256 || !data.version) throw new Error(`${file} lacks wheel/version/sha256; reinstall the extension`);
  return { wheel: data.wheel, version: data.version, sha256: data.sha256 };
}

export function envPaths(envDir: string, platform: NodeJS.Platform = process.platform) {
  const bin = platform === "win32" ? path.join(envDir, "Scripts") : path.join(envDir, "bin");
  const exe = platform === "win32" ? ".exe" : "";
  return { python: path.join(bin, `python${exe}`), dpmlens: path.join(bin, `dpmlens${exe}`) };
}

/** Whether an existing environment (described by its stamp) can serve this bundle and interpreter. */
export function isCurrent(stamp: EnvStamp | undefined, manifest: BundleManifest, basePython: string): boolean {
  return stamp !== undefined && stamp.sha256 === manifest.sha256 && stamp.basePython === basePython;
}

async function readStamp(envDir: string): Promise<EnvStamp | undefined> {
  try {
    return JSON.parse(await fs.readFile(path.join(envDir, STAMP), "utf8")) as EnvStamp;
  } catch {
    return undefined;
  }
}

/** Runs a process, feeding each output line to `onLine`; rejects with the tail of its output. */
export function run(command: string, args: string[], onLine: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      windowsHide: true,
      env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: "1", PIP_NO_INPUT: "1", PYTHONUNBUFFERED: "1" },
    });
    const tail: string[] = [];
    let pending = "";
    const feed = (chunk: Buffer) => {
      pending += chunk.toString("utf8");
      const lines = pending.split(/\r?\n/);
      pending = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.trim()) continue;
        onLine(line);
        tail.push(line);
        if (tail.length > 8) tail.shift();
      }
    };
    child.stdout.on("data", feed);
    child.stderr.on("data", feed);
    child.on("error", (err) => reject(new Error(`${command} could not be started: ${err.message}`)));
    child.on("close", (code) => {
      if (pending.trim()) tail.push(pending);
      if (code === 0) resolve();
      else reject(new Error(`${path.basename(command)} ${args.slice(0, 3).join(" ")} exited with ${code}: ${tail.join(" | ")}`));
    });
  });
}

async function withLock<T>(lockDir: string, log: (line: string) => void, body: () => Promise<T>): Promise<T> {
  // Two windows may activate at once on first use; mkdir is atomic, so it is the lock.
  for (;;) {
    try {
      await fs.mkdir(lockDir);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const age = Date.now() - (await fs.stat(lockDir).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if (age > LOCK_STALE_MS) {
        log(`removing stale lock ${lockDir}`);
        await fs.rm(lockDir, { recursive: true, force: true });
        continue;
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  try {
    return await body();
  } finally {
    await fs.rm(lockDir, { recursive: true, force: true });
  }
}

type CheckOptions = Pick<EnsureOptions, "basePython" | "bundleDir" | "storageDir" | "platform">;

function layout(opts: CheckOptions) {
  const envDir = path.join(opts.storageDir, "server-env");
  const paths = envPaths(envDir, opts.platform);
  return { envDir, paths, serverCommand: [paths.dpmlens, "serve"] };
}

async function isReady(opts: CheckOptions, manifest: BundleManifest): Promise<boolean> {
  const { envDir, paths } = layout(opts);
  return isCurrent(await readStamp(envDir), manifest, opts.basePython.executable) && existsSync(paths.dpmlens);
}

/** The environment if it exists and matches the bundle and interpreter; undefined otherwise. */
export async function existingServerEnv(opts: CheckOptions): Promise<ServerEnv | undefined> {
  const manifest = await readManifest(opts.bundleDir);
  const { envDir, paths, serverCommand } = layout(opts);
  return (await isReady(opts, manifest)) ? { envDir, python: paths.python, serverCommand, created: false } : undefined;
}

export async function ensureServerEnv(opts: EnsureOptions): Promise<ServerEnv> {
  const manifest = await readManifest(opts.bundleDir);
  const { envDir, paths, serverCommand } = layout(opts);
  const ready = () => isReady(opts, manifest);

  if (await ready()) return { envDir, python: paths.python, serverCommand, created: false };

  await fs.mkdir(opts.storageDir, { recursive: true });
  return withLock(path.join(opts.storageDir, "server-env.lock"), opts.log, async () => {
    // Another window may have finished it while we waited for the lock.
    if (await ready()) return { envDir, python: paths.python, serverCommand, created: false };

    const started = Date.now();
    opts.log(`creating the server environment ${envDir} (dpmlens ${manifest.version}, ${opts.basePython.executable})`);
    await fs.rm(envDir, { recursive: true, force: true });
    opts.progress(`Creating a Python ${opts.basePython.version.join(".")} environment...`);
    await run(opts.basePython.executable, ["-m", "venv", envDir], opts.log);

    opts.progress(`Installing dpmlens ${manifest.version} and its dependencies...`);
    await run(
      paths.python,
      ["-m", "pip", "install", "--progress-bar", "off", `${path.join(opts.bundleDir, manifest.wheel)}[server,traces]`],
      (line) => {
        opts.log(line);
        const collecting = /^\s*Collecting (\S+)/.exec(line);
        if (collecting) opts.progress(`Installing ${collecting[1]}...`);
      },
    );
    await run(paths.python, ["-c", "import dpmlens"], opts.log);
    const stamp: EnvStamp = {
      sha256: manifest.sha256,
      version: manifest.version,
      basePython: opts.basePython.executable,
      basePythonVersion: opts.basePython.version.join("."),
    };
    // Written last: its presence means the environment is complete. Written to a temporary
    // file and renamed, so a crash mid-write never leaves a partial stamp.
    const stampPath = path.join(envDir, STAMP);
    await fs.writeFile(`${stampPath}.tmp`, JSON.stringify(stamp, null, 2));
    await fs.rename(`${stampPath}.tmp`, stampPath);
    opts.log(`server environment ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return { envDir, python: paths.python, serverCommand, created: true };
  });
}
