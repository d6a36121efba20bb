// What `put` catches at once, on any number of ranks: a task that cannot travel to another rank as it is, and
// the same root task put by every rank before the first run (a common first mistake in SPMD code); and a value a
// handler returns that cannot travel.
import test from "ava";
import { arrivesAsItIs, findUnsendable, where } from "../../lib/comm/unsendable.ts";
import { type ReduceFn, resolveOp } from "../../lib/comm/ops.ts";
import { EncodeError } from "../../lib/errors.ts";
import { Accumulator } from "../../lib/loop/tally.ts";
import { Results } from "../../lib/pool/results.ts";
import { fixture, linesOf, run } from "../helpers/run.ts";

const UNTRAVELLED = fixture("put-untravelled.ts");
const SAME_ROOTS = fixture("same-roots.ts");
const ADVICE = "; a task may run on any rank, so put plain data and keep functions and classes in the handler";

for (const n of ["1", "2"]) {
  test(`-n ${n}: a task that cannot travel fails at put, naming the app's path inside the task`, async (t) => {
    const r = await run(["-n", n, UNTRAVELLED]);
    t.is(r.code, 0, r.stderr);
    t.deepEqual(linesOf(r.stdout), [
      `[0] EncodeError: put: task.f is a function${ADVICE}`,
      `[0] EncodeError: put: task[1].deep[0] is a symbol (Symbol(s))${ADVICE}`,
      "[0] EncodeError: put: task.job is an instance of class Job, which would arrive on another rank as a plain " +
        `object of its fields, without its class and methods${ADVICE}`,
      `[0] EncodeError: put: task.get("k").cb is a function${ADVICE}`,
      `[0] EncodeError: put: task.self refers back to an object that contains it (a circular structure)${ADVICE}`,
      // From a handler (ctx.put), the run fails on every rank with a TaskError whose cause says why.
      `[0] run: TaskError: put: task.then is a function${ADVICE}`,
    ]);
  });
}

test("arrivesAsItIs: data the codec carries as it is, nested any way; not functions, symbols, instances, circles", (t) => {
  const deep: unknown[] = [];
  let at = deep;
  for (let i = 0; i < 100; i++) at.push((at = []));
  const good = [
    1,
    "s",
    null,
    undefined,
    2n,
    [1, [2, { a: new Map([[{ k: 1 }, new Set([new Date(0), /x/g])]]) }]],
    { buf: Buffer.from("x"), f64: new Float64Array(2), ab: new ArrayBuffer(4), err: new Error("e", { cause: 1 }) },
    Object.assign(Object.create(null) as object, { x: 1 }),
    deep,
  ];
  good.forEach((v, i) => t.true(arrivesAsItIs(v), `good[${i}]`));
  class Point {
    x = 1;
  }
  const circle: unknown[] = [];
  circle.push({ back: circle });
  const bad = [
    () => 1,
    Symbol("s"),
    new Point(),
    { p: [new Point()] },
    circle,
    { e: new Error("e", { cause: Symbol("c") }) },
  ];
  bad.forEach((v, i) => t.false(arrivesAsItIs(v), `bad[${i}]`));
  t.is(where("task", findUnsendable({ p: [new Point()] }, true)?.path ?? []), "task.p[0]");
  t.is(findUnsendable({ p: [new Point()] }), undefined, "send keeps an instance's fields, as documented");
});

test("the same root task put by every rank: one warning, on rank 0, saying how to put it on one rank", async (t) => {
  const [every, one, own] = await Promise.all([
    run(["-n", "3", SAME_ROOTS, "every"]),
    run(["-n", "3", SAME_ROOTS, "one"]),
    run(["-n", "3", SAME_ROOTS, "own"]),
  ]);
  t.is(every.code, 0, every.stderr);
  t.is(every.stdout, "[0] leaves 2961\n", "the mistake still runs: 3 x 987");
  const warnings = linesOf(every.stderr).filter((l) => l.includes("WP_SAME_ROOTS"));
  t.deepEqual(
    warnings.map((l) => l.replace(/\(node:\d+\)/, "(node:PID)")),
    [
      "[0] (node:PID) [WP_SAME_ROOTS] WorkpoolWarning: pool1: every one of the 3 ranks put the same task before " +
        "the first run, so it runs 3 times, and so does every task it puts; a root task belongs on one rank: " +
        "if (world.rank === 0) pool.put(task)",
    ],
  );
  for (const r of [one, own]) {
    t.is(r.code, 0, r.stderr);
    t.false(r.stderr.includes("WP_SAME_ROOTS"), r.stderr);
  }
  t.is(one.stdout, "[0] leaves 987\n");
});

// A centralized pool on 2 ranks whose coordinator only deals runs every task on one rank: said once, by the
// coordinator, unless coordinatorWorks was chosen; never on more ranks, nor for the default pool.
test("a centralized pool of one worker: one warning, on its coordinator, naming coordinatorWorks", async (t) => {
  const cases = [
    ["-n", "2", "--pool", "centralized"],
    ["-n", "2", "--pool", "centralized,coordinator=1"],
    ["-n", "2", "--pool", "centralized,coordinatorWorks=false"],
    ["-n", "2", "--pool", "centralized,coordinatorWorks=true"],
    ["-n", "3", "--pool", "centralized"],
    ["-n", "2"],
  ];
  const results = await Promise.all(cases.map((c) => run([...c, SAME_ROOTS, "one"])));
  const warned = results.map((r, i) => {
    t.is(r.code, 0, r.stderr);
    t.is(r.stdout, "[0] leaves 987\n", cases[i]?.join(" "));
    return linesOf(r.stderr)
      .filter((l) => l.includes("WP_ONE_WORKER"))
      .map((l) => l.replace(/\(node:\d+\)/, "(node:PID)"));
  });
  const line = (rank: number) =>
    `[${rank}] (node:PID) [WP_ONE_WORKER] WorkpoolWarning: pool1: a centralized pool on 2 ranks has one worker: ` +
    `its coordinator (rank ${rank}) runs no task, so every task runs on the other rank; \`coordinatorWorks: true\` ` +
    "(`--pool centralized,coordinatorWorks=true`) puts both to work, as does the distributed pool (the default); " +
    "`coordinatorWorks: false` keeps a coordinator that only deals, and this warning away";
  t.deepEqual(warned, [[line(0)], [line(1)], [], [], [], []]);
});

for (const n of ["1", "2"]) {
  test(`-n ${n}: a handler that returns null returns a value, sync as async`, async (t) => {
    const r = await run(["-n", n, fixture("null-result.ts")]);
    t.is(r.code, 0, r.stderr);
    t.deepEqual(linesOf(r.stdout), ["[0] sync 2500 async 2500"]);
  });
}

// A handler's value travels too (partial results go from rank to rank): one that cannot fails its task where it
// is returned, naming where in it the problem is, on any number of ranks; it was a DataCloneError ("() => 1 could
// not be cloned") or an EncodeError naming a message's envelope.
test("a value a handler returns that cannot travel fails its task, naming the spot in the value", (t) => {
  const cases: [unknown, string][] = [
    [() => 1, "value is a function"],
    [Symbol("s"), "value is a symbol (Symbol(s))"],
    [{ score: 3, meta: { cb: () => 1 } }, "value.meta.cb is a function"],
    [[1, { s: Symbol("t") }], "value[1].s is a symbol (Symbol(t))"],
  ];
  for (const [value, what] of cases) {
    for (const results of [Results.of("sum"), Results.of((a: unknown) => a)]) {
      const e = t.throws(() => results.add(value), { instanceOf: EncodeError });
      t.is(
        e?.message,
        `the value it returned cannot travel between ranks: ${what}; return plain data (values are combined across ranks)`,
      );
    }
    t.throws(() => new Accumulator((a: unknown) => a, undefined).add(value), { instanceOf: EncodeError });
  }
  // The same value returned after others: named as the value's fault, not as the reducer's (with `sum` it was
  // "run: option `reduce`: op sum needs numbers ... got 0 and function", and a user looked for it in the option).
  // (A reducer that keeps such a value without a complaint is not caught here, only a function or a symbol: a
  // whole walk of every value would cost every task.)
  for (const [value, what] of cases) {
    const sums = [
      [0, Results.of("sum")],
      [0, new Accumulator(resolveOp("sum", "test") as ReduceFn<unknown>, "sum")],
    ] as const;
    const own = typeof value === "object" ? [] : ([[{ score: 1 }, Results.of((a: unknown) => a)]] as const);
    for (const [first, results] of [...sums, ...own]) {
      results.add(first);
      const e = t.throws(() => results.add(value), { instanceOf: EncodeError });
      t.true(e?.message.includes(`cannot travel between ranks: ${what};`), e?.message);
    }
  }
  // A reducer's own refusal of plain data stays its own.
  const sum = Results.of("sum");
  sum.add(1);
  t.throws(() => sum.add("x"), { message: /^run: option `reduce`: op sum needs numbers/ });
  // Without `reduce`, the message says that the default combined the values, and how to combine others.
  const byDefault = Results.of(undefined);
  byDefault.add("s1");
  t.throws(() => byDefault.add("s2"), {
    message:
      /^run: the default reduce, sum, combines the values handlers return \(give run's `reduce`, an op or a function, for other values, or return nothing\): op sum needs numbers/,
  });
  // Plain data, Maps, Dates and typed arrays are copied as they are.
  const ok = Results.of((a: unknown) => a);
  ok.add({ m: new Map([[1, new Date(0)]]), f: new Float64Array(2) });
  t.deepEqual(ok.take(), [{ m: new Map([[1, new Date(0)]]), f: new Float64Array(2) }]);
});
