/**
 * Matcher in this process: a receive posted before or after the message arrives, non-overtaking per source,
 * wildcards (ANY source takes the earliest arrival across sources, ANY tag the oldest of a source), the
 * earliest posted receive winning, aborts and close/fail leaving no waiter and no abort listener behind, a long
 * backlog taken out of order; and a seeded randomized comparison against a naive model.
 */
import { getEventListeners } from "node:events";
import test from "ava";
import { AbortError, ClosedError, RankFailedError } from "../../lib/errors.ts";
import { ANY, Matcher, type Message } from "../../lib/comm/matcher.ts";
import { Router } from "../../lib/comm/router.ts";
import { seededRandom as rng } from "../../lib/pool/partner/random.ts";

const msg = (source: number, tag: number, data: unknown): Message => ({ source, tag, data });

/** Settles `p` and says how, so a test can compare outcomes with deepEqual. */
async function outcome(p: Promise<Message>): Promise<Message | string> {
  try {
    return await p;
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
}

test("a receive posted before the message arrives gets it; one posted after takes it from the queue", async (t) => {
  const m = new Matcher();
  const early = m.receive(1, 5, undefined, "recv");
  m.deliver(1, 5, "first");
  t.deepEqual(await early, msg(1, 5, "first"));
  t.is(m.size, 0);
  m.deliver(1, 5, "second");
  t.is(m.size, 1);
  t.deepEqual(await m.receive(1, 5, undefined, "recv"), msg(1, 5, "second"));
  t.is(m.size, 0);
});

test("messages from one source arrive in the order sent, for a given tag and for ANY tag", async (t) => {
  const m = new Matcher();
  for (let i = 0; i < 6; i++) m.deliver(2, i % 2, i);
  t.deepEqual((await m.receive(2, 1, undefined, "recv")).data, 1);
  t.deepEqual((await m.receive(2, 1, undefined, "recv")).data, 3);
  t.deepEqual((await m.receive(2, ANY, undefined, "recv")).data, 0);
  t.deepEqual((await m.receive(ANY, ANY, undefined, "recv")).data, 2);
  t.deepEqual(m.take(2, 0)?.data, 4);
  t.deepEqual(m.take(ANY, 1)?.data, 5);
  t.is(m.take(ANY, ANY), undefined);
});

test("ANY source takes the earliest arrival across sources, not the lowest source", async (t) => {
  const m = new Matcher();
  m.deliver(3, 0, "a");
  m.deliver(1, 0, "b");
  m.deliver(2, 7, "c");
  m.deliver(1, 7, "d");
  t.deepEqual(m.take(ANY, 7), msg(2, 7, "c"));
  t.deepEqual(await m.receive(ANY, ANY, undefined, "recv"), msg(3, 0, "a"));
  t.deepEqual(m.take(ANY, ANY), msg(1, 0, "b"));
  t.deepEqual(m.take(ANY, ANY), msg(1, 7, "d"));
});

test("a receive naming a source or tag leaves other traffic queued, in order", async (t) => {
  const m = new Matcher();
  m.deliver(0, 1, "x0");
  m.deliver(1, 2, "y");
  m.deliver(0, 2, "x1");
  t.deepEqual(await m.receive(0, 2, undefined, "recv"), msg(0, 2, "x1"));
  t.is(m.take(0, 2), undefined, "no other tag-2 message from 0");
  t.is(m.take(5, ANY), undefined, "a source that never sent");
  t.is(m.size, 2);
  t.deepEqual(m.take(ANY, ANY), msg(0, 1, "x0"));
  t.deepEqual(m.take(ANY, ANY), msg(1, 2, "y"));
});

test("a message goes to the earliest posted receive that matches it, wildcard or not", async (t) => {
  const m = new Matcher();
  const specific = m.receive(1, 4, undefined, "recv");
  const anySource = m.receive(ANY, 4, undefined, "recv");
  const anything = m.receive(ANY, ANY, undefined, "recv");
  const other = m.receive(2, 9, undefined, "recv");
  m.deliver(3, 4, "to anySource"); // specific does not match source 3
  m.deliver(1, 4, "to specific");
  m.deliver(1, 4, "to anything");
  m.deliver(2, 9, "to other");
  m.deliver(2, 9, "queued");
  t.deepEqual(await specific, msg(1, 4, "to specific"));
  t.deepEqual(await anySource, msg(3, 4, "to anySource"));
  t.deepEqual(await anything, msg(1, 4, "to anything"));
  t.deepEqual(await other, msg(2, 9, "to other"));
  t.is(m.size, 1);
});

test("an aborted receive rejects with AbortError, consumes nothing and leaves no waiter or listener", async (t) => {
  const m = new Matcher();
  const controller = new AbortController();
  const aborted = m.receive(1, 3, controller.signal, "recv");
  const later = m.receive(1, 3, undefined, "recv");
  t.is(getEventListeners(controller.signal, "abort").length, 1);
  const reason = new Error("no longer needed");
  controller.abort(reason);
  const e = await t.throwsAsync(aborted, { instanceOf: AbortError, message: "recv aborted" });
  t.is(e?.cause, reason);
  t.is(getEventListeners(controller.signal, "abort").length, 0);
  // The withdrawn receive must not swallow the next message: the one posted after it gets it.
  m.deliver(1, 3, "after the abort");
  t.deepEqual(await later, msg(1, 3, "after the abort"));
  m.deliver(1, 3, "queued");
  t.is(m.size, 1, "no waiter left to take it");
});

test("a signal aborted beforehand rejects at once even with a matching message queued, and leaves it", async (t) => {
  const m = new Matcher();
  m.deliver(0, 1, "stays");
  const reason = new Error("before");
  const e = await t.throwsAsync(m.receive(0, 1, AbortSignal.abort(reason), "recv"), { instanceOf: AbortError });
  t.is(e?.cause, reason);
  t.deepEqual(m.take(0, 1), msg(0, 1, "stays"));
});

test("a receive that got its message removes its abort listener; a later abort changes nothing", async (t) => {
  const m = new Matcher();
  const controller = new AbortController();
  const p = m.receive(ANY, ANY, controller.signal, "recv");
  const q = m.receive(ANY, ANY, controller.signal, "recv");
  t.is(getEventListeners(controller.signal, "abort").length, 2);
  m.deliver(4, 0, "got it");
  t.is(getEventListeners(controller.signal, "abort").length, 1);
  controller.abort();
  t.deepEqual(await p, msg(4, 0, "got it"));
  await t.throwsAsync(q, { instanceOf: AbortError });
  t.is(getEventListeners(controller.signal, "abort").length, 0);
  // A receive that finds its message queued registers no listener at all.
  m.deliver(4, 0, "queued");
  const fresh = new AbortController();
  t.deepEqual(await m.receive(4, 0, fresh.signal, "recv"), msg(4, 0, "queued"));
  t.is(getEventListeners(fresh.signal, "abort").length, 0);
});

test("close rejects pending and later receives with ClosedError naming the call; queued ones stay takeable", async (t) => {
  const m = new Matcher();
  const controller = new AbortController();
  const pending = [m.receive(1, 1, controller.signal, "recv"), m.receive(3, 3, undefined, "barrier")];
  m.deliver(2, 2, "kept");
  m.close("the world was closed");
  t.deepEqual(await Promise.all(pending.map(outcome)), [
    "ClosedError: recv: the world was closed",
    "ClosedError: barrier: the world was closed",
  ]);
  t.is(getEventListeners(controller.signal, "abort").length, 0);
  await t.throwsAsync(m.receive(2, 2, undefined, "allgather"), {
    instanceOf: ClosedError,
    message: "allgather: the world was closed",
  });
  t.deepEqual(m.take(2, 2), msg(2, 2, "kept"));
  m.deliver(1, 1, "after close");
  t.is(m.size, 1, "a message after close is queued, not handed to a closed receive");
});

test("fail rejects pending and later receives with its error for each call; close then takes over", async (t) => {
  const m = new Matcher();
  const failure = (call: string) => new RankFailedError(0, `${call}: rank 0 failed`);
  const pending = [m.receive(1, 1, undefined, "recv"), m.receive(0, 0, undefined, "bcast")];
  m.fail(failure);
  m.fail(() => new Error("a second failure is ignored"));
  t.deepEqual(await Promise.all(pending.map(outcome)), [
    "RankFailedError: recv: rank 0 failed",
    "RankFailedError: bcast: rank 0 failed",
  ]);
  await t.throwsAsync(m.receive(ANY, ANY, undefined, "gather"), {
    instanceOf: RankFailedError,
    message: "gather: rank 0 failed",
  });
  m.close("the world was closed");
  await t.throwsAsync(m.receive(ANY, ANY, undefined, "recv"), { instanceOf: ClosedError });
  m.fail(failure);
  await t.throwsAsync(m.receive(ANY, ANY, undefined, "recv"), { instanceOf: ClosedError });
});

test("a long backlog from one source, taken by tag out of order, keeps every message once and in order", (t) => {
  const m = new Matcher();
  const n = 5000;
  for (let i = 0; i < n; i++) m.deliver(7, i % 3, i);
  const got: number[] = [];
  // Tag 2 first (removals from the middle), then the rest from the head (past the compaction threshold).
  for (let x = m.take(7, 2); x; x = m.take(7, 2)) got.push(x.data as number);
  t.is(m.size, n - got.length);
  for (let x = m.take(ANY, ANY); x; x = m.take(ANY, ANY)) got.push(x.data as number);
  const tag2 = Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 === 2);
  const rest = Array.from({ length: n }, (_, i) => i).filter((i) => i % 3 !== 2);
  t.deepEqual(got, [...tag2, ...rest]);
  t.is(m.size, 0);
  // And the queue works as new afterwards.
  m.deliver(7, 0, "again");
  t.deepEqual(m.take(7, ANY), msg(7, 0, "again"));
});

test("head-first takes interleaved with arrivals keep order across compactions", (t) => {
  const m = new Matcher();
  let next = 0;
  let expected = 0;
  for (let round = 0; round < 50; round++) {
    for (let i = 0; i < 100; i++) m.deliver(1, 0, next++);
    for (let i = 0; i < 90; i++) t.is(m.take(1, 0)?.data, expected++);
  }
  for (let x = m.take(1, ANY); x; x = m.take(1, ANY)) t.is(x.data, expected++);
  t.is(expected, next);
});

interface ModelPending {
  readonly id: number;
  readonly source: number;
  readonly tag: number;
}

const matches = (p: { source: number; tag: number }, m: Message) =>
  (p.source === ANY || p.source === m.source) && (p.tag === ANY || p.tag === m.tag);

test("random schedules of deliver, receive, take and abort match a naive model (seeded)", async (t) => {
  let compared = 0;
  for (let seed = 1; seed <= 300; seed++) {
    const random = rng(seed);
    const pick = (n: number) => Math.floor(random() * n);
    const m = new Matcher();
    const queue: Message[] = [];
    let pending: ModelPending[] = [];
    const expected = new Map<number, Message | "aborted">();
    const actual = new Map<number, Promise<Message | string>>();
    const controllers = new Map<number, AbortController>();
    const takes: [Message | undefined, Message | undefined][] = [];
    let ids = 0;
    let data = 0;
    for (let op = 0; op < 200; op++) {
      const r = random();
      const source = pick(3);
      const tag = pick(3);
      if (r < 0.4) {
        const message = msg(source, tag, data++);
        m.deliver(source, tag, message.data);
        const i = pending.findIndex((p) => matches(p, message));
        if (i >= 0) {
          expected.set((pending[i] as ModelPending).id, message);
          pending.splice(i, 1);
        } else queue.push(message);
      } else if (r < 0.75) {
        const want = { source: random() < 0.3 ? ANY : source, tag: random() < 0.3 ? ANY : tag };
        const id = ids++;
        const controller = new AbortController();
        controllers.set(id, controller);
        actual.set(id, outcome(m.receive(want.source, want.tag, controller.signal, "recv")));
        const i = queue.findIndex((q) => matches(want, q));
        if (i >= 0) expected.set(id, queue.splice(i, 1)[0] as Message);
        else pending.push({ id, ...want });
      } else if (r < 0.85) {
        const want = { source: random() < 0.3 ? ANY : source, tag: random() < 0.3 ? ANY : tag };
        const i = queue.findIndex((q) => matches(want, q));
        takes.push([m.take(want.source, want.tag), i >= 0 ? queue.splice(i, 1)[0] : undefined]);
      } else if (pending.length > 0) {
        const victim = pending[pick(pending.length)] as ModelPending;
        controllers.get(victim.id)?.abort();
        expected.set(victim.id, "aborted");
        pending = pending.filter((p) => p !== victim);
      }
      if (m.size !== queue.length) {
        t.fail(`seed ${seed}, op ${op}: ${m.size} queued, the model has ${queue.length}`);
        return;
      }
    }
    for (const p of pending) controllers.get(p.id)?.abort();
    for (const p of pending) expected.set(p.id, "aborted");
    for (const [id, promise] of actual) {
      const got = await promise;
      const want = expected.get(id);
      const same =
        want === "aborted" ? got === "AbortError: recv aborted" : JSON.stringify(got) === JSON.stringify(want);
      compared++;
      if (!same) {
        t.fail(`seed ${seed}: receive ${id} got ${JSON.stringify(got)}, the model says ${JSON.stringify(want)}`);
        return;
      }
    }
    for (const [got, want] of takes) {
      compared++;
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        t.fail(`seed ${seed}: take got ${JSON.stringify(got)}, the model says ${JSON.stringify(want)}`);
        return;
      }
    }
    for (const c of controllers.values()) {
      if (getEventListeners(c.signal, "abort").length !== 0) {
        t.fail(`seed ${seed}: an abort listener was left behind`);
        return;
      }
    }
  }
  t.true(compared > 20000, `outcomes compared: ${compared}`);
});

test("peerLeft: receives naming a closed source reject, pending and later, unless its message is queued; ANY once all left", async (t) => {
  const m = new Matcher();
  const error = (call: string) => new ClosedError(`${call}: rank 1 closed its world`);
  const pending = m.receive(1, 5, undefined, "recv");
  const fromAny = m.receive(ANY, 5, undefined, "recv");
  m.deliver(1, 6, "queued");
  m.peerLeft(1, false, error);
  t.is(await outcome(pending), "ClosedError: recv (from rank 1, tag 5): rank 1 closed its world");
  t.is(
    await outcome(m.receive(1, 5, undefined, "recv")),
    "ClosedError: recv (from rank 1, tag 5): rank 1 closed its world",
  );
  t.deepEqual(await outcome(m.receive(1, 6, undefined, "recv")), msg(1, 6, "queued"), "what it sent is still taken");
  // Another source is still there: a receive from any rank waits for it.
  m.deliver(2, 5, "from 2");
  t.deepEqual(await outcome(fromAny), msg(2, 5, "from 2"));
  const waiting = m.receive(ANY, 7, undefined, "recv");
  m.peerLeft(2, true, (call) => new ClosedError(`${call}: rank 2 closed its world`));
  t.is(await outcome(waiting), "ClosedError: recv (from any rank, tag 7): rank 2 closed its world");
  t.is(
    await outcome(m.receive(ANY, ANY, undefined, "recv")),
    "ClosedError: recv (from any rank): rank 2 closed its world",
  );
  t.is(m.waiting, 0);
});

test("a rank's close told before this rank first receives still rejects that receive (Router peerClosed)", async (t) => {
  const router = new Router(0, 2);
  router.peerClosed(1);
  t.is(
    await outcome(router.matcher(0).receive(1, 5, undefined, "recv")),
    "ClosedError: recv (from rank 1, tag 5): rank 1 closed its world, and nothing it sent here matches (check the send's tag and dest)",
  );
  t.is(
    await outcome(router.matcher(0).receive(ANY, 5, undefined, "recv")),
    "ClosedError: recv (from any rank, tag 5): rank 1 closed its world, and nothing it sent here matches (check the send's tag and dest)",
  );
  // Collectives and pools have their own ways: their receives are left alone.
  const collective = router.matcher(1).receive(1, 5, undefined, "allreduce");
  router.matcher(1).deliver(1, 5, "late");
  t.deepEqual(await outcome(collective), msg(1, 5, "late"));
});
