/**
 * `npm run bench -- defaults`: does an app that names no pool get a pool that wins? Five apps of different
 * shapes (programs/defaults-apps.ts: a fine-grained task tree, branch and bound with a shared bound, coarse
 * uneven synchronous tasks put on one rank, async file reads and hashes, a `parallelFor` loop; branch and bound
 * twice, a tenth of a second and about a second on one rank) run at `-n`
 * equal to the cores (2 here) under the default pool (no `--pool`) and under every other built-in shape of pool:
 * centralized (its coordinator only deals, as in the seed slides), centralized with a working coordinator,
 * distributed with lifeline stealing. Runs are interleaved round by round (`--rounds N`, default 5) so that
 * load drift falls on every configuration alike. Target (issue 28): default / best >= 0.9 on each app. Best is
 * the configuration with the lowest median time (the default included), and the figure is the median over the
 * rounds of best / default within each round, with its range: two runs of one round met the same load. (The
 * fastest run of each configuration, compared, made the default lose to noise: four configurations get four
 * chances at a lucky run against the default's one, and apps of a tenth of a second read 0.80 to 0.88 in one
 * run of the bench and 0.97 to 1.00 in the next.) Every run's answer must equal the others' (a count, a sum, an
 * optimum).
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import {
  BenchUsageError,
  fmt,
  formatTable,
  median,
  ROOT,
  runJsonLines,
  scorecard,
  start,
  type Suite,
  WORKPOOL_BIN,
} from "./harness.ts";

const PROGRAM = join(ROOT, "bench", "programs", "defaults-apps.ts");
const KNAPSACK = join(ROOT, "examples", "knapsack.ts");
const KINDS = ["tree", "bnb", "bnb64", "coarse", "io", "loop"] as const;
/** Knapsack items of each branch-and-bound kind: 48 runs in about 0.1 s on one rank, 64 in about 1 s. */
const ITEMS: Readonly<Record<string, string>> = { bnb: "48", bnb64: "64" };
/** The default pool (no --pool) first, then the other built-in shapes. */
const CONFIGS = [undefined, "centralized", "centralized,coordinatorWorks=true", "distributed,initiation=lifeline"];
const TARGET = 0.9;
const TIMEOUT_MS = 300_000;
/** The io app's files: 300 files of 50-500 KB (seeded sizes, random bytes). */
const FILES = 300;

function makeFiles(): string {
  const dir = mkdtempSync(join(tmpdir(), "wp-bench-defaults-"));
  let s = 5;
  for (let i = 0; i < FILES; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    writeFileSync(
      join(dir, `f${String(i).padStart(4, "0")}`),
      randomBytes(50_000 + Math.floor((s / 2147483648) * 450_000)),
    );
  }
  return dir;
}

interface AppResult {
  readonly seconds: number;
  readonly check: number;
  readonly mode: string;
}

/**
 * One run of `kind` on `np` ranks with the launcher flags `pool`. Branch and bound is the project's own example
 * (examples/knapsack.ts, ITEMS), read from its summary line; the others are programs/defaults-apps.ts.
 */
async function runApp(
  kind: string,
  np: number,
  pool: readonly string[],
  files: string,
): Promise<AppResult | undefined> {
  const launch = [WORKPOOL_BIN, "launch", "-n", String(np), "--no-prefix", ...pool];
  const items = ITEMS[kind];
  if (items === undefined) {
    const extra = kind === "io" ? [files] : [];
    const [json] = await runJsonLines(process.execPath, [...launch, PROGRAM, kind, ...extra], {
      timeoutMs: TIMEOUT_MS,
    });
    return json as AppResult | undefined;
  }
  const out = await start("knapsack", process.execPath, [...launch, KNAPSACK, "--items", items], {
    timeoutMs: TIMEOUT_MS,
  }).exited;
  const m = /best value (\d+), \d+ nodes explored \((\w+), \d+ ranks, ([\d.]+) s\)/.exec(out);
  return m ? { check: Number(m[1]), mode: m[2] as string, seconds: Number(m[3]) } : undefined;
}

function parse(args: readonly string[]): { rounds: number; np: number } {
  let rounds = 5;
  let np = availableParallelism();
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = (args[i] as string).split(/=(.*)/s, 2) as [string, string | undefined];
    if (flag !== "--rounds" && flag !== "--np")
      throw new BenchUsageError(`defaults: unknown option ${flag}; options: --rounds, --np`);
    const value = Number(inline ?? args[++i]);
    if (!Number.isInteger(value) || value < 1 || value > 64) {
      throw new BenchUsageError(`defaults: ${flag} must be a whole number in 1..64; got ${inline ?? args[i]}`);
    }
    if (flag === "--rounds") rounds = value;
    else np = value;
  }
  return { rounds, np };
}

export const suite: Suite = {
  name: "defaults",
  description: "the default pool against every built-in pool shape on five kinds of app at -n = cores",
  options: ["--rounds N  interleaved rounds; medians count (default 5)", "--np N  ranks (default: the cores)"],
  check: (args) => void parse(args),
  async run(args) {
    const { rounds, np } = parse(args);
    const files = makeFiles();
    const card = scorecard();
    try {
      // Every run's time, by app and configuration ("one": the default pool on one rank), in round order.
      const times = new Map<string, number[]>();
      const record = (key: string, seconds: number) =>
        (times.get(key) ?? times.set(key, []).get(key) ?? []).push(seconds);
      const checks = new Map<string, Set<number>>();
      const modes = new Map<string, string>();
      for (let round = 0; round < rounds; round++) {
        for (const kind of KINDS) {
          // Each round starts one configuration further along, so none always runs first.
          // The default pool on one rank: what the ranks gain at all.
          const one = await runApp(kind, 1, [], files);
          if (!one) throw new Error(`defaults: ${kind} on one rank printed no result`);
          record(`${kind} one`, one.seconds);
          (checks.get(kind) ?? checks.set(kind, new Set()).get(kind))?.add(one.check);
          for (let c = 0; c < CONFIGS.length; c++) {
            const config = CONFIGS[(c + round) % CONFIGS.length];
            const pool = config === undefined ? [] : ["--pool", config];
            const json = await runApp(kind, np, pool, files);
            if (!json) throw new Error(`defaults: ${kind} under ${config ?? "the default pool"} printed no result`);
            const key = `${kind} ${config ?? "default"}`;
            record(key, json.seconds);
            if (config === undefined) modes.set(kind, json.mode);
            (checks.get(kind) ?? checks.set(kind, new Set()).get(kind))?.add(json.check);
          }
        }
      }
      const rows = [
        [
          "app",
          "1 rank (s)",
          "default (s)",
          ...CONFIGS.slice(1).map((c) => `${c} (s)`),
          "default / best",
          "target",
          "",
        ],
      ];
      for (const kind of KINDS) {
        const runs = CONFIGS.map((c) => times.get(`${kind} ${c ?? "default"}`) as number[]);
        const medians = runs.map(median);
        const best = medians.indexOf(Math.min(...medians));
        const defaults = runs[0] as number[];
        const paired = (runs[best] as number[]).map((t, round) => t / (defaults[round] as number));
        const ratio = median(paired);
        const agreed = (checks.get(kind)?.size ?? 0) === 1;
        rows.push([
          `${kind}${agreed ? "" : " (ANSWERS DIFFER)"}`,
          fmt(median(times.get(`${kind} one`) as number[])),
          `${fmt(medians[0] as number)} (${modes.get(kind)})`,
          ...medians.slice(1).map(fmt),
          `${fmt(ratio)} [${fmt(Math.min(...paired))}-${fmt(Math.max(...paired))}]`,
          `>= ${TARGET}`,
          card.verdict(ratio >= TARGET && agreed),
        ]);
      }
      console.log(
        `defaults: ${np} ranks, ${rounds} interleaved rounds; medians; default / best: the median over the rounds ` +
          "of the best configuration's time over the default's in the same round [range]; real work (no emulation)",
      );
      console.log(formatTable(rows));
      console.log(
        "1 rank: the default pool on one rank, beside the ranks (not a configuration). A one-rank run uses more than " +
          "one core for a short while: V8 compiles hot code and collects garbage on threads of its own (bnb on one " +
          "rank measured 0.10 s, and 0.15 s with --single-threaded), so on 2 cores a job of a tenth of a second " +
          "gains little from a second rank, and the centralized pool, whose coordinator only deals, runs it as one.",
      );
    } finally {
      rmSync(files, { recursive: true, force: true });
    }
    return card.report();
  },
};
