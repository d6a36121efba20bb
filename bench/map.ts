/**
 * `npm run bench -- map`: results per item (issue 29). Small items: `world.map` over 100,000 numbers, each
 * returning an object of two numbers, on 3 ranks, 5 rounds in one job; target: at least 200,000 items/s (the
 * median round; the first, which compiles the handler and the loop, printed apart). Large results: 64 results of
 * 1 MiB collected on rank 0 of 3, by `world.map` and by hand-written send/recv of the same bytes (each rank makes
 * its share and sends it to rank 0), one job each, interleaved, RUNS of each; targets: map's rate at least 0.8x
 * the hand-written one's (the best run of each), and rank 0's peak RSS above its RSS before the map at most 1.5x
 * the results' bytes (map's worst run). Then, with no target, 300 items whose handler waits 5 ms, with
 * `concurrency` 1 and 16.
 */
import { fmt, formatTable, runJsonLines, scorecard, type Suite, WORKPOOL_BIN } from "./harness.ts";

const PROGRAM = new URL("./programs/map-ranks.ts", import.meta.url).pathname;
const SMALL_ITEMS = 100_000;
const ROUNDS = 5;
const SMALL_TARGET = 200_000;
const BIG = 64;
const RUNS = 3;
const RATE_TARGET = 0.8;
const MEMORY_TARGET = 1.5;
const WAIT_ITEMS = 300;

async function job(args: readonly string[]): Promise<Record<string, unknown>> {
  const launch = ["launch", "-n", "3", "--no-prefix", "--quiet", "--timeout", "120"];
  const lines = await runJsonLines(process.execPath, [WORKPOOL_BIN, ...launch, PROGRAM, ...args], {
    timeoutMs: 150_000,
  });
  const line = lines[0] as Record<string, unknown> | undefined;
  if (!line) throw new Error(`map-ranks.ts ${args.join(" ")}: no result line`);
  return line;
}

interface Big {
  readonly ms: number;
  readonly bytes: number;
  readonly grew: number;
}

export const suite: Suite = {
  name: "map",
  description: "results per item: world.map of 100,000 small items; 64 results of 1 MiB against send/recv",
  async run() {
    const score = scorecard();
    const { ms } = (await job(["small", String(SMALL_ITEMS), String(ROUNDS)])) as { ms: number[] };
    const [first = 0, ...rest] = ms;
    const sorted = [...rest].sort((x, y) => x - y);
    const median = sorted[sorted.length >> 1] ?? first;
    const rate = SMALL_ITEMS / (median / 1000);
    const rows: string[][] = [["-n 3", "ms per round", "items/s", "target", ""]];
    rows.push([
      `world.map, ${SMALL_ITEMS} small items (median of rounds 2-${ROUNDS})`,
      rest.map(fmt).join(" "),
      fmt(rate),
      `>= ${SMALL_TARGET}`,
      score.verdict(rate >= SMALL_TARGET),
    ]);
    rows.push([`  first round (compiles)`, fmt(first), fmt(SMALL_ITEMS / (first / 1000)), "", ""]);
    const runs: Record<"map" | "hand", Big[]> = { map: [], hand: [] };
    for (let i = 0; i < RUNS; i++) {
      for (const mode of ["map", "hand"] as const)
        runs[mode].push((await job(["big", String(BIG), mode])) as unknown as Big);
    }
    const best = (mode: "map" | "hand") => Math.min(...runs[mode].map((r) => r.ms));
    const mib = (BIG * 1024 * 1024) / 2 ** 20;
    const ratio = best("hand") / best("map");
    const grew = (mode: "map" | "hand") => Math.max(...runs[mode].map((r) => r.grew / r.bytes));
    rows.push(["", "", "", "", ""]);
    rows.push([`${BIG} results of 1 MiB to rank 0`, `ms (${RUNS} runs)`, "MiB/s (best)", "", ""]);
    rows.push([
      "send/recv by hand",
      runs.hand.map((r) => fmt(r.ms)).join(" "),
      fmt(mib / (best("hand") / 1000)),
      "",
      "",
    ]);
    rows.push([
      `world.map: rate ${ratio.toFixed(2)}x by hand`,
      runs.map.map((r) => fmt(r.ms)).join(" "),
      fmt(mib / (best("map") / 1000)),
      `>= ${RATE_TARGET}x`,
      score.verdict(ratio >= RATE_TARGET),
    ]);
    rows.push([
      `rank 0 peak RSS growth / results: map ${grew("map").toFixed(2)}x (by hand ${grew("hand").toFixed(2)}x)`,
      runs.map.map((r) => (r.grew / r.bytes).toFixed(2)).join(" "),
      "",
      `<= ${MEMORY_TARGET}x`,
      score.verdict(grew("map") <= MEMORY_TARGET),
    ]);
    // Handlers that wait: no target, the effect of `concurrency` (one job each, interleaved, best of RUNS).
    const waits: Record<number, number[]> = { 1: [], 16: [] };
    for (let i = 0; i < RUNS; i++) {
      for (const c of [1, 16])
        waits[c]?.push(((await job(["wait", String(WAIT_ITEMS), String(c)])) as { ms: number }).ms);
    }
    rows.push(["", "", "", "", ""]);
    rows.push([`${WAIT_ITEMS} items whose handler waits 5 ms`, `ms (${RUNS} runs)`, "items/s (best)", "", ""]);
    for (const c of [1, 16]) {
      const ms = waits[c] ?? [];
      rows.push([
        `world.map, concurrency ${c}`,
        ms.map(fmt).join(" "),
        fmt(WAIT_ITEMS / (Math.min(...ms) / 1000)),
        "",
        "",
      ]);
    }
    process.stdout.write(`\n${formatTable(rows)}\n\n`);
    return score.report();
  },
};
