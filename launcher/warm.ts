/**
 * Warm ranks: node processes started by `workpool launch` before it has read its options, which become ranks.
 *
 * A rank spends most of its start in node's own (about 50 ms of a 100 ms hello where NODE_EXTRA_CA_CERTS is set,
 * which node parses at every start), and the launcher spends about 40 ms loading itself and setting the job up
 * before it starts one. bin/workpool.js calls `startWarm` first thing: node starts lib/control/warm.ts (no
 * options but the heap's) for the first ranks while the launcher loads, and the local back-end hands each one
 * its rank (`takeWarm`): the environment, node options and app a cold rank would have been given, written to a
 * pipe. The warm process then loads the rank's imports and runs the app as node would have (lib/control/warm.ts).
 *
 * Only what would start the same is served warm: a rank the local back-end starts, from dist/, with no
 * `--node-arg`, no `-x`, no NODE_OPTIONS, whose environment is the launcher's own plus the job's WORKPOOL_*
 * variables. Anything else (hosts, an option this scan does not know) starts cold, as before; `releaseWarm`
 * kills the processes no rank took (at the launcher's exit too), and a warm process whose launcher is killed
 * ends by itself (its pipe closes).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { availableParallelism, totalmem } from "node:os";
import type { Socket } from "node:net";
import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { type RankExit, watchExit } from "./backend.ts";
import { rankHeapOptions } from "./heap.ts";

/** One warm process: started, its end watched from the start (it may die before a rank takes it). */
export interface WarmProcess {
  readonly child: ChildProcess;
  readonly exit: Promise<RankExit>;
  /** Whether it has exited (then it is never handed out). */
  readonly exited: () => boolean;
}

interface WarmPool {
  /** The node options every warm process was started with (the heap's). */
  readonly heap: readonly string[];
  /** The environment every warm process was started with. */
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly idle: WarmProcess[];
}

let pool: WarmPool | undefined;

/** The script a warm process runs: beside the preload, in dist/ (warm ranks are only started from dist/). */
const WARM_SCRIPT = new URL("../lib/control/warm.js", import.meta.url);

/**
 * WORKPOOL_WARM=0 starts every rank cold. A warm rank's /proc/PID/environ is the launcher's environment as the
 * process began, without the job's variables, which came on its pipe (no secret of the job shows there); a tool
 * that reads a rank's job variables from /proc needs cold ranks.
 */
export const WARM_VARIABLE = "WORKPOOL_WARM";

/** `launch`'s options that take a value (`--flag value` or `--flag=value`); those not here take none. */
const VALUE_OPTIONS = new Set([
  "-n",
  "--np",
  "--stats-json",
  "--trace",
  "--dashboard-host",
  "--dashboard-keep",
  "--timeout",
  "--heartbeat",
  "--pool",
  "--transport",
  "--agent",
]);
const SWITCHES = new Set([
  "--no-prefix",
  "--stats",
  "--quiet",
  "--dashboard",
  "--force",
  "--oversubscribe",
  "--insecure",
]);

/**
 * The number of ranks `workpool launch ARGS` starts on this machine (-n, 1 without), read without judging the
 * options; undefined where any option could start a rank another way or not at all (--help, hosts,
 * --node-arg, -x, an option this scan does not know, a bad -n, an app that is not there): those start cold.
 */
export function launchRanks(args: readonly string[]): number | undefined {
  let np = 1;
  let i = 0;
  for (; i < args.length; i++) {
    const arg = args[i] as string;
    if (arg === "--") {
      i++;
      break;
    }
    if (!arg.startsWith("-") || arg === "-") break;
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    if (VALUE_OPTIONS.has(flag)) {
      const value = eq > 0 ? arg.slice(eq + 1) : args[++i];
      if (value === undefined) return undefined;
      if (flag === "-n" || flag === "--np") {
        if (!/^[1-9]\d{0,5}$/.test(value)) return undefined;
        np = Number(value);
      }
    } else if (!SWITCHES.has(flag) || (eq > 0 && flag !== "--dashboard")) {
      return undefined;
    }
  }
  // No app, or none there: the launcher says so and starts nothing.
  const app = args[i];
  if (app === undefined || !existsSync(app)) return undefined;
  return np;
}

/**
 * Starts the warm ranks `workpool launch ARGS` can use: one a rank (`launchRanks`), at most one a core (more
 * would only compete with the launcher for them), given the heap options its ranks will be given. None where
 * NODE_OPTIONS is set (its preloads would run before the rank's environment is there), or WORKPOOL_WARM=0.
 */
export function startWarm(
  args: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  cores = availableParallelism(),
): void {
  if (pool !== undefined || (env.NODE_OPTIONS ?? "").trim() !== "" || env[WARM_VARIABLE] === "0") return;
  const np = launchRanks(args);
  if (np === undefined) return;
  const heap = rankHeapOptions([], np, totalmem(), env.NODE_OPTIONS);
  const snapshot = { ...env };
  pool = { heap, env: snapshot, idle: [] };
  // A launcher that ends before its ranks start (a usage error) ends its warm processes with it.
  process.once("exit", releaseWarm);
  for (let i = 0; i < Math.min(np, cores); i++) {
    const child = spawn(process.execPath, [...heap, fileURLToPath(WARM_SCRIPT)], {
      env: snapshot,
      stdio: ["ignore", "pipe", "pipe", "pipe"],
      detached: true,
    });
    if (child.pid === undefined) {
      child.on("error", () => {});
      break;
    }
    const { exit, exited } = watchExit(child);
    const control = child.stdio[3] as Writable;
    control.on("error", () => {});
    // Until a rank takes it, a warm process holds the launcher's event loop open no longer than its own work.
    child.unref();
    for (const stream of [child.stdout, child.stderr, control]) (stream as unknown as Socket).unref();
    pool.idle.push({ child, exit, exited });
  }
}

/**
 * A warm process made rank: the one waiting for a rank started as `node ...argv` with environment `env`, now
 * told its rank; undefined (start the rank cold) when none is waiting or the rank would not start the same.
 */
export function takeWarm(argv: readonly string[], env: Readonly<Record<string, string>>): WarmProcess | undefined {
  if (pool === undefined) return undefined;
  const rank = parseRankArgv(argv, pool.heap);
  if (rank === undefined || !sameBesideJob(pool.env, env)) return undefined;
  let warm = pool.idle.shift();
  while (warm?.exited()) warm = pool.idle.shift();
  if (warm === undefined) return undefined;
  const { child } = warm;
  child.ref();
  for (const stream of [child.stdout, child.stderr]) (stream as unknown as Socket).ref();
  (child.stdio[3] as Writable).end(
    JSON.stringify({
      env,
      execArgv: rank.nodeArgs,
      imports: rank.imports,
      app: rank.app,
      args: rank.args,
    }),
  );
  return warm;
}

/** How long `endWarm` waits for killed warm processes to exit. */
const WARM_END_MS = 1000;

/**
 * Ends the warm processes no rank took and waits until they have (at most WARM_END_MS), so that the launcher,
 * not init, collects them: a launcher that refused its command line left them as `<defunct>` children of init,
 * which `ps` showed for seconds where init collects them slowly (a container's).
 */
export async function endWarm(): Promise<void> {
  if (pool === undefined) return;
  const left = pool.idle.filter((warm) => !warm.exited());
  for (const warm of left) warm.child.ref();
  releaseWarm();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.all(left.map((warm) => warm.exit)),
    new Promise((resolve) => (timer = setTimeout(resolve, WARM_END_MS))),
  ]);
  clearTimeout(timer);
}

/** Ends the warm processes no rank took. */
export function releaseWarm(): void {
  if (pool === undefined) return;
  for (const warm of pool.idle.splice(0)) {
    // It has run nothing of anyone's yet: ended at once, it spends no more of node's start (a launcher that
    // refused its options, a job on other hosts).
    if (!warm.exited()) warm.child.kill("SIGKILL");
    (warm.child.stdio[3] as Writable).destroy();
  }
}

/**
 * `argv` (a rank's node arguments) read as `HEAP --import URL ... APP ARGS...`, where HEAP is the warm processes'
 * heap options exactly and each URL a file's (the boot and the preload, and tsx's loader for a TypeScript app);
 * undefined for anything else (another node option).
 */
export function parseRankArgv(
  argv: readonly string[],
  heap: readonly string[],
): { nodeArgs: string[]; imports: string[]; app: string; args: string[] } | undefined {
  if (heap.some((flag, i) => argv[i] !== flag)) return undefined;
  const imports: string[] = [];
  let i = heap.length;
  while (argv[i] === "--import" && argv[i + 1] !== undefined) {
    imports.push(argv[i + 1] as string);
    i += 2;
  }
  const app = argv[i];
  if (app === undefined || app.startsWith("-") || !/\.[cm]?[jt]sx?$/.test(app)) return undefined;
  if (!imports.every((url) => url.startsWith("file:"))) return undefined;
  return { nodeArgs: argv.slice(0, i), imports, app, args: argv.slice(i + 1) };
}

/** Whether `rank` is `warm` but for the job's own variables (WORKPOOL_*), which the warm process takes on. */
export function sameBesideJob(
  warm: Readonly<Record<string, string | undefined>>,
  rank: Readonly<Record<string, string | undefined>>,
): boolean {
  for (const name of new Set([...Object.keys(warm), ...Object.keys(rank)])) {
    if (!name.startsWith("WORKPOOL_") && warm[name] !== rank[name]) return false;
  }
  return true;
}
