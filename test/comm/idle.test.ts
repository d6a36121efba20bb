// An app that never calls close() is told so and its job ends within seconds, instead of hanging for ever;
// an app that still waits for something (a timer, a receive, a pool run, a ZeroMQ socket of its own) is left
// alone.
import test from "ava";
import { fixture, linesOf, run, runAlone } from "../helpers/run.ts";

const APP = fixture("no-close.ts");
const FAST = { WORKPOOL_IDLE_CHECK_MS: "100" };

// On 1 rank nothing holds the process (a world of one makes no connections): it ends, and says it did so
// without close(); on more, its open connections hold it, and the idle watch ends it.
for (const n of [1, 3]) {
  test(`an app that ends without close() on ${n} rank(s) fails naming the rank, instead of hanging`, async (t) => {
    const r = await run(["-n", String(n), "--timeout", "60", APP, "forgot"], FAST);
    // Ended by the idle watch, not by --timeout (status 124, a message of its own): the last line says so.
    t.is(r.code, 1, r.stderr);
    t.regex(
      linesOf(r.stderr).at(-1) ?? "",
      n === 1
        ? /^workpool: rank 0 failed \(exit code 1\): workpool: rank 0 exited without calling world\.close\(\)/
        : /^workpool: rank \d failed \(exit code 1\): workpool: rank \d: the app has nothing left to do and never called world\.close\(\)/,
    );
  });
}

// Without a launcher a world of one is not failed for a missing close(), but told, since under the launcher the
// same app fails; an app that closes hears nothing.
test("without the launcher, an app that ends without close() is warned and exits 0; one that closes is not", async (t) => {
  const [forgot, closed] = await Promise.all([runAlone(fixture("no-close-js.mjs")), runAlone(fixture("hello.ts"))]);
  t.is(forgot.code, 0, forgot.stderr);
  t.deepEqual(linesOf(forgot.stderr), [
    "workpool: warning: this process ended without calling world.close(); under `workpool launch` that fails the " +
      "job (close is collective, like MPI_Finalize: on more ranks the others would wait for this one)",
  ]);
  t.is(closed.code, 0, closed.stderr);
  t.is(closed.stderr, "");
});

test("a plain JavaScript app that prints after connect and ends without close() on 2 ranks fails too, instead of hanging", async (t) => {
  const r = await run(["-n", "2", "--timeout", "60", fixture("no-close-js.mjs")], FAST);
  t.is(r.code, 1, r.stderr);
  t.regex(
    linesOf(r.stderr).at(-1) ?? "",
    /^workpool: rank \d failed \(exit code 1\): workpool: rank \d: the app has nothing left to do and never called world\.close\(\)/,
  );
});

const CASES = [
  ["timer", APP],
  ["recv", APP],
  ["pool", APP],
  ["zmq", APP],
  ["zmq", fixture("no-close-zmq-first.ts"), " (zeromq imported before workpool)"],
] as const;
for (const [which, app, how = ""] of CASES) {
  test(`waiting is not idle: ${which}${how}`, async (t) => {
    const r = await run(["-n", "3", "--timeout", "60", app, which], FAST);
    t.is(r.code, 0, r.stderr);
    t.is(linesOf(r.stdout).filter((l) => l.endsWith("closed")).length, 3, r.stdout);
  });
}

test("a collective called on only some ranks fails there naming a rank that closed, instead of hanging", async (t) => {
  const r = await run(["-n", "3", "--timeout", "60", fixture("some-ranks.ts"), "extra"]);
  t.is(r.code, 1, r.stderr);
  t.regex(
    r.stderr,
    /workpool: rank 0 failed .*RankFailedError: allreduce: rank [12] closed its world without joining this collective, and so never will/,
  );
  t.false(r.stdout.includes("sum"), r.stdout);
});

test("a rank that closes after a collective another rank has yet to join does not fail it", async (t) => {
  const r = await run(["-n", "3", "--timeout", "60", fixture("some-ranks.ts"), "behind"]);
  t.is(r.code, 0, r.stderr);
  t.is(linesOf(r.stdout).filter((l) => l.endsWith("] ok")).length, 3, r.stdout);
});
