/**
 * The collective algorithms (lib/comm/collectives.ts, lib/comm/split.ts) in this process, on simulated ranks:
 * every size from 1 to 17 and around powers of two up to 65, each message encoded and decoded as on the wire,
 * and delivered in a seeded random order that keeps only what the transport promises (messages between one
 * pair of ranks arrive in the order sent). Results are checked against a plain fold, with a non-commutative op
 * (string concatenation) so any step that combines out of rank order shows; afterwards no message may be
 * left unreceived. The real multi-process runs are in collectives-ranks.slow.test.ts and split.test.ts.
 */
import test from "ava";
import { decodeFrame, encodeMessage } from "../../lib/comm/codec.ts";
import * as coll from "../../lib/comm/collectives.ts";
import { Matcher } from "../../lib/comm/matcher.ts";
import { SUB_CONTEXTS, WORLD_CONTEXTS } from "../../lib/comm/contexts.ts";
import { planSplit } from "../../lib/comm/split.ts";
import { seededRandom } from "../../lib/pool/partner/random.ts";

const SIZES = [...Array.from({ length: 17 }, (_, i) => i + 1), 31, 32, 33, 63, 64, 65];

interface Net {
  readonly channels: coll.CollectiveChannel[];
  readonly matchers: Matcher[];
  /** Messages sent so far. */
  sent(): number;
}

/**
 * `size` simulated ranks. Each send is encoded at once (so an EncodeError is the sender's) and queued on its
 * (source, dest) pair; a pump delivers one message at a time from a randomly chosen pair, a macrotask apart,
 * so every rank runs as far as it can between deliveries.
 */
function network(size: number, seed: number): Net {
  const next = seededRandom(seed);
  const matchers = Array.from({ length: size }, () => new Matcher());
  const pairs = new Map<number, Buffer[]>();
  /** The pairs with messages queued, in no order. */
  const ready: number[] = [];
  let count = 0;
  let pumping = false;
  const pump = () => {
    if (ready.length === 0) {
      pumping = false;
      return;
    }
    const i = Math.floor(next() * ready.length);
    const pair = ready[i] as number;
    const queue = pairs.get(pair) as Buffer[];
    const bytes = queue.shift() as Buffer;
    if (queue.length === 0) {
      ready[i] = ready[ready.length - 1] as number;
      ready.pop();
    }
    const dest = pair % size;
    decodeFrame(bytes, (source, _context, tag, data) => (matchers[dest] as Matcher).deliver(source, tag, data));
    setImmediate(pump);
  };
  const channels = matchers.map((m, rank): coll.CollectiveChannel => {
    let seq = 0;
    return {
      rank,
      size,
      nextSequence: () => seq++,
      send: (dest, tag, data, call, name) => {
        try {
          const bytes = encodeMessage(rank, 1, tag, data, call, name ?? "value");
          const pair = rank * size + dest;
          let queue = pairs.get(pair);
          if (!queue) pairs.set(pair, (queue = []));
          if (queue.length === 0) ready.push(pair);
          queue.push(bytes);
          count++;
          if (!pumping) {
            pumping = true;
            setImmediate(pump);
          }
          return Promise.resolve();
        } catch (e) {
          return Promise.reject(e);
        }
      },
      recv: async (source, tag, signal, call) => (await m.receive(source, tag, signal, call)).data,
    };
  });
  return { channels, matchers, sent: () => count };
}

const ranks = (size: number) => Array.from({ length: size }, (_, r) => r);
const concat = (a: string, b: string) => a + b;

for (const size of SIZES) {
  test(`scan and exscan: rank order prefixes, non-commutative op, ${size} ranks`, async (t) => {
    const net = network(size, size);
    const [inclusive, exclusive, sums] = await Promise.all([
      Promise.all(net.channels.map((ch) => coll.scan(ch, `<${ch.rank}>`, concat))),
      Promise.all(net.channels.map((ch) => coll.exscan(ch, `<${ch.rank}>`, concat))),
      Promise.all(net.channels.map((ch) => coll.scan(ch, new Float64Array([ch.rank, 1]), "sum"))),
    ]);
    for (const r of ranks(size)) {
      const upTo = (n: number) =>
        ranks(n)
          .map((i) => `<${i}>`)
          .join("");
      t.is(inclusive[r], upTo(r + 1), `scan on rank ${r}`);
      t.is(exclusive[r], r === 0 ? undefined : upTo(r), `exscan on rank ${r}`);
      t.deepEqual(sums[r], new Float64Array([(r * (r + 1)) / 2, r + 1]));
    }
    // Recursive doubling: at most ceil(log2 p) messages per rank per scan (three scans here).
    t.true(net.sent() <= 3 * size * Math.ceil(Math.log2(Math.max(size, 2))), `${net.sent()} messages`);
    for (const m of net.matchers) t.is(m.size, 0, "a message was left unreceived");
  });

  test(`alltoall: values[i] reaches rank i, indexed by source, ${size} ranks`, async (t) => {
    const net = network(size, 1000 + size);
    const got = await Promise.all(
      net.channels.map((ch) =>
        coll.alltoall(
          ch,
          ranks(size).map((to) => ({ from: ch.rank, to })),
        ),
      ),
    );
    for (const r of ranks(size))
      t.deepEqual(
        got[r],
        ranks(size).map((from) => ({ from, to: r })),
      );
    t.is(net.sent(), size * (size - 1));
    for (const m of net.matchers) t.is(m.size, 0);
  });

  test(`reduceScatter: rank i gets values[i] of every rank in rank order, ${size} ranks`, async (t) => {
    const net = network(size, 2000 + size);
    const [strings, blocks] = await Promise.all([
      Promise.all(
        net.channels.map((ch) =>
          coll.reduceScatter(
            ch,
            ranks(size).map((i) => `${ch.rank}:${i};`),
            concat,
          ),
        ),
      ),
      // Blocks: each value an array, combined element-wise by a built-in op.
      Promise.all(
        net.channels.map((ch) =>
          coll.reduceScatter(
            ch,
            ranks(size).map((i) => [ch.rank, i, 1]),
            "sum",
          ),
        ),
      ),
    ]);
    const total = (size * (size - 1)) / 2;
    for (const i of ranks(size)) {
      t.is(
        strings[i],
        ranks(size)
          .map((r) => `${r}:${i};`)
          .join(""),
        `rank ${i}`,
      );
      t.deepEqual(blocks[i], [total, i * size, size]);
    }
    // Recursive halving: O(log p) messages per rank, not O(p).
    const perRank = net.sent() / size / 2;
    t.true(perRank <= Math.ceil(Math.log2(Math.max(size, 2))) + 1, `${perRank} messages per rank`);
    for (const m of net.matchers) t.is(m.size, 0);
  });
}

test("the new collectives on 1024 simulated ranks (the largest job they are written for)", async (t) => {
  const size = 1024;
  const net = network(size, 7);
  const [scans, exscans, scattered] = await Promise.all([
    Promise.all(net.channels.map((ch) => coll.scan(ch, ch.rank, "sum"))),
    Promise.all(net.channels.map((ch) => coll.exscan(ch, 1, "sum"))),
    Promise.all(net.channels.map((ch) => coll.reduceScatter(ch, ranks(size), "max"))),
  ]);
  for (const r of ranks(size)) {
    t.is(scans[r], (r * (r + 1)) / 2);
    t.is(exscans[r], r === 0 ? undefined : r);
    t.is(scattered[r], r);
  }
  // 10 rounds each for scan and exscan, 10 for reduceScatter.
  t.is(net.sent(), 3 * 10 * size);
});

test("bad values are refused before anything is sent, naming the call", async (t) => {
  const net = network(3, 1);
  const ch = net.channels[0] as coll.CollectiveChannel;
  await t.throwsAsync(coll.alltoall(ch, [1, 2]), {
    message: "alltoall: values must be an array of 3 items (one per rank); got [1,2]",
  });
  await t.throwsAsync(coll.reduceScatter(ch, "abc" as never, "sum"), {
    message: 'reduceScatter: values must be an array of 3 items (one per rank); got "abc"',
  });
  await t.throwsAsync(coll.reduceScatter(ch, [1, 2, 3], "avg" as never), { message: /reduceScatter: op must be/ });
  await t.throwsAsync(coll.scan(ch, 1, "mean" as never), { message: /scan: op must be/ });
  await t.throwsAsync(coll.exscan(ch, 1, 5 as never), { message: /exscan: op must be/ });
  t.is(net.sent(), 0);
});

test("an unsendable part of alltoall's values is named by its index", async (t) => {
  const net = network(3, 1);
  const ch = net.channels[0] as coll.CollectiveChannel;
  await t.throwsAsync(coll.alltoall(ch, [1, 2, { f: () => 3 }]), {
    message: "alltoall: values[2].f is a function, which cannot be sent",
  });
});

test("split plans: groups by color ordered by key then rank, undefined joins none, blocks agreed and disjoint", async (t) => {
  const size = 9;
  const net = network(size, 3);
  // Colors by r mod 3 (rank 4 and 7 join no group), keys reversing the order; each process starts from a
  // different first free context, as after different earlier splits.
  const color = (r: number) => (r === 4 || r === 7 ? undefined : (r % 3) * 10);
  const free = (r: number) => WORLD_CONTEXTS + r * SUB_CONTEXTS;
  const plans = await Promise.all(net.channels.map((ch) => planSplit(ch, color(ch.rank), -ch.rank, free(ch.rank))));
  const after = WORLD_CONTEXTS + 8 * SUB_CONTEXTS + 3 * SUB_CONTEXTS;
  for (const r of ranks(size)) {
    const plan = plans[r];
    t.is(plan?.nextBlock, after, "every process continues past every block handed out");
    if (color(r) === undefined) {
      t.is(plan?.members, undefined);
      continue;
    }
    const expected = [8, 5, 2, 6, 3, 0, 1].filter((m) => color(m) === color(r)).sort((a, b) => b - a);
    t.deepEqual(plan?.members, expected, `rank ${r}`);
    // Bases: one block per color, in color order, from the largest first free context.
    t.is(plan?.base, WORLD_CONTEXTS + 8 * SUB_CONTEXTS + ((color(r) as number) / 10) * SUB_CONTEXTS);
  }
  // Equal keys keep the parent's order.
  const net2 = network(4, 4);
  const same = await Promise.all(net2.channels.map((ch) => planSplit(ch, 0, 5, WORLD_CONTEXTS)));
  for (const p of same) t.deepEqual(p.members, [0, 1, 2, 3]);
});
