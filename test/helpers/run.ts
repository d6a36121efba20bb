import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ExecutionContext } from "ava";

/** The repository root; every command runs there, so fixture paths may be given relative to it. */
export const ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const BIN = join(ROOT, "bin", "workpool.js");

/** Absolute path of a file or folder in test/fixtures/. */
export function fixture(name: string): string {
  return join(ROOT, "test", "fixtures", name);
}

export interface RunResult {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Running {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Settles when the process has exited and both output streams have closed. */
  readonly result: Promise<RunResult>;
  /**
   * Resolves with the first `count` stdout lines that match `pattern`, as soon as they have all arrived
   * (lines seen before the call count too). Rejects if the process ends first.
   */
  lines(pattern: RegExp, count: number): Promise<string[]>;
}

interface LineWaiter {
  readonly pattern: RegExp;
  readonly count: number;
  readonly found: string[];
  readonly resolve: (lines: string[]) => void;
  readonly reject: (e: Error) => void;
}

/** The environment for a child: ours, minus anything that would make a child think it is a rank. */
function childEnv(extra: NodeJS.ProcessEnv | undefined): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("WORKPOOL_")) env[k] = v;
  return { ...env, ...extra };
}

/** Starts `node args...` in the repository root and collects its output. */
export function startNode(args: readonly string[], env?: NodeJS.ProcessEnv): Running {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: childEnv(env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let partial = "";
  const seen: string[] = [];
  const waiters: LineWaiter[] = [];
  let ended = false;

  const offer = (w: LineWaiter, line: string): boolean => {
    if (w.pattern.test(line)) w.found.push(line);
    if (w.found.length < w.count) return false;
    w.resolve(w.found);
    return true;
  };

  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    stdout += chunk;
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    for (const line of parts) {
      seen.push(line);
      for (let i = waiters.length - 1; i >= 0; i--) if (offer(waiters[i] as LineWaiter, line)) waiters.splice(i, 1);
    }
  });
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
  });

  const result = new Promise<RunResult>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => {
      ended = true;
      for (const w of waiters.splice(0)) {
        w.reject(
          new Error(
            `process ended (code ${code}, signal ${signal}) after ${w.found.length} of ${w.count} lines matching ${w.pattern}\n` +
              `stdout:\n${stdout}\nstderr:\n${stderr}`,
          ),
        );
      }
      resolve({ code, signal, stdout, stderr });
    });
  });

  const lines = (pattern: RegExp, count: number): Promise<string[]> =>
    new Promise<string[]>((resolve, reject) => {
      const w: LineWaiter = { pattern, count, found: [], resolve, reject };
      for (const line of seen) if (offer(w, line)) return;
      if (ended)
        reject(new Error(`process already ended with ${w.found.length} of ${count} lines matching ${pattern}`));
      else waiters.push(w);
    });

  if (child.pid === undefined) throw new Error("could not start node");
  return { child, pid: child.pid, result, lines };
}

/** Starts `workpool args...` (the real CLI, `node bin/workpool.js`). */
export function startWorkpool(args: readonly string[], env?: NodeJS.ProcessEnv): Running {
  return startNode([BIN, ...args], env);
}

/** Starts `workpool launch args...`. */
export function launch(args: readonly string[], env?: NodeJS.ProcessEnv): Running {
  return startWorkpool(["launch", ...args], env);
}

/**
 * Ranks this test process lets run at once through `run`. ava runs a file's tests concurrently: a file of twenty
 * jobs of up to 16 ranks would start 150 node processes together on a 2-core machine, each waiting its turn for a
 * core for longer than any test's patience. A job larger than this runs when no other is running.
 */
const RANKS_AT_ONCE = 24;
let ranksRunning = 0;
const waitingForRanks: { readonly ranks: number; readonly start: () => void }[] = [];

/** The `-n` of a launch's arguments (1 without one, as the launcher's default). */
function ranksOf(args: readonly string[]): number {
  const i = args.findIndex((a) => a === "-n" || a === "--np");
  const n = i >= 0 ? Number(args[i + 1]) : 1;
  return Number.isInteger(n) && n > 0 ? n : 1;
}

function admitRanks(): void {
  while (waitingForRanks.length > 0) {
    const next = waitingForRanks[0] as (typeof waitingForRanks)[number];
    if (ranksRunning > 0 && ranksRunning + next.ranks > RANKS_AT_ONCE) return;
    waitingForRanks.shift();
    ranksRunning += next.ranks;
    next.start();
  }
}

/** Runs `workpool launch args...` to the end, once there is room for its ranks (RANKS_AT_ONCE). */
export async function run(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<RunResult> {
  const ranks = ranksOf(args);
  await new Promise<void>((start) => {
    waitingForRanks.push({ ranks, start });
    admitRanks();
  });
  try {
    return await launch(args, env).result;
  } finally {
    ranksRunning -= ranks;
    admitRanks();
  }
}

/** Runs a fixture as a plain one-rank program, without the launcher (how a user runs an app under a debugger). */
export function runAlone(file: string, args: readonly string[] = []): Promise<RunResult> {
  return startNode(["--import", "tsx", "--conditions=workpool-source", file, ...args]).result;
}

/** Stdout (or stderr) split into lines, without the empty string after the last newline. */
export function linesOf(text: string): string[] {
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

/**
 * `workpool launch -n N [--pool SPEC] app args...`, at most `slots` at a time (the others wait for a free slot),
 * so a test file that starts many jobs does not crowd the machine's cores.
 */
export function limitedLauncher(
  slots: number,
): (n: number, pool: string | undefined, app: string, args: readonly string[]) => Promise<RunResult> {
  let running = 0;
  const waiting: (() => void)[] = [];
  return async (n, pool, app, args) => {
    if (running >= slots) await new Promise<void>((resolve) => waiting.push(resolve));
    running++;
    try {
      return await run(["-n", String(n), "--timeout", "100", ...(pool ? ["--pool", pool] : []), app, ...args]);
    } finally {
      running--;
      waiting.shift()?.();
    }
  };
}

/** Rank 0's lines of `text`, without the `[0] ` prefix. */
export function rank0(text: string): string[] {
  return linesOf(text)
    .filter((l) => l.startsWith("[0] "))
    .map((l) => l.slice(4));
}

/** Checks that `r` exited with status 0, showing its output if not. */
export function ok(t: ExecutionContext, r: RunResult): void {
  t.is(r.code, 0, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
}

/** The one JSON line rank 0 printed (checked to be the only line it printed). */
export function jsonLine(t: ExecutionContext, r: RunResult): Record<string, unknown> {
  const lines = rank0(r.stdout);
  t.is(lines.length, 1, r.stdout);
  return JSON.parse(lines[0] ?? "null") as Record<string, unknown>;
}

/** The JSON of every `[R] result {...}` line in `stdout` (one a rank, in the order printed). */
export function resultLines<T>(stdout: string): T[] {
  return linesOf(stdout)
    .filter((l) => l.includes("] result "))
    .map((l) => JSON.parse(l.slice(l.indexOf("result ") + "result ".length)) as T);
}

/** The JSON of every `[rank] label json` line in `stdout`, by rank (fixtures that print `label json` lines). */
export function labelled(stdout: string, label: string): Map<number, Record<string, unknown>> {
  const out = new Map<number, Record<string, unknown>>();
  for (const l of linesOf(stdout)) {
    const m = /^\[(\d+)\] (\S+) (.*)$/.exec(l);
    if (m && m[2] === label) out.set(Number(m[1]), JSON.parse(m[3] as string) as Record<string, unknown>);
  }
  return out;
}

/** The output of a program run alone (runAlone) as the launcher would have shown rank 0's: each line `[0] ...`. */
export function asRank0(stdout: string): string {
  return linesOf(stdout)
    .map((l) => `[0] ${l}`)
    .join("\n");
}

/** Resolves with the first match of `pattern` in the process's stderr (rejects if it ends first). */
export function stderrMatch(job: Running, pattern: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let text = "";
    const onData = (chunk: Buffer | string) => {
      text += chunk.toString();
      const m = pattern.exec(text);
      if (m) {
        job.child.stderr?.off("data", onData);
        resolve(m);
      }
    };
    job.child.stderr?.on("data", onData);
    job.result.then((r) => reject(new Error(`the launcher ended first (code ${r.code}):\n${r.stderr}`)), reject);
  });
}
