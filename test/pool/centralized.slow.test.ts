import test from "ava";
import { fixture, run, startNode } from "../helpers/run.ts";

const SCENARIOS = fixture("pool-scenarios.ts");

/** Runs a scenario on `n` ranks (a centralized pool unless `pool` says otherwise) and returns rank 0's `result` JSON. */
async function scenario(n: number, name: string, args: string[] = [], pool = "centralized") {
  const flags = ["-n", String(n), "--timeout", "90", "--pool", pool];
  const r = await run([...flags, SCENARIOS, name, ...args]);
  const line = r.stdout.split("\n").find((l) => l.startsWith("[0] result "));
  return { ...r, result: line ? JSON.parse(line.slice("[0] result ".length)) : undefined };
}

for (const n of [1, 2, 3, 8, 16]) {
  test(`every task runs exactly once on ${n} rank${n > 1 ? "s" : ""}`, async (t) => {
    const limit = n === 16 ? 20000 : 6000;
    const r = await scenario(n, "exactly-once", [String(limit), "3"]);
    t.is(r.code, 0, r.stderr);
    t.deepEqual(
      {
        limit: r.result.limit,
        puts: r.result.puts,
        executed: r.result.executed,
        twice: r.result.twice,
        missing: r.result.missing,
      },
      { limit, puts: limit, executed: limit, twice: -1, missing: -1 },
    );
    if (n > 1) {
      // The coordinator deals and runs nothing; the workers ran every task between them. (Not "every worker got
      // some": with microsecond tasks and 8 processes on 2 cores, two workers once finished all 6000 before the
      // others were scheduled to ask, a correct run. How evenly work spreads is the bench's to measure.)
      t.is(r.result.workers[0], 0);
      t.is(
        (r.result.workers as number[]).reduce((a, b) => a + b, 0),
        limit,
        `per-worker counts: ${r.result.workers}`,
      );
    }
  });
}

// Higher priority first everywhere. Among equals: a rank runs its own tasks newest first (order lifo, the
// default) or oldest first (fifo); a worker runs what the coordinator deals in the order dealt, oldest first.
for (const [n, pool, ties] of [
  [1, undefined, "newest"],
  [1, "centralized,order=fifo", "oldest"],
  [2, undefined, "oldest"],
  [2, "centralized,order=fifo", "oldest"],
] as const) {
  test(`priorities order execution on one worker (-n ${n}${pool ? ` --pool ${pool}` : ""}): ${ties} first among equals`, async (t) => {
    const r = await scenario(n, "priorities", [ties], pool);
    t.is(r.code, 0, r.stderr);
    t.deepEqual(r.result, { count: 200, sorted: true });
  });
}

test("an empty pool terminates on every rank", async (t) => {
  const r = await scenario(4, "empty");
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.result, { executed: 0 });
});

test("a handler error rejects run on every rank with a TaskError and ends the job", async (t) => {
  const r = await run(["-n", "3", "--timeout", "60", "--pool", "centralized", SCENARIOS, "failing"]);
  t.not(r.code, 0);
  const caught = r.stdout.split("\n").filter((l) => l.includes("caught TaskError"));
  t.is(caught.length, 3, r.stdout);
  for (const line of caught) {
    t.regex(line, /code=WP_TASK_FAILED rank=\d task=42 cause=.*task 42 is bad/);
  }
  t.regex(r.stderr, /workpool: rank \d failed .*TaskError: task 42 failed on rank \d: task 42 is bad/);
});

test("two phases and a second pool in one job", async (t) => {
  const r = await scenario(3, "phases");
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.result, { first: 60, second: 30, third: 1 });
});

for (const pool of ["centralized", "centralized,coordinatorWorks=true", "distributed"]) {
  test(`a ctx.put after its run failed or stopped goes nowhere (the next run does not start with it); after a completed run it throws (${pool})`, async (t) => {
    const r = await scenario(2, "late-put", [], pool);
    t.is(r.code, 0, r.stderr);
    t.deepEqual(r.result, { stopped: true, result: 1, ran: 0, refused: 1 });
  });
}

test("bad pool options get clear errors naming the option and value", async (t) => {
  const r = await scenario(2, "bad-options");
  t.is(r.code, 0, r.stderr);
  const out = r.result as string[];
  t.regex(
    out[0] as string,
    /^mode: ConfigError: pool option `mode` must be one of centralized, distributed; got `central`/,
  );
  t.regex(out[1] as string, /^key: ConfigError: unknown pool option `colour`/);
  t.regex(
    out[2] as string,
    /^partner: ConfigError: pool option `partner` must be one of round-robin, random, ring, neighbours; got `rnd`/,
  );
  t.regex(out[3] as string, /^cross: ConfigError: pool option `partner` applies to distributed pools only/);
  t.regex(out[4] as string, /^coordinator: ConfigError: pool option `coordinator` must be a rank in 0..1; got 99/);
  t.regex(out[5] as string, /^coordinatorWorks: ConfigError: pool option `coordinatorWorks` must be true or false/);
  t.regex(
    out[6] as string,
    /^priority: InvalidArgumentError: put: option `priority` must be a finite number; got "high"/,
  );
  t.regex(out[7] as string, /^to: ConfigError: put: option `to` applies to distributed pools only/);
});

test("--pool SPEC reaches the ranks as pool.config; code options override it", async (t) => {
  const r = await scenario(2, "config", [], "centralized,chunk=7");
  t.is(r.code, 0, r.stderr);
  t.like(r.result, { mode: "centralized", chunk: 7, coordinator: 0 });
});

test("a bad --pool SPEC is refused by the launcher with status 2", async (t) => {
  const r = await run(["-n", "2", "--pool", "centralised", SCENARIOS, "config"]);
  t.is(r.code, 2);
  t.regex(r.stderr, /--pool: pool option `mode` must be one of centralized, distributed; got `centralised`/);
});

test("fixed chunk size still runs every task once", async (t) => {
  const r = await scenario(4, "exactly-once", ["3000", "2"], "centralized,chunk=1");
  t.is(r.code, 0, r.stderr);
  t.like(r.result, { puts: 3000, executed: 3000, twice: -1, missing: -1 });
});

// coordinatorWorks: the coordinator rank runs tasks too, through the same protocol over an in-process loopback.
const WORKING = "centralized,coordinatorWorks=true";

for (const n of [2, 3, 8]) {
  test(`coordinatorWorks: every task runs exactly once on ${n} ranks`, async (t) => {
    const r = await scenario(n, "exactly-once", ["6000", "3"], WORKING);
    t.is(r.code, 0, r.stderr);
    t.like(r.result, { limit: 6000, puts: 6000, executed: 6000, twice: -1, missing: -1 });
    t.is(
      (r.result.workers as number[]).reduce((a, b) => a + b, 0),
      6000,
    );
  });
}

test("coordinatorWorks: the coordinator runs tasks; without it, it runs none", async (t) => {
  // 40 tasks of 5 ms on 2 ranks: the other rank can hold only a few at a time (its capacity), so the
  // coordinator's own worker is dealt some whatever the timing.
  const working = await scenario(2, "busy", ["40", "5"], WORKING);
  t.is(working.code, 0, working.stderr);
  t.true(working.result.coordinatorWorks);
  const [mine, theirs] = working.result.ran as [number, number];
  t.is(mine + theirs, 40);
  t.true(mine > 0 && theirs > 0, `tasks per rank: ${mine}, ${theirs}`);
  const dealing = await scenario(2, "busy", ["40", "5"]);
  t.is(dealing.code, 0, dealing.stderr);
  t.deepEqual(dealing.result, { ran: [0, 40], coordinatorWorks: false });
});

test("coordinatorWorks: a handler error rejects run on every rank, the coordinator's own included", async (t) => {
  const r = await run(["-n", "3", "--timeout", "60", "--pool", WORKING, SCENARIOS, "failing"]);
  t.not(r.code, 0);
  const caught = r.stdout.split("\n").filter((l) => l.includes("caught TaskError"));
  t.is(caught.length, 3, r.stdout);
  for (const line of caught) t.regex(line, /code=WP_TASK_FAILED rank=\d task=42 cause=.*task 42 is bad/);
});

test("coordinatorWorks: two phases and a second pool in one job", async (t) => {
  const r = await scenario(3, "phases", [], WORKING);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(r.result, { first: 60, second: 30, third: 1 });
});

for (const [pool, who] of [
  ["centralized", 1],
  [WORKING, 0],
  [WORKING, 2],
] as const) {
  test(`${pool}: an aborted run (rank ${who}'s signal) rejects on every rank, and the world goes on`, async (t) => {
    const r = await scenario(3, "abort", [String(who)], pool);
    t.is(r.code, 0, r.stderr);
    // A grant already on its way to the aborting rank is received before it exits (close is collective), so
    // the coordinator does not sit out ZeroMQ's linger time at exit.
    t.notRegex(r.stderr, /Waiting for queued ZeroMQ messages/);
    const outcomes = r.result as string[];
    t.is(outcomes.length, 3);
    for (const [rank, outcome] of outcomes.entries()) {
      t.regex(outcome, rank === who ? /^AbortError: run aborted on rank / : /run aborted on rank /);
      t.true(outcome.includes(`rank ${who}`), outcome);
    }
  });
}

test("a bad WORKPOOL_POOL reaching ranks unchecked (mpirun, srun, no launcher) is a ConfigError naming the variable", async (t) => {
  const r = await startNode(["--import", "tsx", "--conditions=workpool-source", SCENARIOS, "config"], {
    WORKPOOL_POOL: "centralised",
  }).result;
  t.is(r.code, 1);
  t.regex(
    r.stderr,
    /ConfigError: environment variable WORKPOOL_POOL="centralised": pool option `mode` must be one of centralized, distributed; got `centralised`/,
  );
});
