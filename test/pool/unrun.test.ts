// Tasks put into a pool that never runs are not dropped silently: the job fails, naming the pool and the rank.
import test from "ava";
import { fixture, linesOf, run, runAlone } from "../helpers/run.ts";

const APP = fixture("pool-unrun.ts");

test("tasks put and never run fail the job, naming the pool and the rank", async (t) => {
  const r = await run(["-n", "2", "--timeout", "60", APP, "1"]);
  t.is(r.code, 1, r.stderr);
  t.is(
    linesOf(r.stderr).at(-1),
    "workpool: rank 1 failed (exit code 1): workpool: rank 1: tasks were put and never run " +
      "(pool2 holds 3 tasks): call pool.run(handler) on every rank after the puts",
  );
  t.regex(r.stdout, /\[1\] rank 1 closed/, "the app itself ran to its end");
});

test("an app run without the launcher fails the same way", async (t) => {
  const r = await runAlone(APP);
  t.is(r.code, 1, r.stderr);
  t.regex(r.stderr, /^workpool: rank 0: tasks were put and never run \(pool2 holds 3 tasks\)/m);
});
