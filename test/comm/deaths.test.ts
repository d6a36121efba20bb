/**
 * Messaging that survives a dead rank (issue 17; lib/comm/router.ts `peerDied`), in this process: worlds of
 * simulated ranks joined by a fake transport that delivers each pair's messages in order, a macrotask apart,
 * and can hold a pair's messages back. A rank "dies" when its transport stops delivering what it sent; the
 * survivors are told through World#peerDied, as connect() wires the launcher's notices, each when the test
 * says (not all at once, as the launcher's notices arrive). The real processes are in the last test.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import type { JobEnv } from "../../lib/comm/env.ts";
import type { Transport } from "../../lib/comm/transport.ts";
import { RankFailedError } from "../../lib/errors.ts";
import { fixture, linesOf, run } from "../helpers/run.ts";

// The idle watch would end this process if a test world sat idle for two checks: make them rare. It reads the
// variable when the module loads, hence the dynamic imports.
process.env.WORKPOOL_IDLE_CHECK_MS = String(2 ** 30);
const { Communicator: World } = await import("../../lib/comm/world.ts");
const { ANY } = await import("../../lib/comm/matcher.ts");
const { Transport: RealTransport } = await import("../../lib/comm/transport.ts");
type World = InstanceType<typeof World>;

const WHY = "killed by SIGKILL";

interface Net {
  readonly worlds: World[];
  /** Stops delivering what `rank` sends, as if it died; nothing is told. */
  kill(rank: number): void;
  /** Every survivor but `except` learns that `rank` died. */
  tell(rank: number, except?: readonly number[]): void;
  /** Holds back (true) or lets go (false) the messages from `from` to `to`. */
  hold(from: number, to: number, held: boolean): void;
  /** Messages each rank's transport was given for `dest` since the start. */
  sentTo(from: number, dest: number): number;
  /** Resolves once `rank`'s transport is closed (its close finished). */
  closed(rank: number): Promise<void>;
  /** Whether `rank`'s close has finished, as of now. */
  isClosed(rank: number): boolean;
  /** Resolves once `from`'s transport was given `count` messages for `dest` in all. */
  sent(from: number, dest: number, count: number): Promise<void>;
}

function network(size: number): Net {
  const worlds: World[] = [];
  const queues = new Map<number, Buffer[]>();
  const held = new Set<number>();
  const killed = new Set<number>();
  const counts = new Map<number, number>();
  const closed: (() => void)[] = [];
  const finished = new Set<number>();
  const closing: Promise<void>[] = [];
  const watches: { readonly pair: number; readonly count: number; readonly resolve: () => void }[] = [];
  const pair = (from: number, to: number) => from * size + to;
  let pumping = false;
  const pump = () => {
    pumping = false;
    for (const [p, queue] of queues) {
      if (held.has(p) || queue.length === 0) continue;
      const bytes = queue.shift() as Buffer;
      const from = Math.floor(p / size);
      const to = p % size;
      if (!killed.has(from) && !killed.has(to)) (worlds[to] as World).onFrame(bytes);
      schedule();
      return;
    }
  };
  const schedule = () => {
    if (pumping) return;
    pumping = true;
    setImmediate(pump);
  };
  for (let rank = 0; rank < size; rank++) {
    const env: JobEnv = {
      rank,
      size,
      job: "deaths",
      rendezvous: undefined,
      transport: "ipc",
      ipcDir: undefined,
      host: undefined,
      pool: undefined,
      key: undefined,
    };
    const world = new World(env);
    const dropped = new Set<number>();
    closing.push(new Promise((resolve) => closed.push(resolve)));
    const transport = {
      enqueue(dest: number, message: Buffer): undefined {
        if (killed.has(rank) || dropped.has(dest)) return undefined;
        const p = pair(rank, dest);
        counts.set(p, (counts.get(p) ?? 0) + 1);
        for (const w of watches) if (w.pair === p && w.count <= (counts.get(p) as number)) w.resolve();
        let queue = queues.get(p);
        if (!queue) queues.set(p, (queue = []));
        queue.push(Buffer.from(message));
        schedule();
        return undefined;
      },
      drop(dest: number): void {
        dropped.add(dest);
        queues.set(pair(rank, dest), []);
      },
      flush: () => Promise.resolve(),
      close: () => {
        finished.add(rank);
        closed[rank]?.();
        return Promise.resolve();
      },
    };
    world.attach(transport as unknown as Transport);
    worlds.push(world);
  }
  return {
    worlds,
    kill: (rank) => killed.add(rank),
    tell(rank, except = []) {
      for (const [r, w] of worlds.entries()) if (!killed.has(r) && !except.includes(r)) w.peerDied(rank, WHY);
    },
    hold(from, to, on) {
      if (on) held.add(pair(from, to));
      else {
        held.delete(pair(from, to));
        schedule();
      }
    },
    sentTo: (from, dest) => counts.get(pair(from, dest)) ?? 0,
    sent: (from, dest, count) =>
      new Promise<void>((resolve) => {
        if ((counts.get(pair(from, dest)) ?? 0) >= count) resolve();
        else watches.push({ pair: pair(from, dest), count, resolve });
      }),
    closed: (rank) => closing[rank] as Promise<void>,
    isClosed: (rank) => finished.has(rank),
  };
}

/** `e` is the RankFailedError of `call` for rank `rank` (of the communicator called) dying. */
function diedError(t: ExecutionContext, e: unknown, call: string, rank: number): void {
  t.true(e instanceof RankFailedError, String(e));
  const rf = e as RankFailedError;
  t.is(rf.code, "WP_RANK_FAILED");
  t.is(rf.rank, rank);
  t.true(rf.message.startsWith(`${call}: rank ${rank}`), rf.message);
  t.true(rf.message.includes(WHY), rf.message);
}

async function rejection(p: Promise<unknown>): Promise<unknown> {
  try {
    await p;
  } catch (e) {
    return e;
  }
  throw new Error("resolved; expected a rejection");
}

/**
 * Close ended on every survivor as it should after a death: its close finished, its world did not fail (a
 * death is no failure of messaging), and it knows every dead rank.
 */
function closedAfterDeaths(t: ExecutionContext, net: Net, dead: readonly number[]): void {
  for (const [r, w] of net.worlds.entries()) {
    if (dead.includes(r)) continue;
    t.true(net.isClosed(r), `rank ${r}'s close finished`);
    t.is(w.failure, undefined, `rank ${r}'s world did not fail`);
    for (const d of dead) t.true(w.deadRanks.includes(d), `rank ${r} knows rank ${d} died`);
  }
}

/** Closes every world but the dead ones and waits until each has finished closing. */
async function closeSurvivors(net: Net, dead: readonly number[]): Promise<void> {
  const alive = net.worlds.map((_, r) => r).filter((r) => !dead.includes(r));
  await Promise.all(alive.map((r) => (net.worlds[r] as World).close()));
  await Promise.all(alive.map((r) => net.closed(r)));
}

test("recv: pending from the dead rank and ANY reject; others wait on; later ones by source; ANY works", async (t) => {
  const net = network(3);
  const [w0, w1, w2] = net.worlds as [World, World, World];
  await w1.send(0, 6, "queued before");
  await w1.send(0, 9, "arrived");
  t.is((await w0.recv({ source: 1, tag: 9 })).data, "arrived", "so tag 6 has arrived too (order per pair)");
  const fromOne = w0.recv({ source: 1, tag: 7 });
  const fromAny = w0.recv({ tag: 7 });
  const fromTwo = w0.recv({ source: 2, tag: 7 });
  net.kill(1);
  net.tell(1);
  diedError(t, await rejection(fromOne), "recv", 1);
  diedError(t, await rejection(fromAny), "recv", 1);
  t.is((await w0.recv({ source: 1, tag: 6 })).data, "queued before", "what the dead rank sent before is kept");
  diedError(t, await rejection(w0.recv({ source: 1 })), "recv", 1);
  await w2.send(0, 7, "from two");
  t.deepEqual(await fromTwo, { source: 2, tag: 7, data: "from two" });
  await w2.send(0, 8, "any");
  t.is((await w0.recv({ source: ANY })).data, "any", "later ANY receives work");
  t.deepEqual(w0.deadRanks, [1]);
  await closeSurvivors(net, [1]);
});

test("send and sendrecv to the dead rank reject naming the call, rank and why; pool posts are dropped", async (t) => {
  const net = network(3);
  const [w0] = net.worlds as [World];
  net.kill(2);
  net.tell(2);
  net.tell(2); // idempotent
  diedError(t, await rejection(w0.send(2, 1, "x")), "send", 2);
  diedError(t, await rejection(w0.sendrecv(2, 1, "x", { source: 1 })), "sendrecv", 2);
  const context = w0.allocateContext();
  const before = net.sentTo(0, 2);
  await w0.post(context, 2, 1, "x");
  w0.postEncoded(2, w0.encode(context, 1, "x"));
  t.is(net.sentTo(0, 2), before, "nothing went to the dead rank");
  t.deepEqual(w0.deadRanks, [2]);
  await closeSurvivors(net, [2]);
});

test("a message from the dead rank still on its way when the death is told is dropped", async (t) => {
  const net = network(3);
  const [w0, w1, w2] = net.worlds as [World, World, World];
  net.hold(1, 0, true);
  await w1.send(0, 1, "late");
  net.tell(1);
  net.hold(1, 0, false);
  // Rank 2's message goes after the held one is let go: when it arrives, the late one was seen and dropped.
  await w2.send(0, 1, "after");
  t.is((await w0.recv({ tag: 1 })).data, "after");
  t.is(w0.tryRecv(), undefined);
  t.is(w0.queued, 0);
  // It is not counted either: close, which waits for every message sent to a rank alive, ends.
  await closeSurvivors(net, [1]);
});

test("collectives: pending and later ones reject on every survivor, none hangs; split too", async (t) => {
  const net = network(5);
  const worlds = net.worlds;
  // Rank 3 never enters: every other rank waits in the barrier, directly or not, for it.
  const pending = [0, 1, 2, 4].map((r) => (worlds[r] as World).barrier());
  net.kill(3);
  net.tell(3);
  for (const p of pending) diedError(t, await rejection(p), "barrier", 3);
  const w0 = worlds[0] as World;
  diedError(t, await rejection(w0.barrier()), "barrier", 3);
  diedError(t, await rejection(w0.bcast(1)), "bcast", 3);
  diedError(t, await rejection(w0.allreduce(1, "sum")), "allreduce", 3);
  diedError(t, await rejection(w0.gather(1, 1)), "gather", 3);
  diedError(t, await rejection(w0.split(0)), "split", 3);
  const e = (await rejection(w0.barrier())) as Error;
  t.regex(e.message, /can run no more collectives/);
  await closeSurvivors(net, [3]);
});

test("split communicators: one with the dead rank breaks (its ranks), one without it works", async (t) => {
  const net = network(6);
  // Colors: {0, 2, 4} and {1, 3, 5}; keys reverse the order, so world rank 5 is rank 0 of its communicator.
  const comms = await Promise.all(net.worlds.map((w) => w.split(w.rank % 2, -w.rank)));
  const heard: [number, number, string][] = [];
  for (const [r, c] of comms.entries()) c?.onPeerDeath((rank, why) => heard.push([r, rank, why]));
  // Their ranks: world 5, 3, 1 and world 4, 2, 0.
  const odd = [5, 3, 1].map((r) => comms[r] as World);
  const even = [4, 2, 0].map((r) => comms[r] as World);
  // World rank 3 is rank 1 of the odd communicator. Its rank 0 waits for it in a reduce, its rank 2 in a recv.
  const reduced = (odd[0] as World).reduce(5, "sum", 0);
  const recv = (odd[2] as World).recv({ source: 1 });
  net.kill(3);
  net.tell(3);
  diedError(t, await rejection(reduced), "reduce", 1);
  diedError(t, await rejection(recv), "recv", 1);
  t.regex(((await rejection(recv)) as Error).message, /^recv: rank 1 \(world rank 3\) died/);
  diedError(t, await rejection((odd[0] as World).barrier()), "barrier", 1);
  diedError(t, await rejection((odd[2] as World).send(1, 0, "x")), "send", 1);
  t.deepEqual((odd[0] as World).deadRanks, [1]);
  t.deepEqual((even[0] as World).deadRanks, []);
  // Point-to-point between the survivors of the broken one still works.
  await (odd[2] as World).send(0, 3, "still");
  t.is((await (odd[0] as World).recv({ source: 2 })).data, "still");
  // The other communicator is unaffected.
  t.deepEqual(await Promise.all(even.map((c) => c.allreduce(c.rank, "sum"))), [3, 3, 3]);
  t.deepEqual(
    heard.sort((a, b) => a[0] - b[0]),
    [
      [1, 1, WHY],
      [5, 1, WHY],
    ],
  );
  // A listener registered later hears the deaths already known.
  const late: number[] = [];
  (odd[0] as World).onPeerDeath((rank) => late.push(rank))();
  t.deepEqual(late, [1]);
  const worldHeard: number[] = [];
  (net.worlds[0] as World).onPeerDeath((rank) => worldHeard.push(rank));
  t.deepEqual(worldHeard, [3]);
  await closeSurvivors(net, [3]);
});

test("close among the survivors: the dead rank's message on its way is dropped, a live one's waited for", async (t) => {
  const net = network(4);
  const [w0, w1, w2] = net.worlds as [World, World, World];
  net.hold(2, 0, true);
  net.hold(1, 0, true);
  await w2.send(0, 1, "from a survivor");
  await w1.send(0, 1, "from the dead");
  net.kill(1);
  net.tell(1);
  const done = closeSurvivors(net, [1]);
  let finished = false;
  void net.closed(0).then(() => {
    finished = true;
  });
  // Rank 3 told rank 0 how much it sent and that it has all it waits for (close's two messages to it): rank 0
  // goes on waiting for rank 2's message, held back.
  await net.sent(3, 0, 2);
  t.false(finished, "rank 0 closed before a message to it from a live rank arrived");
  net.hold(2, 0, false);
  net.hold(1, 0, false);
  await done;
  t.is(w0.tryRecv()?.data, "from a survivor");
  t.is(w0.tryRecv(), undefined, "the dead rank's message was dropped");
});

for (const when of ["before close", "during close", "at different moments"] as const) {
  test(`close ends on the survivors when a rank dies ${when}`, async (t) => {
    const size = 6;
    const net = network(size);
    for (const [r, w] of net.worlds.entries()) await w.send((r + 1) % size, 1, r);
    if (when === "before close") {
      net.kill(4);
      net.tell(4);
      await closeSurvivors(net, [4]);
    } else if (when === "during close") {
      // Every rank but 4 is in close's collective, which waits for 4, when the death is told.
      const closing = [0, 1, 2, 3, 5].map((r) => (net.worlds[r] as World).close());
      await Promise.all(closing);
      for (const r of [0, 1, 2, 3, 5]) t.false(net.isClosed(r), `rank ${r}'s close waits for rank 4`);
      net.kill(4);
      net.tell(4);
      await Promise.all([0, 1, 2, 3, 5].map((r) => net.closed(r)));
    } else {
      // Rank 4 takes part in close, then dies; ranks 0 and 1 learn it before they close, the others while they
      // are in close, so some run close's collective over all six ranks and some only among the survivors.
      net.tell(4, [2, 3, 5]);
      const early = [0, 1].map((r) => (net.worlds[r] as World).close());
      await Promise.all([2, 3, 4, 5].map((r) => (net.worlds[r] as World).close()));
      await Promise.all(early);
      net.kill(4);
      net.tell(4);
      await Promise.all([0, 1, 2, 3, 5].map((r) => net.closed(r)));
    }
    closedAfterDeaths(t, net, [4]);
  });
}

// Close's collective over the whole world, on 4 ranks: an allreduce (reduce to 0: 1->0, 3->2, 2->0; bcast from 0:
// 0->2, 0->1, 2->3), then a dissemination barrier (r -> r+1, then r -> r+2). Holding one pair's messages back
// stops the ranks that wait for them where the test wants.

test("close: a death in the final barrier, after some ranks finished close, ends it on the others", async (t) => {
  const net = network(4);
  // Rank 0 never gets rank 3's first barrier message: ranks 1 and 3 finish the barrier, 0 and 2 do not.
  net.hold(3, 0, true);
  const closing = net.worlds.map((w) => w.close());
  await Promise.all([1, 3].map((r) => net.closed(r)));
  await Promise.all(closing);
  for (const r of [0, 2]) t.false(net.isClosed(r), `rank ${r} is still in the barrier`);
  net.kill(3);
  net.tell(3);
  await Promise.all([0, 2].map((r) => net.closed(r)));
  closedAfterDeaths(t, net, [3]);
});

test("close: a death while one rank is still in the allreduce and the others in the barrier ends it", async (t) => {
  const net = network(4);
  // Rank 3 never gets the allreduce's result from rank 2; ranks 0 and 1 go on into the barrier, which waits.
  net.hold(2, 3, true);
  await Promise.all(net.worlds.map((w) => w.close()));
  // Rank 1 sent its second barrier message (to rank 3): it is in the barrier.
  await net.sent(1, 3, 1);
  for (const r of [0, 1, 3]) t.false(net.isClosed(r), `rank ${r}'s close waits`);
  net.kill(2);
  net.tell(2);
  await Promise.all([0, 1, 3].map((r) => net.closed(r)));
  closedAfterDeaths(t, net, [2]);
});

test("a second death while the survivors close ends close too", async (t) => {
  const net = network(5);
  net.kill(1);
  net.tell(1, [2]);
  await Promise.all([0, 2, 3, 4].map((r) => (net.worlds[r] as World).close()));
  net.tell(1);
  net.kill(3);
  net.tell(3);
  await Promise.all([0, 2, 4].map((r) => net.closed(r)));
  closedAfterDeaths(t, net, [1, 3]);
});

test("Transport#drop: what waits for the dead peer is released, and nothing more goes to it", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "wp-deaths-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const transport = await RealTransport.bind(
    `ipc://${dir}/r0`,
    undefined,
    () => {},
    (e) => t.fail(e.message),
  );
  // Rank 1's inbox was never bound: nothing sent to it is ever taken.
  transport.setPeers([transport.endpoint, `ipc://${dir}/r1`]);
  const message = Buffer.alloc(64 * 1024);
  let backPressure: Promise<void> | undefined;
  for (let i = 0; i < 200 && !backPressure; i++) backPressure = transport.enqueue(1, message);
  t.truthy(backPressure, "9 MiB queued at once makes the sender wait");
  transport.drop(1);
  transport.drop(1);
  await backPressure;
  t.is(transport.enqueue(1, message), undefined);
  await transport.flush();
  await transport.close();
});

test("a real job: the survivors of a SIGKILLed rank see it fail their calls, and close", async (t) => {
  const r = await run(["-n", "4", fixture("deaths-ranks.ts")]);
  t.is(r.code, 0, r.stderr);
  const out = linesOf(r.stdout);
  t.true(out.includes("[1] recv: RankFailedError rank 2"), r.stdout);
  for (const survivor of [0, 1, 3]) {
    t.true(out.includes(`[${survivor}] barrier: RankFailedError rank 2`), r.stdout);
    t.true(out.includes(`[${survivor}] closed`), r.stdout);
  }
  t.true(out.includes("[0] send: RankFailedError rank 2"), r.stdout);
  t.true(out.includes("[3] got from 0: after"), r.stdout);
  t.regex(r.stderr, /rank 2 died \(killed by SIGKILL\); the job went on without it/);
});
