/**
 * `npm run bench -- pool`: the centralized pool's task rate with no-op tasks beside Piscina's in the same run,
 * and its scheduling quality with emulated work at 16, 32 and 64 ranks (plain, and with a quarter of the
 * workers slowed 4x). Emulated work is timed waits, so 64 ranks on a 2-core machine still measure scheduling,
 * not CPU contention.
 */
import { fmt, formatTable, runJsonLines, type Suite, WORKPOOL_BIN } from "./harness.ts";

const PROGRAM = new URL("./programs/pool-ranks.ts", import.meta.url).pathname;
const PISCINA = new URL("./programs/piscina-bench.ts", import.meta.url).pathname;

interface Throughput {
  tasks: number;
  seconds: number;
  rate: number;
  messages?: number;
}
interface Emulated {
  ranks: number;
  slowCount: number;
  tasks: number;
  makespan: number;
  bound: number;
  ratio: number;
  deferrals: number;
}

async function launch<T>(np: number, args: string[], timeoutMs: number, pool?: string): Promise<T> {
  const flags = ["launch", "-n", String(np), "--no-prefix", ...(pool ? ["--pool", pool] : [])];
  const lines = await runJsonLines(process.execPath, [WORKPOOL_BIN, ...flags, PROGRAM, ...args], { timeoutMs });
  const last = lines.at(-1);
  if (!last) throw new Error(`no result line from ${args.join(" ")}`);
  return last as T;
}

export const suite: Suite = {
  name: "pool",
  description: "centralized pool: no-op task rate vs Piscina; makespan / lower bound with emulated work",
  async run() {
    let targets = 0;
    let misses = 0;
    const verdict = (ok: boolean) => {
      targets++;
      if (!ok) misses++;
      return ok ? "pass" : "MISS";
    };

    const ours = await launch<Throughput>(3, ["throughput", "1000000"], 120_000);
    const [pisc] = (await runJsonLines(process.execPath, ["--import", "tsx", PISCINA, "200000"], {
      timeoutMs: 120_000,
    })) as Throughput[];
    process.stdout.write(
      `${formatTable([
        ["figure", "workpool", "Piscina", "ratio", "target", ""],
        [
          "no-op tasks/s, -n 3 (1 coordinator + 2 workers)",
          fmt(ours.rate),
          fmt(pisc?.rate ?? Number.NaN),
          `${fmt(ours.rate / (pisc?.rate ?? Number.NaN))}x`,
          ">= 250,000/s",
          verdict(ours.rate >= 250_000),
        ],
      ])}\n`,
    );
    process.stdout.write(
      `  (${fmt(ours.tasks)} tasks in ${fmt(ours.seconds)} s with ${fmt(ours.messages ?? 0)} pool messages; Piscina: 2 threads, 1024 in flight)\n\n`,
    );

    process.stdout.write(
      "Emulated work: each task waits a Pareto(alpha 3, mean 20 ms) time; ~3 s of work per worker; the bound is\n" +
        "max(total work / worker speed, longest task) from the waits actually measured.\n",
    );
    const rows: string[][] = [
      ["ranks", "slowed 4x", "tasks", "makespan s", "bound s", "ratio", "ECD deferrals", "target", ""],
    ];
    for (const ranks of [16, 32, 64]) {
      for (const slow of [0, 0.25]) {
        const r = await launch<Emulated>(ranks, ["emulate", "3", String(slow), "7"], 300_000);
        const target = slow === 0 ? 1.05 : 1.1;
        const checked = ranks === 16;
        rows.push([
          String(ranks),
          `${r.slowCount} of ${ranks - 1}`,
          String(r.tasks),
          fmt(r.makespan / 1000),
          fmt(r.bound / 1000),
          r.ratio.toFixed(3),
          String(r.deferrals),
          checked ? `<= ${target}` : "-",
          checked ? verdict(r.ratio <= target) : "",
        ]);
      }
    }
    process.stdout.write(`${formatTable(rows)}\n`);
    return { targets, misses };
  },
};
