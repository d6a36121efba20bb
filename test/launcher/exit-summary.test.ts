/**
 * The launcher's last line (launcher/exit-summary.ts `jobEnd`), from what the ranks said, in this process: a task
 * that failed fails every rank, and the line names the rank the task failed on when that rank failed on its own
 * too, not whichever rank exited first.
 */
import test from "ava";
import { jobEnd, type SummaryInput } from "../../launcher/exit-summary.ts";
import type { Rank } from "../../launcher/rank.ts";
import type { Failure } from "../../launcher/stop-policy.ts";

const rankSaying = (rank: number, lastError: string | undefined): Rank =>
  ({ rank, lastError, lastStderr: undefined, earlyStderr: [], heard: true, exited: true }) as unknown as Rank;
const failed = (rank: number): Failure => ({ rank, code: 1, signal: null }) as Failure;
const TASK = "TaskError: task 77 failed on rank 0: Error: bad item";

function input(own: Failure[], errors: (string | undefined)[]): SummaryInput {
  return {
    outcome: { failure: own[0] as Failure, own },
    ranks: errors.map((e, r) => rankSaying(r, e)),
    where: (r) => `rank ${r}`,
    survived: () => false,
    printedBy: () => undefined,
    nodeArgs: [],
  };
}

test("a task's failure is named on the rank the task failed on, when it failed on its own too", (t) => {
  const end = jobEnd(input([failed(1), failed(0)], [TASK, TASK]));
  t.is(end.line, `workpool: rank 0 failed (exit code 1): ${TASK}`);
  t.is(end.status, 1);
});

test("the first rank to exit is named when the task's rank did not fail on its own, or for any other error", (t) => {
  t.is(jobEnd(input([failed(1)], [TASK, TASK])).line, `workpool: rank 1 failed (exit code 1): ${TASK}`);
  t.is(
    jobEnd(input([failed(1), failed(0)], ["Error: boom", "Error: boom"])).line,
    "workpool: rank 1 failed (exit code 1): Error: boom",
  );
});
