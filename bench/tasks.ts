/**
 * `npm run bench -- tasks`: tasks as Node.js developers write them (issue 29). Stop latency: 3 ranks run tasks
 * of 3 s that honour `ctx.signal`; one task calls `ctx.stop` after 1 s; target: `run` settles on every rank
 * within 50 ms of the stop, in both modes (the slowest rank of three runs each).
 */
import { fmt, formatTable, runJsonLines, scorecard, type Suite, WORKPOOL_BIN } from "./harness.ts";

const PROGRAM = new URL("./programs/tasks-ranks.ts", import.meta.url).pathname;
const STOP_TARGET_MS = 50;
const POOLS = ["centralized", "centralized,coordinatorWorks=true", "distributed"] as const;

interface StopLine {
  readonly rank: number;
  readonly stopped: boolean;
  readonly stopAt: number;
  readonly settledAt: number;
}

/** Ms from the stop to the last rank's `run` settling, in one job of `pool`. */
async function stopLatency(pool: string): Promise<number> {
  const args = ["launch", "-n", "3", "--no-prefix", "--quiet", "--timeout", "60", "--pool", pool];
  const lines = (await runJsonLines(process.execPath, [WORKPOOL_BIN, ...args, PROGRAM, "stop"], {
    timeoutMs: 90_000,
  })) as StopLine[];
  if (lines.length !== 3 || lines.some((l) => !l.stopped)) {
    throw new Error(`tasks-ranks.ts stop under ${pool}: ${JSON.stringify(lines)}`);
  }
  const stopAt = Math.max(...lines.map((l) => l.stopAt));
  return Math.max(...lines.map((l) => l.settledAt)) - stopAt;
}

export const suite: Suite = {
  name: "tasks",
  description: "tasks as Node.js developers write them: stop latency with handlers that honour ctx.signal",
  async run() {
    const score = scorecard();
    const rows: string[][] = [["stop latency, -n 3, tasks of 3 s", "ms (3 runs)", "worst", "target", ""]];
    for (const pool of POOLS) {
      const ms: number[] = [];
      for (let i = 0; i < 3; i++) ms.push(await stopLatency(pool));
      const worst = Math.max(...ms);
      rows.push([
        pool,
        ms.map(fmt).join(" "),
        fmt(worst),
        `<= ${STOP_TARGET_MS}`,
        score.verdict(worst <= STOP_TARGET_MS),
      ]);
    }
    process.stdout.write(`\n${formatTable(rows)}\n\n`);
    return score.report();
  },
};
