/**
 * Results per item (issue 29), through the real launcher (test/fixtures/map.ts): `world.map` and `pool.map`
 * give the root every item's own result in item order, under every kind of pool, with small, async and large
 * results and another root; a handler that throws rejects on every rank with a TaskError naming the item, and the
 * next map is whole; misuse is rejected on every rank naming it; a worker killed under `retries` loses no result.
 */
import test, { type ExecutionContext } from "ava";
import { asRank0, fixture, labelled, run, runAlone } from "../helpers/run.ts";

const MAP = fixture("map.ts");

const WHOLE = { ok: true, wrong: -1 };

function checkMaps(t: ExecutionContext, stdout: string, size: number): void {
  const at = (label: string, rank = 0) => labelled(stdout, label).get(rank);
  t.like(at("world"), { ...WHOLE, length: 5000 }, stdout);
  for (let r = 1; r < size; r++) t.is(labelled(stdout, "world-other").get(r) as unknown, true, "undefined elsewhere");
  t.like(at("root-last", size - 1), { ...WHOLE, length: 800 }, stdout);
  for (const mode of ["distributed", "centralized"]) {
    t.like(at(`pool-${mode}`), { ...WHOLE, length: 2000 }, stdout);
    t.like(at(`big-${mode}`), { ok: true }, stdout);
  }
  t.deepEqual(at("empty") as unknown, []);
  const failed = labelled(stdout, "failed");
  const failedAsync = labelled(stdout, "failed-async");
  t.is(failed.size, size, stdout);
  for (const [rank, e] of failed) {
    t.like(e, { name: "TaskError", task: 4321, cause: "RangeError: bad item4321" }, `rank ${rank}`);
    t.regex(e.message as string, /^map: the item at index 4321 failed on rank \d+: bad item4321$/);
  }
  t.is(failedAsync.size, size, stdout);
  for (const e of failedAsync.values()) {
    t.like(e, { name: "TaskError", task: 77, cause: "Error: async boom" });
  }
  t.like(at("after-fail"), { ...WHOLE, length: 5000 }, stdout);
  const unsendable = labelled(stdout, "unsendable");
  t.is(unsendable.size, size, stdout);
  for (const e of unsendable.values()) {
    t.like(e, { name: "TaskError", task: 33 });
    t.regex(e.cause as string, /^EncodeError: result\.f is a function; a result travels to the root/);
  }
  t.like(at("settled"), { ...WHOLE, length: 5000 }, stdout);
  // Async handlers with concurrency 8: every result in order, never more than 8 in flight on a rank, and more
  // than one somewhere (a rank with tasks queued starts the next while one awaits its timer).
  t.like(at("concurrent"), { ...WHOLE, length: 120 }, stdout);
  // No `concurrency` given, an async handler: in flight all the same (the pool's concurrency, 16).
  t.like(at("concurrent-default"), { ...WHOLE, length: 120 }, stdout);
  const mostDefault = [...labelled(stdout, "in-flight-default").values()].map((v) => v.most as number);
  t.true(Math.max(...mostDefault) > 1, `at most ${JSON.stringify(mostDefault)} in flight`);
  const most = [...labelled(stdout, "in-flight").values()].map((v) => v.most as number);
  t.is(most.length, size, stdout);
  t.true(
    most.every((m) => m <= 8),
    JSON.stringify(most),
  );
  t.true(Math.max(...most) > 1, JSON.stringify(most));
  const failedConcurrent = labelled(stdout, "failed-concurrent");
  t.is(failedConcurrent.size, size, stdout);
  for (const e of failedConcurrent.values()) t.like(e, { name: "TaskError", task: 41, cause: "Error: late boom" });
  t.like(at("after-concurrent"), { ...WHOLE, length: 5000 }, stdout);
  const aborted = labelled(stdout, "aborted");
  t.is(aborted.size, size, stdout);
  t.like(aborted.get(0), { name: "AbortError" });
  for (let r = 1; r < size; r++) t.like(aborted.get(r), { name: "PeerAbortedError" }, `rank ${r}`);
  t.like(at("after-abort"), { ...WHOLE, length: 5000 }, stdout);
  t.like(at("split-0"), { ...WHOLE, length: 1000 }, stdout);
  if (size > 1) t.like(at("split-1", 1), { ...WHOLE, length: 1000 }, stdout);
  const misuse: Record<string, RegExp> = {
    "not-array": /^map: `items` must be an array, the same on every rank; got undefined$/,
    root: new RegExp(`^map: option \`root\` must be a rank in 0\\.\\.${size - 1}; got ${size}$`),
    option: /^map: unknown option `chunk` \(known: root, grain, signal, concurrency\)$/,
  };
  for (const [label, pattern] of Object.entries(misuse)) {
    const all = labelled(stdout, `misuse-${label}`);
    t.is(all.size, size, `${label}: ${stdout}`);
    for (const e of all.values()) {
      t.true(e.arg as boolean, label);
      t.regex(e.message as string, pattern);
    }
  }
}

for (const [n, pool] of [
  [3, undefined],
  [3, "centralized"],
  [2, "centralized,keep=0"],
] as const) {
  test(`every item's own result in item order; failures name the item: -n ${n} --pool ${pool ?? "(default)"}`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "90", ...(pool ? ["--pool", pool] : []), MAP]);
    // Where it stopped, if it did: the labels printed so far.
    t.is(r.code, 0, `${r.stderr}\n${r.stdout}`);
    checkMaps(t, r.stdout, n);
    const lengths = labelled(r.stdout, "lengths");
    t.is(lengths.size, n, r.stdout);
    for (const e of lengths.values()) {
      t.true(e.arg as boolean);
      t.regex(e.message as string, /^map: every rank must give the same items; this rank gave (5000|100) /);
    }
    const contents = labelled(r.stdout, "contents");
    t.is(contents.size, n, r.stdout);
    t.like(contents.get(0), { name: "InvalidArgumentError" }, r.stdout);
    t.regex(
      contents.get(0)?.message as string,
      /^map: every rank must give the same items; rank [12] gave other items than this rank \(rank 0\): item 0 of 5000 differs \(17 items compared, evenly spaced\); make them from the same data on every rank/,
    );
    for (let k = 1; k < n; k++) t.like(contents.get(k), { rejected: false, root: false }, `rank ${k}`);
  });
}

test("a plain one-rank program, without the launcher", async (t) => {
  const r = await runAlone(MAP);
  t.is(r.code, 0, r.stderr);
  checkMaps(t, asRank0(r.stdout), 1);
});

test("a worker SIGKILLed mid-map under retries: every result once, in item order", async (t) => {
  const r = await run(["-n", "4", "--timeout", "90", MAP, "survive"]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stderr, /workpool: rank 1 died \(killed by SIGKILL\); the job goes on without it/);
  t.like(labelled(r.stdout, "survive").get(0), { ...WHOLE, length: 300 }, r.stdout);
});
