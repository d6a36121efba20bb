// Apps started by a launcher other than workpool's (mpirun, srun), which find their rank and the rendezvous by
// themselves (lib/comm/foreign.ts): the command that runs them from source, and the checks that the tests of
// each launcher share.
import { readdirSync } from "node:fs";
import type { ExecutionContext } from "ava";
import { parseReady, waitUntilGone } from "./pids.ts";
import { fixture, linesOf, type RunResult } from "./run.ts";

/** `node` running a TypeScript app from source, as `workpool launch` would, but started by another launcher. */
export const NODE: readonly string[] = [process.execPath, "--import", "tsx", "--conditions=workpool-source"];

/** test/fixtures/foreign-hello.ts: each rank prints one line, with its rank, the job's size and how the ranks met. */
export const FOREIGN_HELLO = fixture("foreign-hello.ts");

/** One rank's line from test/fixtures/foreign-hello.ts. */
export interface Hello {
  readonly rank: number;
  readonly size: number;
  readonly sum: number;
  readonly ranks: string;
  readonly job: string;
  readonly rendezvous: string;
  readonly transport: string;
}

const HELLO = /^foreign (\d+) (\d+) sum (\d+) ranks (\S+) pid \d+ job (\S+) rendezvous (\S+) transport (\S+)$/;

/** The lines of foreign-hello.ts in `stdout`, by rank. */
function hellos(stdout: string): Hello[] {
  return linesOf(stdout)
    .map((line) => HELLO.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({
      rank: Number(m[1]),
      size: Number(m[2]),
      sum: Number(m[3]),
      ranks: m[4] as string,
      job: m[5] as string,
      rendezvous: m[6] as string,
      transport: m[7] as string,
    }))
    .sort((a, b) => a.rank - b.rank);
}

/** Checks that `r` is a successful run of foreign-hello.ts on 4 ranks of one job; returns rank 0's line. */
export function oneJobOfFour(t: ExecutionContext, r: RunResult): Hello {
  t.is(r.code, 0, r.stderr);
  const lines = hellos(r.stdout);
  t.deepEqual(
    lines.map((h) => [h.rank, h.size, h.sum, h.ranks, h.transport]),
    [0, 1, 2, 3].map((rank) => [rank, 4, 6, "0,1,2,3", "tcp"]),
    r.stdout,
  );
  const [first] = lines;
  t.true(first !== undefined && lines.every((h) => h.job === first.job && h.rendezvous === first.rendezvous));
  return first as Hello;
}

/**
 * Starts two jobs of foreign-hello.ts on 4 ranks at once, both meeting through files in `dir`
 * (WORKPOOL_RENDEZVOUS_DIR, added to `start`'s environment), and checks that both succeed as two jobs and that
 * both files are removed.
 */
export async function twoJobsAtOnce(
  t: ExecutionContext,
  dir: string,
  start: (env: Record<string, string>) => Promise<RunResult>,
): Promise<void> {
  const env = { WORKPOOL_RENDEZVOUS_DIR: dir };
  const [a, b] = await Promise.all([0, 1].map(() => start(env)));
  const jobs = [oneJobOfFour(t, a as RunResult).job, oneJobOfFour(t, b as RunResult).job];
  t.not(jobs[0], jobs[1]);
  t.deepEqual(readdirSync(dir), [], "both rendezvous files removed");
}

/** apps/uts on tree T1XXS with --verify: its `argv`, and the `check` of a run on 4 ranks with WORKPOOL_POOL=`pool`. */
export const uts = {
  argv: ["apps/uts/main.ts", "--tree", "T1XXS", "--verify"],
  check(t: ExecutionContext, r: RunResult, pool: string): void {
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, new RegExp(`^uts T1XXS: 16000 nodes, 12839 leaves, depth 6 \\(${pool}, 4 ranks, `, "m"));
    t.regex(r.stderr, /^uts: verified: 16000 nodes/m);
  },
} as const;

/** apps/shortest-paths --verify on its default grid: its `argv`, and the `check` of a run on 4 ranks. */
export const shortestPaths = {
  argv: ["apps/shortest-paths/main.ts", "--verify"],
  check(t: ExecutionContext, r: RunResult): void {
    t.is(r.code, 0, r.stderr);
    t.regex(r.stdout, /^shortest-paths: 360000 vertices, .* \((centralized|distributed), 4 ranks, /m);
    t.regex(r.stderr, /^shortest-paths: verified: all 360000 distances equal Dijkstra's/m);
  },
} as const;

/**
 * test/fixtures/throw.ts with rank 2 throwing: its `argv`, and the `check` of a run on 4 ranks: it failed with
 * rank 2's error, and no rank is left running.
 */
export const throwing = {
  argv: [fixture("throw.ts"), "2"],
  async check(t: ExecutionContext, r: RunResult): Promise<void> {
    t.not(r.code, 0, r.stdout);
    t.regex(r.stderr, /boom on 2/);
    const ready = parseReady(linesOf(r.stdout).filter((l) => l.startsWith("ready ")));
    t.deepEqual(
      ready.map((x) => x.rank),
      [0, 1, 2, 3],
    );
    t.deepEqual(await waitUntilGone(ready.map((x) => x.pid)), []);
  },
} as const;
