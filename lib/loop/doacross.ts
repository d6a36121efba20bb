/**
 * DOACROSS loops as a pipeline over the ranks: `world.doacross(m, n, body)` (seed 001 §4.2).
 *
 * The loop nest is an outer loop of `m` iterations (rows) around a distributed loop of `n` iterations
 * (columns) whose iteration i needs values of iterations i-1..i-d of the same row (a dependence of distance up
 * to d): a wavefront. Columns are split into contiguous blocks, one per rank; the rows are strip-mined into
 * blocks of `b` rows. Rank p runs `body` on a block of rows of its columns once rank p-1 has sent the values
 * its first columns need for those rows (`left`, one entry per row), and sends rank p+1 what `body` returned
 * (one entry per row: the values of its last d columns). Bigger blocks send fewer messages but fill and drain
 * the pipeline more slowly; the block size is chosen from measurements (grain.ts `doacrossBlock`):
 * - `t_iteration`: this rank's time for one row of its columns, measured on its first block (a single row)
 *   and re-measured on every block after it (filtered as seed §6.1 does);
 * - `t_fixed` and `t_incr`: at the start each rank times round trips of empty and of 64 KiB messages to a
 *   neighbour (seed: "shift empty messages through the processors"), and the bytes a row's entry takes are
 *   measured on its first block.
 * Each rank picks its own block size again before every block; a rank takes whatever rows its neighbour has
 * sent, so neighbours need not agree on it.
 */
import { pack } from "../comm/codec.ts";
import type { Communicator } from "../comm/world.ts";
import { deferred } from "../deferred.ts";
import { AbortError, describe, InvalidArgumentError } from "../errors.ts";
import { doacrossBlock, TimeFilter } from "./grain.ts";

/**
 * Computes rows `rows[0]` up to `rows[1]` (exclusive) of the columns `cols[0]` up to `cols[1]` (this rank's).
 * `left[k]` is what the previous rank's body returned for row rows[0] + k (undefined on the first rank).
 * Returns one entry per row, what the next rank needs (the last columns' values), or a promise of them.
 */
export type DoacrossBody<B> = (
  rows: readonly [number, number],
  cols: readonly [number, number],
  left: readonly B[] | undefined,
) => B[] | Promise<B[]>;

export interface DoacrossOptions {
  /** Rows per block, fixed, for comparisons; a positive integer. @default chosen at run time on each rank */
  readonly blockSize?: number;
  /** Aborting makes the loop reject with AbortError on this rank (the others then wait for it: abort them too). */
  readonly signal?: AbortSignal;
}

/** This rank's part of a DOACROSS loop. */
export interface DoacrossResult {
  /** This rank's columns. */
  readonly cols: readonly [number, number];
  /** Blocks this rank ran, and the block size it used last (0 if it ran none). */
  readonly blocks: number;
  readonly blockSize: number;
  /** Time inside `body`, and waiting for the previous rank, ms. */
  readonly busyMs: number;
  readonly waitMs: number;
  /** The measured costs the block size came from, ms. */
  readonly iterationMs: number;
  readonly fixedMs: number;
  readonly perByteMs: number;
}

const TAG_PING = 1;
const TAG_PONG = 2;
const TAG_ROWS = 3;
/** To the previous rank: this rank is done timing round trips to it, so it may leave the loop. */
const TAG_MEASURED = 4;
const PINGS = 5;
const BIG_PINGS = 3;
const BIG_BYTES = 65_536;

interface Inbox {
  /** Entries received from the previous rank, by row; `have` rows from 0 are in. */
  readonly entries: unknown[];
  have: number;
  waiter: (() => void) | undefined;
  pongs: (() => void)[];
  /** The next rank is done pinging this one. */
  measured: boolean;
}

interface Channel {
  readonly context: number;
  /** The loops this rank is in or will be in, by sequence number. */
  readonly inboxes: Map<number, Inbox>;
  next: number;
}

const channels = new WeakMap<Communicator, Channel>();

function inboxOf(ch: Channel, seq: number): Inbox {
  let box = ch.inboxes.get(seq);
  if (!box) {
    box = { entries: [], have: 0, waiter: undefined, pongs: [], measured: false };
    ch.inboxes.set(seq, box);
  }
  return box;
}

/** The world's private context for pipelines, made on its first DOACROSS loop (collective, like a pool). */
function channelOf(world: Communicator): Channel {
  let ch = channels.get(world);
  if (ch) return ch;
  const made: Channel = { context: world.allocateContext(), inboxes: new Map(), next: 0 };
  world.listen(made.context, (source, tag, data) => {
    const m = data as { s: number; r?: number; e?: unknown[]; p?: unknown };
    if (tag === TAG_PING) {
      world.postEncoded(source, world.encode(made.context, TAG_PONG, { s: m.s }));
      return;
    }
    const box = inboxOf(made, m.s);
    if (tag === TAG_PONG) box.pongs.shift()?.();
    else if (tag === TAG_ROWS || tag === TAG_MEASURED) {
      if (tag === TAG_MEASURED) box.measured = true;
      else {
        const from = m.r as number;
        const e = m.e as unknown[];
        for (let k = 0; k < e.length; k++) box.entries[from + k] = e[k];
        while (box.entries.length > box.have && box.entries[box.have] !== undefined) box.have++;
      }
      const w = box.waiter;
      box.waiter = undefined;
      w?.();
    }
  });
  channels.set(world, made);
  ch = made;
  return ch;
}

/** The body of `world.doacross` (lib/world.ts). */
export async function doacross<B>(
  world: Communicator,
  m: number,
  n: number,
  body: DoacrossBody<B>,
  options?: DoacrossOptions,
): Promise<DoacrossResult> {
  if (!Number.isSafeInteger(m) || m < 0) {
    throw new InvalidArgumentError(`doacross: \`m\` (rows) must be a non-negative integer; got ${describe(m)}`);
  }
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new InvalidArgumentError(`doacross: \`n\` (columns) must be a non-negative integer; got ${describe(n)}`);
  }
  if (typeof body !== "function") {
    throw new InvalidArgumentError(`doacross: \`body\` must be a function; got ${describe(body)}`);
  }
  const fixed = options?.blockSize;
  if (fixed !== undefined && (!Number.isSafeInteger(fixed) || fixed <= 0)) {
    throw new InvalidArgumentError(`doacross: option \`blockSize\` must be a positive integer; got ${describe(fixed)}`);
  }
  world.checkOpen("doacross");
  const ch = channelOf(world);
  const seq = ch.next++;
  const box = inboxOf(ch, seq);
  const signal = options?.signal;
  const P = Math.max(1, Math.min(world.size, n));
  const p = world.rank;
  const c0 = p < P ? Math.floor((p * n) / P) : n;
  const c1 = p < P ? Math.floor(((p + 1) * n) / P) : n;
  const send = (dest: number, tag: number, body: object) =>
    world.postEncoded(dest, world.encode(ch.context, tag, body));
  const aborted = () => new AbortError(`doacross aborted on rank ${p}`, { cause: signal?.reason });
  /** Waits for a condition the listener makes true, or for an abort. */
  const until = async (ready: () => boolean, park: (wake: () => void) => void): Promise<void> => {
    while (!ready()) {
      if (signal?.aborted) throw aborted();
      const d = deferred();
      const onAbort = () => d.resolve();
      signal?.addEventListener("abort", onAbort, { once: true });
      park(d.resolve);
      await d.promise;
      signal?.removeEventListener("abort", onAbort);
    }
  };

  // Message costs: round trips to a neighbour, empty and 64 KiB (the fastest of a few; half is one way).
  let fixedMs = 0;
  let perByteMs = 0;
  if (P > 1 && p < P && fixed === undefined) {
    const peer = p > 0 ? p - 1 : 1;
    const trip = async (payload: Uint8Array | undefined): Promise<number> => {
      let got = false;
      const t0 = performance.now();
      send(peer, TAG_PING, payload ? { s: seq, p: payload } : { s: seq });
      await until(
        () => got,
        (wake) =>
          box.pongs.push(() => {
            got = true;
            wake();
          }),
      );
      return (performance.now() - t0) / 2;
    };
    fixedMs = Number.POSITIVE_INFINITY;
    for (let k = 0; k < PINGS; k++) fixedMs = Math.min(fixedMs, await trip(undefined));
    const big = new Uint8Array(BIG_BYTES);
    let bigMs = Number.POSITIVE_INFINITY;
    for (let k = 0; k < BIG_PINGS; k++) bigMs = Math.min(bigMs, await trip(big));
    perByteMs = Math.max(0, bigMs - fixedMs) / BIG_BYTES;
  }
  // The previous rank answers this one's pings from its listener, which its world's close() shuts: it must not
  // leave the loop (and close) before they are done, so this rank says when they are, or that there were none.
  if (p > 0 && p < P) send(p - 1, TAG_MEASURED, { s: seq });

  const filter = new TimeFilter();
  let bytesPerRow = 0;
  let busyMs = 0;
  let waitMs = 0;
  let blocks = 0;
  let b = 0;
  try {
    if (p < P) {
      for (let r = 0; r < m;) {
        b = fixed ?? (blocks === 0 ? 1 : blockSize(P, m - r, filter.ms, fixedMs, perByteMs * bytesPerRow));
        const r1 = Math.min(m, r + b);
        let left: B[] | undefined;
        if (p > 0) {
          const w0 = performance.now();
          await until(
            () => box.have >= r1,
            (wake) => (box.waiter = wake),
          );
          waitMs += performance.now() - w0;
          left = box.entries.slice(r, r1) as B[];
        }
        const t0 = performance.now();
        const out = await body([r, r1], [c0, c1], left);
        const dt = performance.now() - t0;
        busyMs += dt;
        filter.add(dt / (r1 - r));
        if (!Array.isArray(out) || out.length !== r1 - r) {
          throw new InvalidArgumentError(
            `doacross: body must return one entry per row (${r1 - r} for rows ${r}..${r1 - 1}); got ${describe(out)}`,
          );
        }
        if (out.some((e) => e === undefined)) {
          throw new InvalidArgumentError(`doacross: body returned an undefined entry for rows ${r}..${r1 - 1}`);
        }
        if (p < P - 1) {
          const msg = { s: seq, r, e: out };
          if (blocks === 0) bytesPerRow = pack(out).length / (r1 - r);
          send(p + 1, TAG_ROWS, msg);
        }
        blocks++;
        r = r1;
      }
      if (p < P - 1) {
        await until(
          () => box.measured,
          (wake) => (box.waiter = wake),
        );
      }
    }
  } finally {
    ch.inboxes.delete(seq);
  }
  return { cols: [c0, c1], blocks, blockSize: b, busyMs, waitMs, iterationMs: filter.ms, fixedMs, perByteMs };
}

/** The block size for the `rows` rows left (seed §4.2.4, grain.ts), from this rank's measured costs. */
function blockSize(P: number, rows: number, iterationMs: number, fixedMs: number, rowBytesMs: number): number {
  return doacrossBlock({ ranks: P, m: rows, iterationMs, fixedMs, perIterationMs: rowBytesMs });
}
