/**
 * `npm run bench -- startup`: what starting a job costs. A JavaScript hello world (programs/hello.mjs: connect,
 * print the rank, close) run by bare `node`, by `workpool launch -n 1` and by `-n 64`, the launcher and ranks
 * running from dist/ (no TypeScript loader anywhere); every command is run `--repeat` times, the commands
 * interleaved round by round so that other work on the machine falls on all of them alike, and the median
 * counts. Targets (issue 28): `-n 1` at most 1.5x bare node, `-n 64` at most 3 s (printed beside its ratio to
 * bare node and the floor of 64 starts of node itself on these cores).
 *
 * Where the time goes: node's own start, one process under tsx, the launcher's start from dist/ and from the
 * sources, `-n 1` from the sources (how every job started before dist/ was used), and rank 0's own clock:
 * loading (node, the preload, workpool and zeromq), the rendezvous round trip in `connect`, `close`, and what
 * the launcher adds around the rank. Then the resident memory of an idle rank (programs/idle.mjs), with and
 * without tsx.
 *
 * Options: `--repeat N` (default 7), `--np N` for the large job (default 64), `--sources` to time the large job
 * from the sources too (slow: every rank compiles under tsx).
 */
import { readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { buildState } from "../bin/build-state.js";
import { TS_LOADER } from "../launcher/loader.ts";
import {
  BenchUsageError,
  fmt,
  formatTable,
  median,
  ROOT,
  scorecard,
  start,
  type Suite,
  WORKPOOL_BIN,
} from "./harness.ts";

/** The installed command (package.json's bin). */
const INSTALLED_BIN = new URL("../bin/workpool", import.meta.url).pathname;
const HELLO = new URL("./programs/hello.mjs", import.meta.url).pathname;
const IDLE = new URL("./programs/idle.mjs", import.meta.url).pathname;
const TIMEOUT_MS = 120_000;
/** Ranks of the memory measurement. */
const IDLE_RANKS = 4;
const TARGET_ONE = 1.5;
/** A variable that makes every node start slower (see run). */
const EXTRA_CA = "NODE_EXTRA_CA_CERTS";
/** The large job's target, in seconds of wall time (at the default 64 ranks). */
const TARGET_MANY_S = 3;

const OPTIONS = [
  "--repeat N  runs of every command, interleaved; the median counts (default 7)",
  "--np N      ranks of the large job (default 64)",
  "--sources   also time the large job from the TypeScript sources (slow)",
] as const;

interface Options {
  readonly repeat: number;
  readonly np: number;
  readonly sources: boolean;
}

function parseOptions(args: readonly string[]): Options {
  let repeat = 7;
  let np = 64;
  let sources = false;
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = (args[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag === "--sources") {
      if (inline !== undefined) throw new BenchUsageError(`startup: --sources takes no value; got ${inline}`);
      sources = true;
      continue;
    }
    if (flag !== "--repeat" && flag !== "--np") {
      throw new BenchUsageError(
        `startup: unknown option ${flag}; options: ${OPTIONS.map((o) => o.split(" ")[0]).join(", ")}`,
      );
    }
    const value = inline ?? args[++i];
    const n = Number(value);
    const max = flag === "--repeat" ? 100 : 1024;
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw new BenchUsageError(`startup: ${flag} must be an integer in 1..${max}; got ${JSON.stringify(value)}`);
    }
    if (flag === "--repeat") repeat = n;
    else np = n;
  }
  return { repeat, np, sources };
}

/** Rank 0's clock (programs/hello.mjs): ms since its process started. */
interface Phases {
  readonly imported: number;
  readonly connected: number;
  readonly closed: number;
  readonly exit: number;
}

interface Command {
  readonly label: string;
  /** What runs: node (default), or the installed command, bin/workpool. */
  readonly exe?: string;
  readonly args: readonly string[];
  /** Where bin/workpool.js runs the launcher from. */
  readonly from?: "dist" | "source";
  /** Variables left out of its environment. */
  readonly without?: readonly string[];
}

interface Timing {
  readonly wallMs: number[];
  /** CPU time of the whole process tree (the launcher and every rank), ms; empty where /proc is not. */
  readonly cpuMs: number[];
  readonly phases: Phases[];
}

/** Our environment less any job variable and the command's `without`, with WORKPOOL_FROM set as it asks. */
function environment(c: Command): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("WORKPOOL_")) env[k] = v;
  for (const k of c.without ?? []) delete env[k];
  if (c.from) env.WORKPOOL_FROM = c.from;
  return env;
}

/**
 * CPU time of this process's waited-for descendants, ms (Linux: cutime + cstime of /proc/self/stat, in ticks of
 * 10 ms, USER_HZ); undefined elsewhere. A rank is waited for by the launcher, the launcher by us, so the
 * difference across one command is the CPU its whole tree used: a count of work that other load on the machine
 * barely changes, unlike wall time.
 */
function childrenCpuMs(): number | undefined {
  try {
    const stat = readFileSync("/proc/self/stat", "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return undefined;
  }
}

async function runOnce(c: Command): Promise<{ wallMs: number; cpuMs: number | undefined; out: string }> {
  const t0 = performance.now();
  const cpu0 = childrenCpuMs();
  const out = await start(c.label, c.exe ?? process.execPath, c.args, { timeoutMs: TIMEOUT_MS, env: environment(c) })
    .exited;
  const cpu1 = childrenCpuMs();
  return {
    wallMs: performance.now() - t0,
    cpuMs: cpu0 === undefined || cpu1 === undefined ? undefined : cpu1 - cpu0,
    out,
  };
}

function jsonLine<T>(out: string): T | undefined {
  const line = out.split("\n").find((l) => l.startsWith("{"));
  return line === undefined ? undefined : (JSON.parse(line) as T);
}

/** Runs every command `repeat` times, round by round. */
async function timeAll(commands: readonly Command[], repeat: number): Promise<Map<Command, Timing>> {
  const timings = new Map<Command, Timing>(commands.map((c) => [c, { wallMs: [], cpuMs: [], phases: [] }]));
  for (let round = 0; round < repeat; round++) {
    for (const c of commands) {
      const { wallMs, cpuMs, out } = await runOnce(c);
      const t = timings.get(c) as Timing;
      t.wallMs.push(wallMs);
      if (cpuMs !== undefined) t.cpuMs.push(cpuMs);
      const phases = jsonLine<Phases>(out);
      if (phases) t.phases.push(phases);
    }
  }
  return timings;
}

/** dist/ must hold the current sources: rebuilt here when it does not. */
async function ensureBuild(): Promise<void> {
  const state = buildState(ROOT);
  if (state === "fresh") return;
  process.stdout.write(`# dist/ is ${state}: building it (npm run build: tsc, then bin/bundle.js)\n`);
  const tsc = new URL("../node_modules/typescript/bin/tsc", import.meta.url).pathname;
  try {
    await start("tsc", process.execPath, [tsc, "-p", "tsconfig.build.json"], { timeoutMs: 300_000 }).exited;
  } catch (e) {
    // tsc writes dist/ even with type errors: the figures stand if it did.
    process.stdout.write(`# the build reported errors: ${(e as Error).message.split("\n")[0]}\n`);
  }
  const bundle = new URL("../bin/bundle.js", import.meta.url).pathname;
  await start("bundle", process.execPath, [bundle], { timeoutMs: 300_000 }).exited;
  if (buildState(ROOT) !== "fresh") throw new Error("dist/ could not be built; see npm run build");
}

export const suite: Suite = {
  name: "startup",
  description: "start-up of a JavaScript hello world: bare node vs launch -n 1 and -n 64, and memory per idle rank",
  options: OPTIONS,
  check: (args) => void parseOptions(args),
  async run(args) {
    const o = parseOptions(args);
    await ensureBuild();
    const score = scorecard();
    // The commands as a user runs them: the installed `workpool` (bin/workpool, which starts the launcher's node
    // without NODE_EXTRA_CA_CERTS and hands it back to the ranks); `node bin/workpool.js` for one row beside it.
    const launch = (np: number, from: "dist" | "source", app = HELLO): Command => ({
      label: `workpool launch -n ${np} (${from === "dist" ? "dist" : "sources"})`,
      exe: INSTALLED_BIN,
      args: ["launch", "-n", String(np), "--quiet", "--no-prefix", app],
      from,
    });
    const node: Command = { label: "node -e '' (node itself)", args: ["-e", ""] };
    const bare: Command = { label: "node hello.mjs (bare node)", args: [HELLO] };
    const tsx: Command = { label: "node --import tsx/esm hello.mjs", args: ["--import", TS_LOADER, HELLO] };
    const help = (from: "dist" | "source"): Command => ({
      label: `workpool --help (${from === "dist" ? "dist" : "sources"})`,
      exe: INSTALLED_BIN,
      args: ["--help"],
      from,
    });
    const helpDist = help("dist");
    const helpSource = help("source");
    const one = launch(1, "dist");
    const oneJs: Command = {
      label: "node bin/workpool.js launch -n 1 (dist)",
      args: [WORKPOOL_BIN, ...one.args],
      from: "dist",
    };
    const many = launch(o.np, "dist");
    const oneSource = launch(1, "source");
    const manySource = launch(o.np, "source");
    // NODE_EXTRA_CA_CERTS makes node read and parse those certificates (and its own) at every start, not at its
    // first TLS connection: `node -e ''` took 62 ms with it and 24 without (median of 21 each, the 2-core machine
    // of issue 28, where it is set to the system's bundle of certificates). Bare node
    // pays it once, -n 1 twice, -n 64 65 times; so where it is set, node and both sides of the -n 1 ratio are
    // also timed without it, for the reader to tell this machine's setting from workpool's own cost. The
    // installed command starts the launcher without it (the launcher opens no TLS connection) and hands it back
    // to the ranks: an app may need those certificates.
    const withoutCa = (c: Command): Command => ({ ...c, label: `${c.label}, no ${EXTRA_CA}`, without: [EXTRA_CA] });
    const ca = process.env[EXTRA_CA] ? [withoutCa(node), withoutCa(bare), withoutCa(one)] : [];
    const commands = [
      node,
      bare,
      tsx,
      helpDist,
      helpSource,
      one,
      oneJs,
      many,
      oneSource,
      ...(o.sources ? [manySource] : []),
      ...ca,
    ];
    process.stdout.write(
      `${availableParallelism()} cores; ${o.repeat} runs of each command, interleaved; medians (min in brackets); cpu: the CPU time of the whole process tree, launcher and ranks (what other load on the machine changes least)\n\n`,
    );
    const timings = await timeAll(commands, o.repeat);
    const wall = (c: Command) => median((timings.get(c) as Timing).wallMs);
    const base = wall(bare);
    const rows: string[][] = [["command", "wall s", "x bare node", "cpu s", "target", "verdict"]];
    for (const c of commands) {
      const t = timings.get(c) as Timing;
      const ratio = wall(c) / base;
      // -n 1 against bare node; the large job in seconds (its target is for 64 ranks: judged at that size only).
      const target =
        c === one
          ? { text: `<= ${TARGET_ONE}x`, met: ratio <= TARGET_ONE }
          : c === many && o.np === 64
            ? { text: `<= ${TARGET_MANY_S} s`, met: wall(c) / 1000 <= TARGET_MANY_S }
            : undefined;
      rows.push([
        c.label,
        `${fmt(wall(c) / 1000)} [${fmt(Math.min(...t.wallMs) / 1000)}]`,
        fmt(ratio),
        t.cpuMs.length === 0 ? "" : fmt(median(t.cpuMs) / 1000),
        target?.text ?? "",
        target === undefined ? "" : score.verdict(target.met),
      ]);
    }
    process.stdout.write(`${formatTable(rows)}\n`);
    // No launcher can start N ranks faster than N bare node starts (no library at all) on these cores.
    const cores = availableParallelism();
    const floor = (o.np * wall(node)) / Math.min(cores, o.np);
    process.stdout.write(
      `floor for -n ${o.np}: ${o.np} starts of node itself on ${cores} cores take at least ${fmt(floor / 1000)} s ` +
        `= ${fmt(floor / base)}x bare node\n\n`,
    );
    if (ca.length > 0) {
      const [caNode, caBare, caOne] = ca as [Command, Command, Command];
      process.stdout.write(
        `${EXTRA_CA} is set: node spends ${fmt(wall(node) - wall(caNode))} of its ${fmt(wall(node))} ms per start ` +
          `on it here; without it, -n 1 is ${fmt(wall(caOne) / wall(caBare))}x bare node ` +
          `(${fmt(wall(caOne))} ms against ${fmt(wall(caBare))})\n\n`,
      );
    }

    // Rank 0's own clock, and what the launcher adds around it (the job's wall time less the rank's life).
    const phaseRows: string[][] = [["rank 0, ms", "loaded", "connect", "close", "exit", "launcher adds"]];
    for (const c of [bare, one, many, oneSource, ...(o.sources ? [manySource] : [])]) {
      const t = timings.get(c) as Timing;
      if (t.phases.length === 0) continue;
      const m = (f: (p: Phases) => number) => median(t.phases.map(f));
      phaseRows.push([
        c.label,
        fmt(m((p) => p.imported)),
        fmt(m((p) => p.connected - p.imported)),
        fmt(m((p) => p.closed - p.connected)),
        fmt(m((p) => p.exit - p.closed)),
        c === bare ? "" : fmt(wall(c) - m((p) => p.exit)),
      ]);
    }
    process.stdout.write(`${formatTable(phaseRows)}\n`);
    process.stdout.write(
      `loaded: from the rank's start to the app's first line (node, the preload, workpool, zeromq); connect: ` +
        `the rendezvous round trip.\nnode itself ${fmt(wall(node))} ms; tsx adds ${fmt(wall(tsx) - base)} ms ` +
        `to a process; the launcher's own start: ${fmt(wall(helpDist))} ms from dist/, ` +
        `${fmt(wall(helpSource))} ms from the sources; \`node bin/workpool.js\` rather than the installed command ` +
        `adds ${fmt(wall(oneJs) - wall(one))} ms to -n 1.\n\n`,
    );

    // Memory of idle ranks: each reports its RSS plus that of any process it started (Linux).
    const memory: string[][] = [["idle rank", "RSS per rank MB (median)"]];
    const idle: [string, Command][] = [
      ["node idle.mjs (no launcher)", { label: "node idle.mjs", args: [IDLE] }],
      [`launch -n ${IDLE_RANKS}, dist (no tsx)`, launch(IDLE_RANKS, "dist", IDLE)],
      [`launch -n ${IDLE_RANKS}, sources (tsx)`, launch(IDLE_RANKS, "source", IDLE)],
    ];
    for (const [label, c] of idle) {
      const { out } = await runOnce(c);
      const rss = jsonLine<{ rss: number[] }>(out)?.rss ?? [];
      memory.push([label, fmt(median(rss) / 2 ** 20)]);
    }
    process.stdout.write(`${formatTable(memory)}\n`);
    return score.report();
  },
};
