import type { ExecutionContext } from "ava";
import { fixture, linesOf, rank0, run } from "./run.ts";

/** The rank program of the survival tests (test/fixtures/pool-survive.ts). */
export const SURVIVE_APP = fixture("pool-survive.ts");

/**
 * Runs `workpool launch -n N --timeout 100 [extra...] pool-survive.ts [appArgs...]` and reads what the survival
 * tests check: rank 0's `result {...}` line, the launcher's `rank R died (...)` lines, and every rank's pid.
 */
export async function runSurvive(n: number, extra: readonly string[], appArgs: readonly string[]) {
  const r = await run(["-n", String(n), "--timeout", "100", ...extra, SURVIVE_APP, ...appArgs]);
  const line = rank0(r.stdout).find((l) => l.startsWith("result "));
  const result = line ? (JSON.parse(line.slice("result ".length)) as Record<string, number>) : undefined;
  const deaths = linesOf(r.stderr).filter((l) => /^workpool: rank \d+ died \(/.test(l));
  const pids = linesOf(r.stdout)
    .map((l) => /^\[\d+\] pid (\d+)$/.exec(l)?.[1])
    .filter((p) => p !== undefined)
    .map(Number);
  return { ...r, result, deaths, pids };
}

/**
 * The checks of a run in which rank 1 + seed % 3 of 4 SIGKILLed itself (scenario `kill`): status 0, the exact
 * count, one launcher line naming that rank, one rank lost, and the three survivors' last lines.
 */
export function checkOneKill(t: ExecutionContext, r: Awaited<ReturnType<typeof runSurvive>>, seed: number): void {
  t.is(r.code, 0, r.stderr);
  t.truthy(r.result, r.stdout);
  t.is(r.result?.result, r.result?.expected, JSON.stringify(r.result));
  const victim = 1 + (seed % 3);
  t.is(r.deaths.length, 1, r.stderr);
  t.regex(r.deaths[0] as string, new RegExp(`^workpool: rank ${victim} died \\(killed by SIGKILL\\); the job go`));
  t.is(r.result?.lost, 1);
  t.is(linesOf(r.stdout).filter((l) => l.endsWith(" survived")).length, 3, r.stdout);
}
