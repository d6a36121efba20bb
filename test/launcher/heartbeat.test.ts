import test from "ava";
import { firstRecordDueMs, REMOTE_START_MS, START_BASE_MS, startAllowanceMs } from "../../launcher/heartbeat.ts";

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
