import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import * as zmq from "zeromq";
import { decodeFrame, decodeSplit, encodeMessage } from "../../lib/comm/codec.ts";
import { makeJobKey, serverOptions } from "../../lib/comm/job-key.ts";
import { firstPeers } from "../../lib/comm/collectives.ts";
import { Transport } from "../../lib/comm/transport.ts";
import { uninterrupted, uninterruptedAsync } from "../../lib/comm/zmq.ts";

// Under CURVE a body larger than 1 MiB travels in pieces, one ZeroMQ message each (lib/comm/transport.ts), so that
// CURVE's copies are a piece's, not the whole message's; the receiver puts them back together.

interface Got {
  readonly source: number;
  readonly tag: number;
  readonly data: unknown;
}

/**
 * A transport bound in `dir` as rank `rank`, collecting what it receives; `until(n)` waits for n messages, `failed`
 * for its receive loop's error.
 */
async function endpoint(dir: string, rank: number, key: ReturnType<typeof makeJobKey> | undefined) {
  const got: Got[] = [];
  const errors: Error[] = [];
  let fail: (e: Error) => void = () => {};
  const failed = new Promise<Error>((resolve) => (fail = resolve));
  let waiting: { n: number; resolve: () => void } | undefined;
  const take = (source: number, _context: number, tag: number, data: unknown) => {
    got.push({ source, tag, data });
    if (waiting && got.length >= waiting.n) waiting.resolve();
  };
  const transport = await Transport.bind(
    `ipc://${dir}/r${rank}`,
    key,
    (frame, body) => (body ? decodeSplit(frame, body, take) : decodeFrame(frame, take)),
    (e) => {
      errors.push(e);
      fail(e);
    },
  );
  const until = (n: number) =>
    got.length >= n ? Promise.resolve() : new Promise<void>((resolve) => (waiting = { n, resolve }));
  return { transport, got, errors, until, failed };
}

/** A bare ZeroMQ inbox of rank 1 in `dir` (no Transport around it), closed after the test. */
async function bareInbox(t: ExecutionContext, dir: string, key: ReturnType<typeof makeJobKey>): Promise<zmq.Pull> {
  const inbox = new zmq.Pull({ linger: 0, ...serverOptions(key) });
  t.teardown(() => inbox.close());
  await inbox.bind(`ipc://${dir}/r1`);
  return inbox;
}

function folder(): string {
  return mkdtempSync(join(tmpdir(), "wp-transport-"));
}

test("large bodies in pieces, from two senders at once, arrive whole and in each sender's order", async (t) => {
  const dir = folder();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key = makeJobKey();
  const receiver = await endpoint(dir, 1, key);
  const senders = await Promise.all([0, 2].map((r) => endpoint(dir, r, key)));
  const peers = [0, 1, 2].map((r) => `ipc://${dir}/r${r}`);
  for (const s of senders) s.transport.setPeers(peers);
  // 5.5 MiB (six pieces, the last short), 3 MiB (three, exactly), a small message before, between and after.
  const big = (rank: number, mib: number) => new Uint8Array(mib * 2 ** 20).map((_, i) => (i * 7 + rank) & 255);
  const plan: [number, number, unknown][] = [];
  for (const [i, rank] of [0, 2].entries()) {
    plan.push([rank, 1, `before ${rank}`], [rank, 2, big(rank, i === 0 ? 5.5 : 3)], [rank, 3, { between: rank }]);
    plan.push([rank, 4, new Float64Array(2 ** 18).fill(rank)], [rank, 5, `after ${rank}`]);
  }
  for (const [rank, tag, data] of plan) {
    void senders[rank === 0 ? 0 : 1]?.transport.enqueue(1, encodeMessage(rank, 0, tag, data, "send"));
  }
  await receiver.until(plan.length);
  for (const rank of [0, 2]) {
    const mine = receiver.got.filter((g) => g.source === rank);
    t.deepEqual(
      mine.map((g) => g.tag),
      [1, 2, 3, 4, 5],
    );
    const sent = plan.filter(([r]) => r === rank).map(([, , data]) => data);
    // Byte arrays compared as bytes: ava's deepEqual takes minutes over megabytes.
    const bytes = (d: unknown) => (ArrayBuffer.isView(d) ? Buffer.from(d.buffer, d.byteOffset, d.byteLength) : d);
    mine.forEach((g, i) => {
      const [a, b] = [bytes(g.data), bytes(sent[i])];
      if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) t.true(a.equals(b), `rank ${rank}'s message ${i + 1}`);
      else t.deepEqual(a, b);
    });
    t.is((mine[3]?.data as Float64Array).constructor, Float64Array);
  }
  t.deepEqual(receiver.errors, []);
  await Promise.all([receiver, ...senders].map((e) => e.transport.close()));
});

test("under CURVE a body a little over 1 MiB goes whole (a 1 MiB typed array); one more over, in pieces", async (t) => {
  const dir = folder();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key = makeJobKey();
  // A bare inbox, to see the ZeroMQ messages themselves.
  const inbox = await bareInbox(t, dir, key);
  const sender = await endpoint(dir, 0, key);
  sender.transport.setPeers([`ipc://${dir}/r0`, `ipc://${dir}/r1`]);
  const array = new Float64Array(2 ** 17).fill(1.5); // 1 MiB
  void sender.transport.enqueue(1, encodeMessage(0, 0, 1, [array], "send"));
  const [header, body] = await inbox.receive();
  t.is(header?.length, 17);
  t.true((body?.length ?? 0) > 2 ** 20 && (body?.length ?? 0) < 2 ** 20 + 64);
  // 1 MiB and 200 KiB: a piece of 1 MiB, then the sender's rank and the rest.
  void sender.transport.enqueue(1, encodeMessage(0, 0, 2, new Uint8Array(2 ** 20 + 200 * 1024), "send"));
  const first = await inbox.receive();
  const second = await inbox.receive();
  t.deepEqual(
    [first.map((p) => p.length), second.map((p) => p.length)],
    [
      [17, 2 ** 20],
      [4, 200 * 1024],
    ],
  );
  await sender.transport.close();
});

test("a piece from a peer that died is dropped with it, not taken for a corrupt message", async (t) => {
  const dir = folder();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const receiver = await endpoint(dir, 1, undefined);
  const push = new zmq.Push({ linger: 0 });
  push.connect(`ipc://${dir}/r1`);
  t.teardown(() => push.close());
  // Rank 0 begins a 3 MiB message (its header and first piece) and dies before its next pieces are taken.
  const message = encodeMessage(0, 0, 9, new Uint8Array(3 * 2 ** 20), "send");
  await push.send([message.subarray(0, 17), message.subarray(17, 17 + 2 ** 20)]);
  const source = message.subarray(4, 8);
  const small = encodeMessage(0, 0, 1, "small", "send");
  // The receiver has taken the first piece once it has the small message behind it.
  await push.send(small);
  await receiver.until(1);
  receiver.transport.drop(0);
  await push.send([source, message.subarray(17 + 2 ** 20, 17 + 2 * 2 ** 20)]);
  await push.send(small);
  await receiver.until(2);
  t.deepEqual(receiver.errors, []);
  t.deepEqual(
    receiver.got.map((g) => g.data),
    ["small", "small"],
  );
  await receiver.transport.close();
});

test("a piece that belongs to no message begun fails the receive loop, saying so", async (t) => {
  const dir = folder();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const receiver = await endpoint(dir, 1, undefined);
  const push = new zmq.Push({ linger: 0 });
  push.connect(`ipc://${dir}/r1`);
  t.teardown(() => push.close());
  await push.send([Buffer.from([3, 0, 0, 0]), Buffer.alloc(100)]);
  t.is((await receiver.failed).message, "corrupt message: a piece of 100 bytes from rank 3 fits no message begun");
  await receiver.transport.close();
});

// Connections that nearly every job uses are opened as it starts (lib/comm/collectives.ts `firstPeers`), so their
// CURVE handshakes are not on the path of the first messages: the peer's inbox sees a finished handshake before
// anything has been sent to it.
test("connectAhead completes the CURVE handshake with a peer before any message is sent to it", async (t) => {
  const dir = folder();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const key = makeJobKey();
  const inbox = await bareInbox(t, dir, key);
  const handshake = (async () => {
    for await (const event of inbox.events) if (event.type === "handshake") return event.type;
    return "closed";
  })();
  const sender = await endpoint(dir, 0, key);
  t.teardown(() => sender.transport.close());
  sender.transport.setPeers([`ipc://${dir}/r0`, `ipc://${dir}/r1`]);
  sender.transport.connectAhead([1]);
  t.is(await handshake, "handshake");
  t.false(sender.transport.held, "nothing was sent");
});

test("firstPeers: rank 0 reaches every rank, each other rank rank 0 and its barrier partners, none itself", (t) => {
  t.deepEqual([...firstPeers(0, 1)], []);
  t.deepEqual([...firstPeers(1, 2)].sort(), [0]);
  t.deepEqual([...firstPeers(0, 5)].sort(), [1, 2, 3, 4]);
  // Rank 5 of 16: rank 0, and 5 + 1, 2, 4, 8.
  t.deepEqual(
    [...firstPeers(5, 16)].sort((a, b) => a - b),
    [0, 6, 7, 9, 13],
  );
  // Wrapping round: rank 15 of 16 sends to 0, 1, 3 and 7; rank 0 is counted once.
  t.deepEqual(
    [...firstPeers(15, 16)].sort((a, b) => a - b),
    [0, 1, 3, 7],
  );
  for (const size of [2, 3, 17, 64, 1000]) {
    for (let rank = 0; rank < size; rank++) {
      const peers = firstPeers(rank, size);
      t.false(peers.has(rank));
      if (rank > 0) t.true(peers.size <= 1 + Math.ceil(Math.log2(size)), `rank ${rank} of ${size}`);
    }
  }
});

// A signal landing in a ZeroMQ call's poll (SIGPROF under --node-arg=--cpu-prof) fails it with EINTR: the join
// makes such calls again, and lets every other error through at once.
function interruptedTimes(n: number, result: string): { call: () => string; calls: () => number } {
  let calls = 0;
  return {
    call: () => {
      if (++calls <= n) throw Object.assign(new Error("Interrupted system call"), { code: "EINTR", errno: 4 });
      return result;
    },
    calls: () => calls,
  };
}

test("an interrupted ZeroMQ call is made again; another error is not", async (t) => {
  const sync = interruptedTimes(3, "connected");
  t.is(uninterrupted(sync.call), "connected");
  t.is(sync.calls(), 4);
  const async = interruptedTimes(2, "bound");
  t.is(await uninterruptedAsync(async () => async.call()), "bound");
  t.is(async.calls(), 3);
  let other = 0;
  t.throws(
    () =>
      uninterrupted(() => {
        other++;
        throw Object.assign(new Error("Address already in use"), { code: "EADDRINUSE" });
      }),
    { message: "Address already in use" },
  );
  t.is(other, 1);
  // A signal storm does not loop for ever: the EINTR stands after a bounded number of attempts.
  const storm = interruptedTimes(Number.POSITIVE_INFINITY, "never");
  t.throws(() => uninterrupted(storm.call), { message: "Interrupted system call" });
  t.true(storm.calls() > 1 && storm.calls() <= 1000);
});
