/**
 * DOALL loops through the real launcher (test/fixtures/loop-doall.ts): every index runs exactly once and the
 * values reduce to the sequential sum, under every kind of pool, with the grain chosen at run time or fixed
 * (in code, or by WORKPOOL_LOOP_GRAIN in the launcher's environment); other reducers, a loop stopped early,
 * and bad arguments rejected with errors naming them.
 */
import test from "ava";
import { fixture, rank0, run, runAlone } from "../helpers/run.ts";

const DOALL = fixture("loop-doall.ts");
const LOOPS = ["auto", "offset", "fixed", "async", "empty", "tiny", "int32", "huge"];

interface LoopLine {
  exact: boolean;
  wrong: number;
  result: number;
  expected: number;
  grains: number[];
}

function check(t: import("ava").ExecutionContext, lines: string[], fixedGrain?: number): void {
  for (const name of LOOPS) {
    const line = lines.find((l) => l.startsWith(`loop ${name} `));
    if (!line) {
      t.fail(`no result for loop ${name}:\n${lines.join("\n")}`);
      continue;
    }
    const r = JSON.parse(line.slice(`loop ${name} `.length)) as LoopLine;
    t.true(r.exact, `${name}: index ${r.wrong} did not run exactly once`);
    t.is(r.result, r.expected, `${name}: result`);
    if (fixedGrain !== undefined && name !== "fixed" && r.expected !== 0) {
      t.true(
        r.grains.every((g) => g === 0 || g === fixedGrain),
        `${name}: grains ${r.grains.join(",")}`,
      );
    }
  }
  t.true(lines.includes(`reduce {"max":19999,"hist":[10000,10000]}`), lines.join("\n"));
  t.true(lines.includes(`stop {"stopped":true,"result":"found"}`), lines.join("\n"));
  t.true(lines.includes("turns given"), lines.join("\n"));
  // A loop whose body threw: a TaskError on every rank, no iteration after it, and the next loop exact.
  t.true(lines.includes(`failed {"everyRank":true,"late":0,"next":100000}`), lines.join("\n"));
  const errors: Record<string, RegExp> = {
    start: /^error start true parallelFor: `start` must be a safe integer; got 0\.5$/,
    end: /^error end true parallelFor: `end` must be a safe integer; got NaN$/,
    order: /^error order true parallelFor: `start` \(10\) must not exceed `end` \(2\)$/,
    grain: /^error grain true parallelFor: option `grain` must be a positive integer; got 0$/,
    body: /^error body true parallelFor: `body` must be a function; got 42$/,
    concurrent:
      /^error concurrent true parallelFor: pool\d+ is running a loop or a run already; await it before the next/,
    strings:
      /^error strings false task .* failed on rank \d: parallelFor: the default reduce, sum \(give options\.reduce to combine other values\): op sum needs numbers/,
  };
  for (const [label, pattern] of Object.entries(errors)) {
    t.true(
      lines.some((l) => pattern.test(l)),
      `${label}:\n${lines.filter((l) => l.startsWith("error")).join("\n")}`,
    );
  }
}

for (const [n, pool] of [
  [3, undefined],
  [3, "distributed"],
  [2, "centralized,coordinatorWorks=true"],
  [3, "centralized,keep=0"],
  [3, "centralized,coordinatorWorks=false"],
] as const) {
  test(`every index once, results exact: -n ${n} --pool ${pool ?? "(default)"}`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "90", ...(pool ? ["--pool", pool] : []), DOALL, "20000"]);
    t.is(r.code, 0, r.stderr);
    const lines = rank0(r.stdout);
    check(t, lines);
    // parallelFor's pool: a centralized coordinator works too, unless the spec says it does not.
    const ran = JSON.parse(lines.find((l) => l.startsWith("ran "))?.slice(4) ?? "null") as number[] | null;
    t.is(ran?.length, n, lines.join("\n"));
    t.is(
      ran?.reduce((a, b) => a + b, 0),
      100 * n,
    );
    const idle = pool?.includes("coordinatorWorks=false") ? [0] : [];
    t.deepEqual(
      ran?.flatMap((k, rank) => (k === 0 ? [rank] : [])),
      idle,
      `iterations per rank ${JSON.stringify(ran)}`,
    );
  });
}

for (const pool of ["centralized", "distributed"]) {
  test(`a loop called on rank 0 only fails there naming a rank that closed, and the job ends (--pool ${pool})`, async (t) => {
    const r = await run(["-n", "3", "--timeout", "60", "--pool", pool, fixture("loop-some-ranks.ts"), "some"]);
    t.is(r.code, 1, r.stderr);
    t.regex(
      r.stderr,
      /workpool: rank 0 failed .*RankFailedError: pool1 run: rank [12] closed its world after 0 run\(s\) of pool1, and so will never join this one/,
    );
    t.false(r.stdout.includes("result"), r.stdout);
  });
}

test("ranks that call a loop with different ranges all get an InvalidArgumentError, not a wrong result", async (t) => {
  const r = await run([
    "-n",
    "2",
    "--timeout",
    "60",
    "--pool",
    "distributed",
    fixture("loop-some-ranks.ts"),
    "mismatch",
  ]);
  t.is(r.code, 0, r.stderr);
  const lines = r.stdout.split("\n").filter((l) => l.includes("mismatch "));
  t.is(lines.length, 2, r.stdout);
  t.regex(
    lines.join("\n"),
    /\[0\] mismatch parallelFor: the ranks ran \d+ iterations between 0 and 2000, and this rank called it for 0 up to 1000: every rank must give it the same start and end/,
  );
  t.regex(lines.join("\n"), /\[1\] mismatch parallelFor: .* this rank called it for 0 up to 2000/);
});

test("a fixed grain from WORKPOOL_LOOP_GRAIN in the launcher's environment", async (t) => {
  const r = await run(["-n", "3", "--timeout", "90", "--pool", "distributed", DOALL, "20000"], {
    WORKPOOL_LOOP_GRAIN: "5",
  });
  t.is(r.code, 0, r.stderr);
  check(t, rank0(r.stdout), 5);
});

test("a fixed grain from the pool spec (--pool distributed,grain=5); a bad one refused, naming the option", async (t) => {
  const r = await run(["-n", "2", "--timeout", "90", "--pool", "distributed,grain=5", DOALL, "20000"]);
  t.is(r.code, 0, r.stderr);
  check(t, rank0(r.stdout), 5);
  const bad = await run(["-n", "2", "--pool", "distributed,grain=-1", DOALL, "20000"]);
  t.is(bad.code, 2);
  t.regex(bad.stderr, /grain/);
});

test("a plain one-rank program, without the launcher", async (t) => {
  const r = await runAlone(DOALL, ["20000"]);
  t.is(r.code, 0, r.stderr);
  check(t, r.stdout.split("\n"));
});
