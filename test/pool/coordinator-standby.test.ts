/**
 * A working coordinator (coordinatorWorks) that only deals while tasks may be long (Coordinator `standsBy`) must
 * still deal every task: near the end, Expected Card Distribution keeps the last tasks from workers slower than
 * the coordinator's own worker, and that worker, standing by, is dealt nothing either.
 */
import test from "ava";
import { type Status, TAG } from "../../lib/pool/centralized/plain-protocol.ts";
import { recordingCoordinator } from "../helpers/coordinator.ts";

class FakeWorker {
  seq = 0;
  granted = 0;
  constructor(
    readonly rank: number,
    public meanMs: number,
  ) {}

  /** Every task granted so far run; asking for more. */
  status(): Status {
    return { s: this.seq++, d: this.granted, k: 0, v: 0, n: 0, t: [], c: 2, m: this.meanMs, l: 0, w: 1, o: 0 };
  }
}

test("a working coordinator standing by still deals the last tasks when ECD defers to its own worker", (t) => {
  const { c, sent } = recordingCoordinator(60, 4, { coordinatorWorks: true });
  // (start() would arm SELF_WAIT_MS; every worker joins at once below instead.)
  // The coordinator's own worker (rank 0) is faster than the three others.
  const workers = [new FakeWorker(0, 4), new FakeWorker(1, 4), new FakeWorker(2, 4), new FakeWorker(3, 4)];
  const report = (w: FakeWorker) => {
    const before = sent.length;
    c.onMessage(w.rank, TAG.status, w.status() as unknown as Record<string, unknown>);
    for (const s of sent.slice(before)) {
      const to = workers[s.dest];
      if (to && s.tag === TAG.grant) to.granted += (s.body.t as unknown[]).length;
    }
  };
  // Short tasks first: every worker runs 8 or more.
  for (let k = 0; k < 100 && workers.some((w) => w.granted < 9); k++) for (const w of workers) report(w);
  t.true(
    workers.every((w) => w.granted >= 9),
    JSON.stringify(workers),
  );
  // Then the three remote workers' tasks turn out long (8 ms): the coordinator only deals.
  workers[1]!.meanMs = 8;
  workers[2]!.meanMs = 8;
  workers[3]!.meanMs = 8;
  for (let k = 0; k < 200 && c.queued() > 0; k++) for (const w of workers) report(w);
  t.is(c.queued(), 0, `tasks left in the queue while every worker waits: ${JSON.stringify(workers)}`);
});
