/**
 * Results by key (issue 29), through the real launcher (test/fixtures/gather.ts): tasks of a tree hand values
 * back with `ctx.give(key, value)` and the gathering rank's `run` resolves with every key once, with its value,
 * in pools of both modes, on rank 0 and on another rank, with large values and after a stop; misuse is named on
 * every rank; a worker killed under `retries` loses no value and duplicates none; ranks that disagree on
 * `gather` are told so instead of waiting for good.
 */
import test, { type ExecutionContext } from "ava";
import { asRank0, fixture, labelled, run, runAlone } from "../helpers/run.ts";

const GATHER = fixture("gather.ts");

const WHOLE = { ok: true, size: 3000, wrong: -1 };

function checkGathers(t: ExecutionContext, stdout: string, size: number): void {
  for (const mode of ["distributed", "centralized"]) {
    t.like(labelled(stdout, `tree-${mode}`).get(0), WHOLE, stdout);
    t.like(labelled(stdout, `tree-${mode}-last`).get(size - 1), WHOLE, stdout);
    for (let r = 1; r < size; r++) t.is(labelled(stdout, `tree-${mode}-other`).get(r) as unknown, true);
  }
  t.like(labelled(stdout, "big").get(0), { ok: true }, stdout);
  t.like(labelled(stdout, "stopped").get(0), { stopped: true, result: "found", has150: true, right: true }, stdout);
  const misuse: Record<string, RegExp> = {
    "no-option": /^InvalidArgumentError: give: pool\d+ run 1 has no option `gather`: pass \{ gather: true \} to run/,
    "bad-key": /^InvalidArgumentError: give: key must be a string or a finite number; got \{"i":1\}$/,
    unsendable: /^EncodeError: give: value\.nested\.f is a function; a given value travels to the gathering rank/,
  };
  for (const [label, cause] of Object.entries(misuse)) {
    const all = labelled(stdout, `misuse-${label}`);
    t.is(all.size, size, `${label}: ${stdout}`);
    for (const e of all.values()) {
      t.like(e, { name: "TaskError", task: true }, label);
      t.regex(e.cause as string, cause, label);
    }
  }
  const root = labelled(stdout, "misuse-root");
  t.is(root.size, size, stdout);
  for (const e of root.values()) {
    t.like(e, { arg: true, message: `run: option \`gather.root\` must be a rank in 0..${size - 1}; got ${size}` });
  }
}

test("every key once with its value, in both modes, on any rank; misuse named: -n 3", async (t) => {
  const r = await run(["-n", "3", "--timeout", "90", GATHER]);
  t.is(r.code, 0, r.stderr);
  checkGathers(t, r.stdout, 3);
});

test("a plain one-rank program, without the launcher", async (t) => {
  const r = await runAlone(GATHER);
  t.is(r.code, 0, r.stderr);
  checkGathers(t, asRank0(r.stdout), 1);
});

test("a worker SIGKILLed mid-run under retries: every key once, none lost", async (t) => {
  const r = await run(["-n", "4", "--timeout", "90", GATHER, "survive"]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stderr, /workpool: rank 1 died \(killed by SIGKILL\); the job goes on without it/);
  t.like(labelled(r.stdout, "survive").get(0), { ok: true, size: 400, wrong: -1 }, r.stdout);
});

test("ranks that disagree on gather: the gathering rank says which, and no rank waits for good", async (t) => {
  const r = await run(["-n", "3", "--timeout", "60", GATHER, "disagree"]);
  t.is(r.code, 0, r.stderr);
  t.like(labelled(r.stdout, "disagree").get(0), { arg: true }, r.stdout);
  t.regex(
    labelled(r.stdout, "disagree").get(0)?.message as string,
    /^run: rank [12] began run 2 of pool1 without sending what it gave in run 1: every rank must pass the same option `gather` to run$/,
  );
  for (const rank of [1, 2]) t.like(labelled(r.stdout, "disagree").get(rank), { name: "RankFailedError" }, r.stdout);
});
