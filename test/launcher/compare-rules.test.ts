// `workpool compare`'s rules, without launching ranks: which result keys the agreement check leaves out,
// how runs agree or disagree, which row is fastest, short labels, the baseline's time, and the options.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import test from "ava";
import { shortLabel } from "../../launcher/compare/labels.ts";
import { checkAgreement, differingKeys, isVolatileKey, resultLine } from "../../launcher/compare/results.ts";
import { metricCells, spreadCell } from "../../launcher/compare/cells.ts";
import type { Baseline, ConfigSummary, Row, RunMetrics } from "../../launcher/compare/types.ts";
import { parseCompareArgs } from "../../launcher/compare/options.ts";
import { tableRows, wideSpreads } from "../../launcher/compare/rows.ts";
import { reportedSeconds, runBaseline } from "../../launcher/compare/runs.ts";
import { UsageError } from "../../launcher/usage-error.ts";
import { DISTRIBUTED_COMBINATIONS } from "../../lib/internal.ts";
import { tempFolder } from "../helpers/folders.ts";
import { waitUntilGone } from "../helpers/pids.ts";
import { fixture } from "../helpers/run.ts";

test("timing keys are left out by their last word; look-alikes are kept", (t) => {
  for (const key of ["seconds", "seqSeconds", "solveMs", "wallTime", "wall_time", "SOLVE_MS", "time", "ms"]) {
    t.true(isVolatileKey(key), key);
  }
  for (const key of ["elapsedMillis", "parse-seconds", "variant", "pool", "mode", "ranks", "np", "elapsed"]) {
    t.true(isVolatileKey(key), key);
  }
  for (const key of ["items", "sums", "total", "runtime", "timestamp", "terms", "msgs", "Timer", "poolSize"]) {
    t.false(isVolatileKey(key), key);
  }
});

test("a result line: rank 0's last JSON object, keys sorted, timing and --ignore keys removed at any depth", (t) => {
  const stdout = [
    '[0] {"total": 1}',
    '[1] {"total": 99}',
    "[0] not json {",
    '[0] {"z": 1, "seqSeconds": 0.5, "a": {"solveMs": 3, "keep": [1, {"wallTime": 2, "x": 0}]}, "runtime": 7}',
    "[0] done",
  ].join("\n");
  t.deepEqual(resultLine(stdout), {
    text: '{"a":{"keep":[1,{"x":0}]},"runtime":7,"z":1}',
    ignored: ["seqSeconds", "solveMs", "wallTime"],
  });
  t.deepEqual(resultLine(stdout, ["runtime", "x"]), {
    text: '{"a":{"keep":[1,{}]},"z":1}',
    ignored: ["runtime", "seqSeconds", "solveMs", "wallTime", "x"],
  });
  t.is(resultLine("[0] [1,2]\n[0] plain\n"), undefined);
});

const run = (text: string | undefined): RunMetrics => ({
  wallMs: 1,
  tasks: 1,
  moved: 0,
  messages: 0,
  busyMs: 1,
  idleMs: 0,
  rankWallMs: 1,
  terminationMs: 0,
  result: text === undefined ? undefined : { text, ignored: ["seconds"] },
  perRank: [],
});
const config = (spec: string, np: number, ...runs: RunMetrics[]): ConfigSummary => ({
  spec,
  np,
  runs,
  failed: undefined,
  tracePath: undefined,
});

test("agreement: same lines agree, different ones are listed with their runs and the keys that differ", (t) => {
  t.deepEqual(checkAgreement([config("a", 2, run('{"x":1}'), run('{"x":1}')), config("b", 4, run('{"x":1}'))]), {
    kind: "agree",
    runs: 3,
    ignored: ["seconds"],
  });
  t.deepEqual(checkAgreement([config("a", 2, run(undefined))]), { kind: "unchecked", runs: 1 });
  t.deepEqual(checkAgreement([config("a", 2)]), { kind: "none" });
  const d = checkAgreement([
    config("a", 2, run('{"n":{"y":1},"x":1}'), run('{"n":{"y":2},"x":1}')),
    config("b", 2, run(undefined)),
  ]);
  t.deepEqual(d, {
    kind: "disagree",
    lines: [
      { line: '{"n":{"y":1},"x":1}', runs: ["a -n 2 #1"] },
      { line: '{"n":{"y":2},"x":1}', runs: ["a -n 2 #2"] },
      { line: "(no JSON result line from rank 0)", runs: ["b -n 2 #1"] },
    ],
    differing: ["n.y"],
    ignored: ["seconds"],
  });
  t.deepEqual(differingKeys(['{"a":1,"b":[1]}', '{"b":[2]}']), ["a", "b"]);
});

test("the fastest row at each rank count is marked, and none when the results disagree", (t) => {
  const timed = (spec: string, np: number, ...ms: number[]) =>
    config(spec, np, ...ms.map((wallMs) => ({ ...run('{"x":1}'), wallMs, busyMs: wallMs })));
  const configs = [timed("b", 2, 30, 10, 20), timed("a", 2, 15), timed("b", 4, 5), timed("a", 4, 9)];
  const baseline: Baseline = { command: "seq", runsS: [0.06], seconds: 0.06, source: "json" };
  const rows = tableRows(configs, ["a", "b"], baseline, checkAgreement(configs));
  t.deepEqual(
    rows.map((r) => [r.spec, r.np, r.medianS, r.fastest]),
    [
      ["a", 2, 0.015, true],
      ["a", 4, 0.009, false],
      ["b", 2, 0.02, false],
      ["b", 4, 0.005, true],
    ],
  );
  const b2 = rows[2];
  t.is(b2?.minS, 0.01);
  t.is(b2?.maxS, 0.03);
  t.is(b2?.speedup?.toFixed(6), (0.06 / 0.02).toFixed(6));
  t.is(b2?.efficiency?.toFixed(6), (0.06 / 0.02 / 2).toFixed(6));
  const disagree = { kind: "disagree", lines: [], differing: [], ignored: [] } as const;
  t.false(tableRows(configs, ["a", "b"], undefined, disagree).some((r) => r.fastest));
  t.true(tableRows(configs, ["a", "b"], undefined, disagree).every((r) => r.speedup === undefined));
});

// A stranger's compare under load read "speedup 2.81 (0.44..5.18)": the spread was printed, nothing said that a
// figure that moves that much is not one to choose a configuration by.
test("figures whose largest run is 1.5 times the smallest or more are named as too spread to choose by", (t) => {
  const timed = (spec: string, np: number, ...ms: number[]) =>
    config(spec, np, ...ms.map((wallMs) => ({ ...run('{"x":1}'), wallMs, busyMs: wallMs })));
  const configs = [timed("steady", 2, 100, 110, 120), timed("jumpy", 2, 100, 200, 110)];
  const steady: Baseline = { command: "seq", runsS: [0.2, 0.21, 0.22], seconds: 0.21, source: "wall" };
  const rows = tableRows(configs, ["steady", "jumpy"], steady, checkAgreement(configs));
  t.deepEqual(wideSpreads(rows, steady), ["jumpy -n 2 wall 0.10..0.20 s (2.0x)"]);
  // A baseline that jumps makes the speedups jump, though the pool runs were steady.
  const jumpy: Baseline = { command: "seq", runsS: [0.2, 0.4, 0.21], seconds: 0.21, source: "wall" };
  const rows2 = tableRows([configs[0] as ConfigSummary], ["steady"], jumpy, checkAgreement(configs));
  t.deepEqual(wideSpreads(rows2, jumpy), ["the baseline 0.20..0.40 s (2.0x)", "steady -n 2 speedup 1.75..3.64 (2.1x)"]);
  t.deepEqual(
    wideSpreads(tableRows([configs[0] as ConfigSummary], ["steady"], steady, checkAgreement(configs)), steady),
    [],
  );
});

test("every figure has its spread over the runs; speedups pair each run with the baseline run of its round", (t) => {
  const runs = [
    { ...run('{"x":1}'), wallMs: 100, tasks: 200, moved: 10, messages: 40 },
    { ...run('{"x":1}'), wallMs: 50, tasks: 200, moved: 30, messages: 20 },
    { ...run('{"x":1}'), wallMs: 80, tasks: 200, moved: 20, messages: 30 },
  ];
  const configs = [config("a", 2, ...runs)];
  // Round 2 was slow for everyone: the baseline too. Paired, its run is no outlier.
  const baseline: Baseline = { command: "seq", runsS: [0.2, 0.1, 0.16], seconds: 0.16, source: "json" };
  const [row] = tableRows(configs, ["a"], baseline, checkAgreement(configs));
  t.deepEqual(row?.spread.tasks, { min: 200, median: 200, max: 200 });
  t.deepEqual(row?.spread.moved, { min: 10, median: 20, max: 30 });
  t.deepEqual(row?.spread.speedup, { min: 2, median: 2, max: 2 });
  t.deepEqual(row?.spread.efficiency, { min: 1, median: 1, max: 1 });
  t.is(row?.speedup, 2);
  const cells = metricCells(row as Row, true);
  t.deepEqual(cells.slice(4, 7), ["200", "20 (10..30)", "30 (20..40)"]);
  t.deepEqual(cells.slice(-2), ["2.00", "100.0%"]);
  // Unpaired drift: the same runs against a steady baseline spread out.
  const steady: Baseline = { command: "seq", runsS: [0.16, 0.16, 0.16], seconds: 0.16, source: "json" };
  const [drift] = tableRows(configs, ["a"], steady, checkAgreement(configs));
  t.deepEqual(metricCells(drift as Row, true).slice(-2), ["2.00 (1.60..3.20)", "100.0% (80.0%..160.0%)"]);
  t.is(
    spreadCell({ min: 1, median: 1, max: 1.001 }, (x) => x.toFixed(2)),
    "1.00",
  );
});

test("short labels name the strategies, defaults filled in, other keys as given", (t) => {
  t.is(shortLabel("distributed,initiation=receiver,partner=random,termination=token-ring"), "dist recv/random/token");
  t.is(shortLabel("distributed,partner=ring"), "dist recv/ring/token");
  t.is(shortLabel("distributed,initiation=sender,termination=tree,lowWater=4"), "dist send/random/tree lowWater=4");
  t.is(shortLabel("distributed,initiation=lifeline,termination=tree"), "dist lifeline/tree");
  t.is(shortLabel("distributed,initiation=diffusion,topology=torus"), "dist diffusion/token topology=torus");
  t.is(shortLabel("centralized"), "central");
  t.is(shortLabel("centralized,coordinatorWorks=true"), "central coordinatorWorks");
  t.is(shortLabel("centralized,keep=0,chunk=2"), "central keep=0 chunk=2");
  t.is(shortLabel("chunk=2"), "central chunk=2");
});

test("a baseline's time: the last JSON line's seconds (rank prefix allowed), else undefined", (t) => {
  t.is(reportedSeconds('warming up\n{"seconds": 1}\n[0] {"seconds":0.25,"total":3}\nbye\n'), 0.25);
  t.is(reportedSeconds('{"seconds":"1"}\n{"ms":3}\nplain 2.0\n'), undefined);
});

test("runBaseline: median of the printed seconds, or of the wall times; a failing command rejects", async (t) => {
  const node = JSON.stringify(process.execPath);
  const json = await runBaseline(`${node} -e 'console.log(JSON.stringify({ seconds: 0.25 }))'`, 3, undefined);
  t.deepEqual(json, {
    command: `${node} -e 'console.log(JSON.stringify({ seconds: 0.25 }))'`,
    runsS: [0.25, 0.25, 0.25],
    seconds: 0.25,
    source: "json",
  });
  const wall = await runBaseline(`${node} -e 0`, 1, undefined);
  t.is(wall.source, "wall");
  t.true(wall.seconds > 0 && wall.runsS.length === 1);
  await t.throwsAsync(runBaseline(`${node} -e 'console.error("no input"); process.exit(3)'`, 2, undefined), {
    message: "exit 3: no input",
  });
  // A command the shell runs as a child of its own: the timeout kills it too, not only the shell.
  const pidFile = join(tempFolder(t, "wp-baseline-"), "pid");
  const writePid = `require("fs").writeFileSync(${JSON.stringify(pidFile)}, String(process.pid))`;
  await t.throwsAsync(runBaseline(`${node} -e '${writePid}; setInterval(() => {}, 1000)'; echo after`, 1, 2), {
    message: /^killed after 2 s/,
  });
  const pid = Number(readFileSync(pidFile, "utf8"));
  t.deepEqual(await waitUntilGone([pid]), [], `the baseline's own child ${pid} outlived the timeout`);
});

test("options: -n takes a list, --ignore repeats, bad values name the option", (t) => {
  const app = fixture("compare-app.ts");
  const o = parseCompareArgs(["-n", "4,2,4", "--ignore", "a", "--ignore=b", "--baseline", "seq 1", app, "-x"], 64);
  t.not(o, "help");
  if (o === "help") return;
  t.deepEqual([o.ranks, o.ignore, o.baseline, o.args], [[2, 4], ["a", "b"], "seq 1", ["-x"]]);
  t.is(o.pools.length, 3 + DISTRIBUTED_COMBINATIONS.length);
  t.deepEqual((parseCompareArgs([app], 64) as { ranks: readonly number[] }).ranks, [2]);
  const bad = (argv: string[]) => t.throws(() => parseCompareArgs([...argv, app], 64), { instanceOf: UsageError });
  t.regex(bad(["-n", "2,x"]).message, /option -n must be a whole number from 1 to 64, or a comma-separated list/);
  t.regex(bad(["-n", "0"]).message, /got "0"/);
  t.regex(bad(["-n", "1,2", "--pool", "centralized,coordinator=1"]).message, /coordinator.*\(at -n 1\)$/);
  t.is(bad(["--baseline", " "]).message, "option --baseline needs a command; got an empty string");
  t.is(bad(["--ignore="]).message, "option --ignore needs a result key; got an empty string");
});
