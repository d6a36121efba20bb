import { existsSync } from "node:fs";
import test from "ava";
import { alive, parseReady, READY } from "../helpers/pids.ts";
import { fixture, launch, linesOf } from "../helpers/run.ts";

// When one rank fails, the launcher stops the others, prints one summary line naming the failed rank and
// why, and exits with that rank's status. The launcher waits for every rank before it exits, so every
// rank's pid must be gone (and the job folder removed) the moment it has exited.

test("a rank that throws fails the job: status 1, a summary naming the rank and error, no rank left", async (t) => {
  const job = launch(["-n", "4", fixture("throw.ts"), "2"]);
  const ready = parseReady(await job.lines(READY, 4));
  const result = await job.result;
  t.is(result.code, 1);
  t.is(linesOf(result.stderr).at(-1), "workpool: rank 2 failed (exit code 1): Error: boom on 2");
  t.deepEqual(
    ready.map((r) => r.rank),
    [0, 1, 2, 3],
  );
  t.deepEqual(alive(ready.map((r) => r.pid)), []);
  t.false(existsSync(ready[0]?.dir as string), "job folder removed");
});

test("a rank that calls process.exit(3) fails the job with status 3", async (t) => {
  const job = launch(["-n", "3", fixture("stuck.ts"), "1", "3"]);
  const ready = parseReady(await job.lines(READY, 3));
  const result = await job.result;
  t.is(result.code, 3);
  t.is(linesOf(result.stderr).at(-1), "workpool: rank 1 failed (exit code 3)");
  t.deepEqual(alive(ready.map((r) => r.pid)), []);
});

test("a rank killed by a signal fails the job with status 128+signal", async (t) => {
  const job = launch(["-n", "3", fixture("stuck.ts")]);
  const ready = parseReady(await job.lines(READY, 3));
  process.kill(ready[1]?.pid as number, "SIGKILL");
  const result = await job.result;
  t.is(result.code, 137);
  t.is(linesOf(result.stderr).at(-1), "workpool: rank 1 failed (killed by SIGKILL)");
  t.deepEqual(alive(ready.map((r) => r.pid)), []);
});
