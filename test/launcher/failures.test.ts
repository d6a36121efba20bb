import { existsSync } from "node:fs";
import test from "ava";
import { alive, parseReady, READY } from "../helpers/pids.ts";
import { fixture, launch, linesOf, run } from "../helpers/run.ts";

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

// Issue 30: after a worker was killed once rank 0 had verified, the summary read `rank 1 failed (killed by
// SIGKILL); rank 0 said: uts: verified: ...`, quoting a success line as the cause.
test("the summary never quotes another rank's ordinary stderr line as the cause of a death", async (t) => {
  const job = launch(["-n", "3", fixture("said.ts"), "ordinary"]);
  const ready = parseReady(await job.lines(READY, 3));
  process.kill(ready[1]?.pid as number, "SIGKILL");
  const result = await job.result;
  t.is(result.code, 137);
  t.true(linesOf(result.stderr).includes("[0] app: verified: 42 nodes"), result.stderr);
  t.is(linesOf(result.stderr).at(-1), "workpool: rank 1 failed (killed by SIGKILL)");
  t.deepEqual(alive(ready.map((r) => r.pid)), []);
});

test("a rank that failed without a word: the summary quotes the stderr line of another that failed on its own", async (t) => {
  const result = await run(["-n", "3", fixture("said.ts"), "explains"]);
  t.is(result.code, 1, result.stderr);
  t.is(linesOf(result.stderr).at(-1), "workpool: rank 1 failed (exit code 1); rank 0 said: Error: bad input on rank 0");
});

test("close() is collective: a rank that exits with status 0 without it fails the job, with a message", async (t) => {
  const r = await run(["-n", "3", "--timeout", "60", "test/fixtures/close.ts", "skip"]);
  t.is(r.code, 1, r.stderr);
  t.regex(
    r.stderr,
    /workpool: rank 1 failed \(exit code 1\): workpool: rank 1 exited without calling world\.close\(\); every rank must call it/,
  );
});

test("close() waits for what is still on its way: a rank that closes at once lets its sender finish", async (t) => {
  const r = await run(["-n", "2", "--timeout", "60", "test/fixtures/close.ts", "late"]);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.stdout.split("\n").filter(Boolean).sort(), ["[0] closed 0", "[1] closed 1"]);
  // Without the wait, rank 1 was gone with megabytes still queued for it, and rank 0's ZeroMQ kept trying to
  // deliver them for its linger time (30 s) before it could exit, saying so.
  t.notRegex(r.stderr, /Waiting for queued ZeroMQ messages/);
});

test("close() does not wait for the others: a rank failing inside `await using` still fails the job", async (t) => {
  const r = await run(["-n", "2", "--timeout", "60", "test/fixtures/close.ts", "using"]);
  t.is(r.code, 1, r.stderr);
  t.regex(r.stderr, /workpool: rank 1 failed \(exit code 1\): Error: bad input on rank 1/);
});

test("ranks that all throw the same error at import print its stack once, then one summary line", async (t) => {
  const r = await run(["-n", "4", "--timeout", "60", fixture("throw-at-import.ts")]);
  t.is(r.code, 1, r.stderr);
  const lines = linesOf(r.stderr);
  t.is(lines.filter((l) => /^\[\d\] Error: bad config at import$/.test(l)).length, 1, r.stderr);
  t.true(
    lines.some((l) => /^\[\d\] +at .*throw-at-import\.ts:\d+:\d+/.test(l)),
    "the stack names the file",
  );
  // The stack above is the first rank's to report; the summary names the first to exit, and says whose the
  // stack is when they differ.
  t.regex(
    lines.at(-1) ?? "",
    /^workpool: rank \d failed \(exit code 1\): Error: bad config at import( \(the same error as rank \d's, printed above\))?$/,
  );
  t.true(lines.length < 12, `${lines.length} lines:\n${r.stderr}`);
});

test("a one-rank job whose recv nothing can match ends with status 13 and says what it waited for", async (t) => {
  const r = await run(["-n", "1", "--timeout", "60", fixture("recv-nothing.ts")]);
  t.is(r.code, 13, r.stderr);
  t.is(
    linesOf(r.stderr).at(-1),
    "workpool: rank 0 failed (exit code 13): workpool: rank 0: the process ended while it waited in recv " +
      "(from rank 0, tag 5): nothing was left that could send it",
  );
});

for (const any of [false, true]) {
  test(`a recv from ${any ? "any rank" : "rank 1"} whose sender closed without a match fails at once, naming it`, async (t) => {
    const r = await run(["-n", "2", "--timeout", "60", fixture("recv-closed.ts"), ...(any ? ["any"] : [])]);
    t.is(r.code, 1, r.stderr);
    t.is(
      linesOf(r.stderr).at(-1),
      `workpool: rank 0 failed (exit code 1): ClosedError: recv (from ${any ? "any rank" : "rank 1"}, tag 5): ` +
        "rank 1 closed its world, and nothing it sent here matches (check the send's tag and dest); what it sent " +
        "here that no receive took: tag 6",
    );
  });
}

for (const n of [1, 2]) {
  test(`a recv with a timeout signal that nothing matches rejects with AbortError on ${n} rank${n > 1 ? "s" : ""}`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "60", fixture("recv-timeout.ts")]);
    t.is(r.code, 0, r.stderr);
    t.is(linesOf(r.stdout).filter((l) => /^\[\d\] recv aborted$/.test(l)).length, n, r.stdout);
  });
}
