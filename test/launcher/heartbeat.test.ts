import test from "ava";
import { firstRecordDueMs, REMOTE_START_MS, START_BASE_MS, startAllowanceMs } from "../../launcher/heartbeat.ts";
import { Watchdog, type WatchdogOptions } from "../../launcher/watchdog.ts";

// How long a rank the launcher has not heard from at all may take to start (launcher/heartbeat.ts).

test("a local rank's start allowance grows with the ranks started here and the load, per core", (t) => {
  t.is(startAllowanceMs(1, 2, 0), START_BASE_MS + 500);
  t.is(startAllowanceMs(4, 2, 0), 12_000);
  t.is(startAllowanceMs(64, 2, 8), 46_000);
  t.is(startAllowanceMs(64, 64, 0), 11_000);
  t.is(startAllowanceMs(4, 0, -1), 14_000, "no cores or a negative load read as 1 core and no load");
});

test("a local rank's first record is due after --heartbeat plus its allowance; a remote one's after 30 s at least", (t) => {
  t.is(firstRecordDueMs(2000, false, 12_000), 14_000);
  t.is(firstRecordDueMs(2000, true, 12_000), REMOTE_START_MS);
  t.is(firstRecordDueMs(60_000, true, 12_000), 60_000);
});

// The watchdog does not count as silence the time a rank's main thread waited for a core (launcher/watchdog.ts):
// on a crowded machine a rank that was kept from running is not a hung one; one that neither ran nor waited is.
test("a rank silent past --heartbeat is found silent, unless it spent the silence waiting for a core", (t) => {
  const HEARTBEAT_MS = 30_000;
  const waited = [0, 0, 0];
  const ranks = [0, 1, 2].map((rank) => ({
    rank,
    exited: false,
    heard: true,
    lastHeard: 1_000,
    remote: false,
    process: { signal: () => {}, waitedForCoreMs: rank === 2 ? undefined : () => waited[rank] },
  }));
  const stops: string[] = [];
  const policy = {
    decided: false,
    stoppingAll: () => "stopping 3 ranks",
    stop: (reason: string) => {
      stops.push(reason);
      policy.decided = true;
    },
  };
  const survival = { isDead: () => false, survives: () => false };
  const dog = new Watchdog({
    ranks,
    survival,
    policy,
    where: (r: number) => `rank ${r}`,
    heartbeatMs: HEARTBEAT_MS,
    startMs: 10_000,
  } as unknown as WatchdogOptions);
  dog.check(2_000); // every rank heard from at 1 s; their waits so far are noted
  // Rank 1 waited 25 s of 31 s of silence for a core: 6 s silent. Rank 0 waited none of it, and is named.
  waited[0] = 100;
  waited[1] = 25_000;
  dog.check(32_000);
  t.deepEqual(stops, [
    "workpool: rank 0 sent no heartbeat for 30 s (stopped, or blocked in one synchronous stretch that long; " +
      "--heartbeat SECONDS to change, 0 for none); stopping 3 ranks",
  ]);
  // Without rank 0: rank 1 is not silent yet; rank 2, whose waits cannot be read, is silent by the clock alone.
  ranks[0]!.exited = true;
  policy.decided = false;
  stops.length = 0;
  ranks[2]!.lastHeard = 31_000;
  dog.check(32_000);
  t.deepEqual(stops, []);
  // Later, rank 1 has been silent 40 s beyond its 25 s of waiting: named, with the wait.
  dog.check(66_000);
  t.deepEqual(stops, [
    "workpool: rank 1 sent no heartbeat for 30 s, besides 25 s waiting for a core (stopped, or blocked in one " +
      "synchronous stretch that long; --heartbeat SECONDS to change, 0 for none); stopping 3 ranks",
  ]);
  ranks[1]!.exited = true;
  policy.decided = false;
  stops.length = 0;
  dog.check(70_000);
  t.regex(stops[0] ?? "", /^workpool: rank 2 sent no heartbeat for 30 s \(stopped/);
});
