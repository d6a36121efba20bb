// What the launcher does with each record a rank sends (launcher/record-dispatch.ts), in-process: the parts it
// hands records to are the job's own, their broadcasts caught. A record that is not well-formed is heard (the
// rank is alive) and otherwise ignored, with a warning only where ignoring it changes what the job does.
import test from "ava";
import { JobWatch } from "../../launcher/dashboard/watch.ts";
import { Leavers } from "../../launcher/leavers.ts";
import type { Rank } from "../../launcher/rank.ts";
import { RecordDispatch } from "../../launcher/record-dispatch.ts";
import { Shrinks } from "../../launcher/shrink.ts";
import { Stalls } from "../../launcher/stalls.ts";
import { Survival } from "../../launcher/survival.ts";
import type { LauncherRecord } from "../../lib/internal.ts";

function job(np = 3, prefix = true) {
  const ranks: Rank[] = Array.from({ length: np }, (_, rank) => ({
    rank,
    process: { signal: () => {} } as unknown as Rank["process"],
    exited: false,
    lastError: undefined,
    lastStderr: undefined,
    earlyStderr: [],
    lastHeard: 0,
    heard: false,
    remote: false,
  }));
  const written: string[] = [];
  const sent: [LauncherRecord, number[]][] = [];
  const write = (text: string) => void written.push(text);
  const broadcast = (record: LauncherRecord, skip?: ReadonlySet<number>) => sent.push([record, [...(skip ?? [])]]);
  const survival = new Survival({ where: (rank) => `rank ${rank}`, broadcast, write });
  const shrinks = new Shrinks({ size: np, live: (rank) => !survival.isDead(rank), broadcast });
  const watch = new JobWatch({ np, app: "app.ts", hostOf: () => undefined });
  const leavers = new Leavers(broadcast);
  const stalls = new Stalls({
    np,
    running: (rank) => !survival.isDead(rank),
    anyDied: () => survival.anyDead,
    toldTo: () => 0,
    where: (rank) => `rank ${rank}`,
    deadlock: (reason) => written.push(reason),
  });
  const dispatch = new RecordDispatch({
    np,
    ranks,
    prefix,
    write,
    watch,
    survival,
    shrinks,
    leavers,
    stalls,
    trace: undefined,
    progress: undefined,
  });
  return { ranks, written, sent, survival, watch, dispatch };
}

test("a record that is not well-formed: heard, ignored, and a warning where the job then acts otherwise", (t) => {
  const { ranks, written, survival, dispatch } = job();
  const tolerate = { t: "tolerate", essential: [7] };
  dispatch.onRecord(1, tolerate);
  t.true(ranks[1]?.heard);
  t.false(survival.survives(2), "no tolerate record was taken");
  t.deepEqual(written, [
    `workpool: rank 1 sent a tolerate record whose \`essential\` is not a list of ranks in 0..2: ` +
      `${JSON.stringify(tolerate)}; ignored (any rank's death still ends the job)\n`,
  ]);
  written.length = 0;
  dispatch.onRecord(0, { t: "redealt", pool: "pool1", rank: 1 });
  t.deepEqual(written, [
    `workpool: rank 0 sent a redealt record without a pool name, a rank and a task count: ` +
      `{"t":"redealt","pool":"pool1","rank":1}; ignored\n`,
  ]);
  written.length = 0;
  for (const record of [{ t: "stats", pool: "p" }, { t: "progress" }, { t: "error" }, { t: "whatever" }, {}]) {
    dispatch.onRecord(2, record);
  }
  t.deepEqual(written, []);
  t.deepEqual(dispatch.stats, []);
  t.true(ranks[2]?.heard);
  t.is(ranks[2]?.lastError, undefined);
});

test("records of ranks the job does not have are dropped", (t) => {
  const { ranks, written, dispatch } = job();
  dispatch.onRecord(3, { t: "error", message: "x", stack: "x" });
  t.deepEqual(written, []);
  t.true(ranks.every((r) => !r.heard));
});

test("uncaught errors: one stack per message, from the first rank to report it; every rank's last error kept", (t) => {
  const { ranks, written, dispatch } = job();
  dispatch.onRecord(2, { t: "error", message: "Error: bad input", stack: "Error: bad input\n    at main" });
  dispatch.onRecord(0, { t: "error", message: "Error: bad input", stack: "Error: bad input\n    at main" });
  dispatch.onRecord(1, { t: "error", message: "Error: handled" });
  t.deepEqual(written, ["[2] Error: bad input\n[2]     at main\n"]);
  t.deepEqual(
    ranks.map((r) => r.lastError),
    ["Error: bad input", "Error: handled", "Error: bad input"],
  );
  t.is(dispatch.printedBy("Error: bad input"), 2);
  t.is(dispatch.printedBy("Error: handled"), undefined);
});

test("statistics are gathered with their rank; tolerate and redealt go to survival", async (t) => {
  const { dispatch, survival, written } = job();
  const stats = { tasksExecuted: 1, counters: {} };
  dispatch.onRecord(1, { t: "stats", pool: "pool1", run: 1, config: { mode: "centralized" }, stats });
  t.like(dispatch.stats, [{ t: "stats", pool: "pool1", run: 1, rank: 1, stats }]);
  dispatch.onRecord(0, { t: "tolerate", essential: [0] });
  t.true(survival.survives(1));
  t.false(survival.survives(0));
  survival.died(1, "killed by SIGKILL");
  dispatch.onRecord(0, { t: "redealt", pool: "pool1", rank: 1, tasks: 4 });
  await new Promise((resolve) => setImmediate(resolve));
  t.deepEqual(written, [
    "workpool: rank 1 died (killed by SIGKILL); the job goes on without it: pool1 re-dealt 4 tasks\n",
  ]);
});

test("leavers: passed on when one began less than every leaver before it, not to ranks closing", (t) => {
  const { dispatch, sent } = job();
  dispatch.onRecord(0, { t: "leaving", p: [[16, 2]] });
  dispatch.onRecord(1, { t: "leaving", p: [[16, 2]] });
  dispatch.onRecord(2, { t: "leaving", p: [[16, 1]] });
  t.deepEqual(sent, [
    [{ t: "left", rank: 0, p: [[16, 2]] }, [0]],
    [{ t: "left", rank: 2, p: [[16, 1]] }, [0, 1, 2]],
  ]);
});

test("shrinks: answered once every live rank has asked", (t) => {
  const { dispatch, sent } = job();
  dispatch.onRecord(0, { t: "shrink", n: 1, b: 32 });
  dispatch.onRecord(2, { t: "shrink", n: 1, b: 48 });
  t.deepEqual(sent, []);
  dispatch.onRecord(1, { t: "shrink", n: 1, b: 40 });
  t.deepEqual(sent, [[{ t: "shrunk", n: 1, dead: [], b: 48 }, []]]);
});
