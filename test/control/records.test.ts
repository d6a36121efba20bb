// The control channel's records (lib/control/records.ts), as each end reads them: what the writers send is
// taken as it is; a record that lacks what its reader reads is not, whoever sent it (a rank on another host is
// not trusted to send well-formed records).
import test from "ava";
import { readLauncherRecord, readRankRecord } from "../../lib/control/records.ts";
import type { LauncherRecord, RankRecord } from "../../lib/internal.ts";

const SIZE = 4;

test("readRankRecord: every record a rank sends is read as sent", (t) => {
  const config = { mode: "distributed" };
  const stats = { tasksExecuted: 3, counters: { tokenRounds: 1 } };
  const sent: RankRecord[] = [
    { t: "beat" },
    { t: "error", message: "Error: no", stack: "Error: no\n    at x" },
    { t: "error", message: "Error: no" },
    { t: "stats", pool: "pool1", run: 1, config, stats } as unknown as RankRecord,
    { t: "progress", pool: "pool1", done: 5, queued: 2 },
    { t: "trace", lines: '{"ph":"X"}\n' },
    { t: "tolerate", essential: [0, 3] },
    { t: "redealt", pool: "pool1", rank: 2, tasks: 0 },
    { t: "leaving", p: [[16, 2]] },
    { t: "leaving", p: [] },
    { t: "shrink", n: 1, b: 64 },
    { t: "live", rss: 1, heap: 2, heapTotal: 3, pools: [] },
  ];
  for (const record of sent) t.deepEqual(readRankRecord(JSON.parse(JSON.stringify(record)), SIZE), record);
});

test("readRankRecord: a record that lacks what the launcher reads is not taken, and says why", (t) => {
  const bad: unknown[] = [
    null,
    [],
    { t: "error" },
    { t: "error", message: 3 },
    { t: "stats", pool: "pool1", run: 1, config: {}, stats: {} },
    { t: "stats", pool: "pool1", run: "1", config: {}, stats: { counters: {} } },
    { t: "stats", pool: "pool1", run: 1, config: null, stats: { counters: {} } },
    { t: "progress", pool: 1, done: 1, queued: 0 },
    { t: "progress", pool: "p", done: "1", queued: 0 },
    { t: "trace" },
    { t: "tolerate", essential: 0 },
    { t: "tolerate", essential: [4] },
    { t: "tolerate", essential: [-1] },
    { t: "tolerate", essential: [1.5] },
    { t: "redealt", pool: "p", rank: 1, tasks: -1 },
    { t: "redealt", pool: "p", tasks: 1 },
    { t: "leaving", p: [[1]] },
    { t: "leaving", p: [1, 2] },
    { t: "leaving" },
    { t: "shrink", n: 1 },
    { t: "shrink", n: "1", b: 2 },
    { t: "hello", rank: 0, token: "x" },
    { t: "constructor" },
    {},
  ];
  for (const record of bad) t.is(typeof readRankRecord(record, SIZE), "string", JSON.stringify(record));
  t.is(
    readRankRecord({ t: "tolerate", essential: [4] }, SIZE),
    "a tolerate record whose `essential` is not a list of ranks in 0..3",
  );
  t.is(
    readRankRecord({ t: "redealt", pool: "p" }, SIZE),
    "a redealt record without a pool name, a rank and a task count",
  );
});

test("readRankRecord: a live sample is always taken, what in it is not a number counting 0", (t) => {
  const read = readRankRecord(
    { t: "live", rss: "big", heap: null, pools: [{ pool: "p", done: "7", busyMs: 5, loopTotal: 9 }, { done: 1 }, 3] },
    SIZE,
  );
  t.like(read, { t: "live", rss: 0, heap: 0, heapTotal: 0 });
  const pools = (read as { pools: readonly unknown[] }).pools;
  t.is(pools.length, 1);
  t.like(pools[0], { pool: "p", done: 0, busyMs: 5, active: false, mode: "", loopDone: 0, loopTotal: 9 });
  t.deepEqual(readRankRecord({ t: "live" }, SIZE), { t: "live", rss: 0, heap: 0, heapTotal: 0, pools: [] });
});

test("readLauncherRecord: what the launcher sends is read as sent; one a rank cannot act on is undefined", (t) => {
  const sent: LauncherRecord[] = [
    { t: "refused", reason: "wrong token" },
    { t: "dead", rank: 1, why: "killed by SIGKILL" },
    { t: "live" },
    { t: "left", rank: 2, p: [[16, 1]] },
    { t: "shrunk", n: 1, dead: [1, 3], b: 64 },
  ];
  for (const record of sent) t.deepEqual(readLauncherRecord(JSON.parse(JSON.stringify(record))), record);
  for (const bad of [
    null,
    { t: "dead", rank: 1 },
    { t: "dead", rank: "1", why: "x" },
    { t: "left", rank: 1, p: 3 },
    { t: "left", rank: 1, p: [["a", 1]] },
    { t: "shrunk", n: 1, dead: ["x"], b: 1 },
    { t: "shrunk", dead: [], b: 1 },
    { t: "state" },
  ]) {
    t.is(readLauncherRecord(bad), undefined, JSON.stringify(bad));
  }
});
