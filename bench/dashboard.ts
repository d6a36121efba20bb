/**
 * `npm run bench -- dashboard`: what watching a job costs (issue 31). The same jobs run with and without
 * `--dashboard`, in alternation (so the machine's load hits both), with the page "open": this process asks for
 * the page's state twice and a half a second, as the page does, for the whole run. Printed: the no-op task rate
 * (`-n 3`, centralized, 1,000,000 no-op tasks; bench/programs/pool-ranks.ts) and the UTS rate (apps/uts, tree
 * T1XS, `-n 2`, distributed: nodes per second of the fastest of 3 runs in each job), each the best of ROUNDS
 * jobs each way, as a ratio against the run without the dashboard; target: a cost of at most 2%. A third row:
 * the launcher's time to answer one state request at 64 ranks (the page's poll), median of the requests made
 * during a 64-rank job, which shows the launcher stays responsive.
 */
import { fileURLToPath } from "node:url";
import { fmt, formatTable, ROOT, scorecard, start, type Suite, WORKPOOL_BIN } from "./harness.ts";

const NOOP = fileURLToPath(new URL("./programs/pool-ranks.ts", import.meta.url));
const UTS = `${ROOT}apps/uts`;
const ROUNDS = 3;
const TARGET = 0.02;
/** How often the "open page" asks for the state (ms): as the page does (launcher/dashboard/page/dashboard.js). */
const POLL_MS = 400;

interface Outcome {
  /** The job's rank-0 JSON line. */
  readonly line: Record<string, unknown>;
  /** Milliseconds each state request took, from asking to the whole answer read. */
  readonly polls: number[];
}

/**
 * Runs `workpool launch ARGS` to its end; with `dashboard`, with `--dashboard` and this process polling the
 * page's state all along. Resolves to rank 0's JSON line.
 */
async function job(args: readonly string[], dashboard: boolean): Promise<Outcome> {
  const extra = dashboard ? ["--dashboard", "--dashboard-keep", "0"] : [];
  const all = ["launch", "--quiet", "--no-prefix", ...extra, ...args];
  const child = start(`workpool ${all.join(" ")}`, process.execPath, [WORKPOOL_BIN, ...all], { timeoutMs: 300_000 });
  const polls: number[] = [];
  let polling: Promise<void> | undefined;
  let done = false;
  if (dashboard) {
    polling = (async () => {
      const url = await dashboardUrl(child);
      if (url === undefined) return;
      let bins = 0;
      let tail = 0;
      while (!done) {
        const t0 = performance.now();
        try {
          const s = (await (await fetch(`${url}state?bins=${bins}&tail=${tail}`)).json()) as {
            binsTo: number;
            tail: { seq: number }[];
          };
          polls.push(performance.now() - t0);
          bins = s.binsTo;
          tail = s.tail.at(-1)?.seq ?? tail;
        } catch {
          return; // the job ended
        }
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
    })();
  }
  const out = await child.exited;
  done = true;
  await polling;
  const line = out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as Record<string, unknown>)[0];
  if (!line) throw new Error(`${child.label}: no JSON result line`);
  return { line, polls };
}

/** The dashboard URL the launcher prints on stderr (read from the child's stream). */
function dashboardUrl(child: ReturnType<typeof start>): Promise<string | undefined> {
  const stream = child.stderr;
  return new Promise((resolve) => {
    let text = "";
    const onData = (s: string) => {
      text += s;
      const m = /dashboard at (\S+)\n/.exec(text);
      if (m) {
        stream.off("data", onData);
        resolve(m[1]);
      }
    };
    stream.on("data", onData);
    child.exited.then(
      () => resolve(undefined),
      () => resolve(undefined),
    );
  });
}

/** Best rate of ROUNDS jobs each way, alternating. */
async function compare(args: readonly string[], rate: (line: Record<string, unknown>) => number) {
  let plain = 0;
  let watched = 0;
  for (let k = 0; k < ROUNDS; k++) {
    plain = Math.max(plain, rate((await job(args, false)).line));
    watched = Math.max(watched, rate((await job(args, true)).line));
  }
  return { plain, watched, cost: 1 - watched / plain };
}

export const suite: Suite = {
  name: "dashboard",
  description: "the cost of --dashboard with the page open: no-op and UTS rates against the same runs without it",
  async run() {
    const score = scorecard();
    const noop = await compare(["-n", "3", NOOP, "throughput", "1000000"], (l) => Number(l.rate));
    const uts = await compare(
      ["-n", "2", "--pool", "distributed", UTS, "--tree", "T1XS", "--repeat", "3", "--json"],
      (l) => Number(l.nodes) / Number(l.seconds),
    );
    const rows: string[][] = [["figure", "with --dashboard", "without", "ratio", "cost", "target", ""]];
    for (const [label, r] of [
      [`no-op tasks/s, -n 3 centralized (best of ${ROUNDS})`, noop],
      [`UTS T1XS nodes/s, -n 2 distributed (best of ${ROUNDS})`, uts],
    ] as const) {
      rows.push([
        label,
        fmt(r.watched),
        fmt(r.plain),
        `${(r.watched / r.plain).toFixed(3)}x`,
        `${(r.cost * 100).toFixed(1)}%`,
        `<= ${TARGET * 100}%`,
        score.verdict(r.cost <= TARGET),
      ]);
    }
    process.stdout.write(`\n${formatTable(rows)}\n\n`);

    // 64 ranks: the launcher answers the page while it reads 64 ranks' samples, 4 a second each.
    const big = await job(["-n", "64", "--pool", "distributed", UTS, "--tree", "T1XS", "--json"], true);
    const sorted = [...big.polls].sort((a, b) => a - b);
    const median = sorted[Math.floor(sorted.length / 2)] ?? NaN;
    const worst = sorted.at(-1) ?? NaN;
    process.stdout.write(
      `${formatTable([
        ["figure", "requests", "median ms", "worst ms"],
        ["state request answered, -n 64 UTS T1XS, page open", String(sorted.length), fmt(median), fmt(worst)],
      ])}\n\n`,
    );
    return score.report();
  },
};
