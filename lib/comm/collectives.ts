import { describe, InvalidArgumentError } from "../errors.ts";
import type { ValueName } from "./codec.ts";
import { type ReduceFn, type ReduceOp, resolveOp } from "./ops.ts";
import { type Step, where } from "./unsendable.ts";

/**
 * Collective algorithms over a private message context, so no point-to-point traffic of any tag can be
 * mistaken for theirs. Every rank calls collectives in the same order (as in MPI); each call takes the next
 * sequence number, which is the tag of all its messages, so successive collectives never mix either.
 *
 * bcast: binomial tree from the root. reduce: binomial tree toward rank 0, combining in rank order, then one
 * hop to the root if it is not 0. barrier: dissemination (ceil(log2 p) rounds). gather/scatter: direct to or
 * from the root. allreduce and allgather: reduce or gather to 0, then bcast. alltoall: pairwise exchange.
 * scan/exscan: recursive doubling (ceil(log2 p) rounds). reduceScatter: recursive halving (log2 p rounds, about
 * p values sent per rank in all), after folding the ranks beyond a power of two into their neighbours.
 * Every combining step puts the value of the lower ranks on the left, so a custom op need not be commutative.
 *
 * The algorithms are written for up to a few thousand ranks: no rank sends or receives more than O(log p)
 * messages in a collective, except where the result itself is O(p) (gather, scatter, alltoall).
 */
export interface CollectiveChannel {
  readonly rank: number;
  readonly size: number;
  /** Next collective sequence number; advanced identically on every rank. */
  nextSequence(): number;
  /** `name`: how an EncodeError names `data` (`value` unless given). */
  send(dest: number, tag: number, data: unknown, call: string, name?: ValueName): Promise<void>;
  recv(source: number, tag: number, signal: AbortSignal | undefined, call: string): Promise<unknown>;
}

export interface CollectiveOptions {
  /** Cancels the wait; the collective is then broken for this job (as an aborted MPI collective). */
  readonly signal?: AbortSignal;
}

function checkRoot(ch: CollectiveChannel, root: number, call: string): void {
  if (!Number.isInteger(root) || root < 0 || root >= ch.size) {
    throw new InvalidArgumentError(`${call}: root must be an integer rank in 0..${ch.size - 1}; got ${describe(root)}`);
  }
}

/** `values` must be an array with one item per rank. */
function checkValues<T>(
  ch: CollectiveChannel,
  values: readonly T[] | undefined,
  call: string,
  what = "values",
): asserts values is readonly T[] {
  if (!Array.isArray(values) || values.length !== ch.size) {
    throw new InvalidArgumentError(
      `${call}: ${what} must be an array of ${ch.size} items (one per rank); got ${describe(values)}`,
    );
  }
}

/**
 * The ranks that rank `rank` of `size` sends to in nearly every job, which the transport connects to as the job
 * starts (Transport `connectAhead`): rank 0, and on rank 0 every other rank (the root of gather, reduce and
 * allreduce; where the work of a pool usually starts, and where the end of a run is announced from), and the
 * barrier's partners, `rank + 2^k`.
 */
export function firstPeers(rank: number, size: number): Set<number> {
  const peers = new Set<number>();
  if (rank === 0) for (let r = 1; r < size; r++) peers.add(r);
  else peers.add(0);
  for (let step = 1; step < size; step *= 2) peers.add((rank + step) % size);
  peers.delete(rank);
  return peers;
}

export async function barrier(ch: CollectiveChannel, opts: CollectiveOptions = {}): Promise<void> {
  const tag = ch.nextSequence();
  const { rank, size } = ch;
  for (let step = 1; step < size; step *= 2) {
    await ch.send((rank + step) % size, tag, step, "barrier");
    await ch.recv((rank - step + size) % size, tag, opts.signal, "barrier");
  }
}

async function bcastTree<T>(
  ch: CollectiveChannel,
  value: T,
  root: number,
  tag: number,
  opts: CollectiveOptions,
  call: string,
): Promise<T> {
  const { rank, size } = ch;
  const rel = (rank - root + size) % size;
  let mask = 1;
  // Receive from the parent: the rank that differs in the lowest set bit of our relative rank.
  while (mask < size) {
    if (rel & mask) {
      const parent = (rel - mask + root) % size;
      value = (await ch.recv(parent, tag, opts.signal, call)) as T;
      break;
    }
    mask <<= 1;
  }
  mask >>= 1;
  const sends: Promise<void>[] = [];
  while (mask > 0) {
    if (rel + mask < size) sends.push(ch.send((rel + mask + root) % size, tag, value, call));
    mask >>= 1;
  }
  await Promise.all(sends);
  return value;
}

export async function bcast<T>(
  ch: CollectiveChannel,
  value: T,
  root: number,
  opts: CollectiveOptions = {},
): Promise<T> {
  checkRoot(ch, root, "bcast");
  return bcastTree(ch, value, root, ch.nextSequence(), opts, "bcast");
}

async function reduceToZero<T>(
  ch: CollectiveChannel,
  value: T,
  combine: (a: T, b: T) => T,
  tag: number,
  opts: CollectiveOptions,
  call: string,
): Promise<T | undefined> {
  const { rank, size } = ch;
  let acc = value;
  for (let mask = 1; mask < size; mask <<= 1) {
    if (rank & mask) {
      await ch.send(rank - mask, tag, acc, call);
      return undefined;
    }
    if (rank + mask < size) {
      const other = (await ch.recv(rank + mask, tag, opts.signal, call)) as T;
      acc = combine(acc, other);
    }
  }
  return acc;
}

export async function reduce<T>(
  ch: CollectiveChannel,
  value: T,
  op: ReduceOp<T>,
  root: number,
  opts: CollectiveOptions = {},
): Promise<T | undefined> {
  checkRoot(ch, root, "reduce");
  const combine = resolveOp(op, "reduce");
  const tag = ch.nextSequence();
  const atZero = await reduceToZero(ch, value, combine, tag, opts, "reduce");
  if (root === 0) return atZero;
  if (ch.rank === 0) await ch.send(root, tag, atZero, "reduce");
  if (ch.rank === root) return (await ch.recv(0, tag, opts.signal, "reduce")) as T;
  return undefined;
}

export async function allreduce<T>(
  ch: CollectiveChannel,
  value: T,
  op: ReduceOp<T>,
  opts: CollectiveOptions = {},
): Promise<T> {
  const combine = resolveOp(op, "allreduce");
  const tag = ch.nextSequence();
  const atZero = await reduceToZero(ch, value, combine, tag, opts, "allreduce");
  return bcastTree(ch, atZero as T, 0, ch.nextSequence(), opts, "allreduce");
}

export async function gather<T>(
  ch: CollectiveChannel,
  value: T,
  root: number,
  opts: CollectiveOptions = {},
): Promise<T[] | undefined> {
  checkRoot(ch, root, "gather");
  const tag = ch.nextSequence();
  if (ch.rank !== root) {
    await ch.send(root, tag, value, "gather");
    return undefined;
  }
  const out = new Array<T>(ch.size);
  out[root] = value;
  const waits: Promise<void>[] = [];
  for (let r = 0; r < ch.size; r++) {
    if (r === root) continue;
    waits.push(
      ch.recv(r, tag, opts.signal, "gather").then((v) => {
        out[r] = v as T;
      }),
    );
  }
  await Promise.all(waits);
  return out;
}

export async function allgather<T>(ch: CollectiveChannel, value: T, opts: CollectiveOptions = {}): Promise<T[]> {
  const all = await gather(ch, value, 0, opts);
  return bcastTree(ch, all as T[], 0, ch.nextSequence(), opts, "allgather");
}

export async function scatter<T>(
  ch: CollectiveChannel,
  values: readonly T[] | undefined,
  root: number,
  opts: CollectiveOptions = {},
): Promise<T> {
  checkRoot(ch, root, "scatter");
  const tag = ch.nextSequence();
  if (ch.rank !== root) return (await ch.recv(root, tag, opts.signal, "scatter")) as T;
  checkValues(ch, values, "scatter", "values on the root");
  const sends: Promise<void>[] = [];
  for (let r = 0; r < ch.size; r++) if (r !== root) sends.push(ch.send(r, tag, values[r], "scatter", `values[${r}]`));
  await Promise.all(sends);
  return values[root] as T;
}

/**
 * Pairwise exchange: rank r sends `values[r + s]` to rank r + s and receives from rank r - s, for s = 1..p-1.
 * A send only queues the message, so every send is queued at once, in that order (which spreads each rank's
 * first messages over different destinations), and the receives are then taken in the same order, each from
 * its own source's queue. One message latency plus bandwidth, no rounds of round trips.
 */
export async function alltoall<T>(
  ch: CollectiveChannel,
  values: readonly T[],
  opts: CollectiveOptions = {},
): Promise<T[]> {
  checkValues(ch, values, "alltoall");
  const tag = ch.nextSequence();
  const { rank, size } = ch;
  const out = new Array<T>(size);
  out[rank] = values[rank] as T;
  const sends: Promise<void>[] = [];
  for (let step = 1; step < size; step++) {
    const dest = (rank + step) % size;
    sends.push(ch.send(dest, tag, values[dest], "alltoall", `values[${dest}]`));
  }
  const receives = async () => {
    for (let step = 1; step < size; step++) {
      const source = (rank - step + size) % size;
      out[source] = (await ch.recv(source, tag, opts.signal, "alltoall")) as T;
    }
  };
  // Together, so that a send that fails (EncodeError) rejects at once rather than after the receives.
  await Promise.all([Promise.all(sends), receives()]);
  return out;
}

/**
 * Prefix reduction by recursive doubling (as MPICH's MPI_Scan): in round k, rank r exchanges with r XOR 2^k
 * the reduction over its aligned block of 2^k ranks; a rank folds in the partner's block always (so that its
 * own block's reduction doubles), and into its own prefix only when the partner's block is below it. With
 * `inclusive` false the prefix starts empty, and rank 0's stays so (undefined). ceil(log2 p) rounds of one
 * message each way.
 */
async function prefix<T>(
  ch: CollectiveChannel,
  value: T,
  combine: ReduceFn<T>,
  inclusive: boolean,
  opts: CollectiveOptions,
  call: string,
): Promise<T | undefined> {
  const tag = ch.nextSequence();
  const { rank, size } = ch;
  let block = value;
  let result: T | undefined = inclusive ? value : undefined;
  let hasResult = inclusive;
  for (let mask = 1; mask < size; mask <<= 1) {
    const partner = rank ^ mask;
    if (partner >= size) continue; // that block is empty: ranks past the end
    const [, received] = await Promise.all([
      ch.send(partner, tag, block, call),
      ch.recv(partner, tag, opts.signal, call),
    ]);
    const other = received as T;
    if (partner < rank) {
      block = combine(other, block);
      result = hasResult ? combine(other, result as T) : other;
      hasResult = true;
    } else {
      block = combine(block, other);
    }
  }
  return result;
}

export async function scan<T>(
  ch: CollectiveChannel,
  value: T,
  op: ReduceOp<T>,
  opts: CollectiveOptions = {},
): Promise<T> {
  const combine = resolveOp(op, "scan");
  return (await prefix(ch, value, combine, true, opts, "scan")) as T;
}

export async function exscan<T>(
  ch: CollectiveChannel,
  value: T,
  op: ReduceOp<T>,
  opts: CollectiveOptions = {},
): Promise<T | undefined> {
  const combine = resolveOp(op, "exscan");
  return prefix(ch, value, combine, false, opts, "exscan");
}

/**
 * MPI_Reduce_scatter_block: `values[i]` of every rank, combined in rank order, ends on rank i.
 *
 * Recursive halving by distance doubling, over q = the largest power of two <= p "participants": first each
 * of the lowest 2(p - q) ranks that is even hands all its values to the odd rank after it, which combines them
 * with its own and takes part for both. Participant j then owns the results of the ranks it stands for. In
 * round k (mask 2^k) each participant swaps with participant j XOR 2^k: it sends the values it holds whose
 * owner differs from it in bit k and keeps, combined with what the partner sent, those whose owner agrees.
 * After log2 q rounds each holds its own results; an odd rank that stood for the even one before it sends it
 * its result. Each value held covers a contiguous run of ranks, so combining puts the lower run on the left.
 */
export async function reduceScatter<T>(
  ch: CollectiveChannel,
  values: readonly T[],
  op: ReduceOp<T>,
  opts: CollectiveOptions = {},
): Promise<T> {
  const call = "reduceScatter";
  const combine = resolveOp(op, call);
  checkValues(ch, values, call);
  const tag = ch.nextSequence();
  const { rank, size } = ch;
  let q = 1;
  while (q * 2 <= size) q *= 2;
  const folded = 2 * (size - q); // ranks below this are paired up (even, odd)
  const owner = (r: number) => (r < folded ? r >> 1 : r - folded / 2);
  const rankOf = (j: number) => (j < folded / 2 ? 2 * j + 1 : j + folded / 2);
  if (rank < folded && rank % 2 === 0) {
    await ch.send(rank + 1, tag, values, call, "values");
    return (await ch.recv(rank + 1, tag, opts.signal, call)) as T;
  }
  const acc = values.slice();
  if (rank < folded) {
    const lower = (await ch.recv(rank - 1, tag, opts.signal, call)) as T[];
    for (let i = 0; i < size; i++) acc[i] = combine(lower[i] as T, acc[i] as T);
  }
  const me = owner(rank);
  let held = Array.from({ length: size }, (_, i) => i);
  for (let mask = 1; mask < q; mask <<= 1) {
    const keep: number[] = [];
    const give: number[] = [];
    for (const i of held) ((owner(i) & mask) === (me & mask) ? keep : give).push(i);
    const partner = me ^ mask;
    const [, received] = await Promise.all([
      ch.send(
        rankOf(partner),
        tag,
        give.map((i) => acc[i]),
        call,
        piecesOf(give),
      ),
      ch.recv(rankOf(partner), tag, opts.signal, call),
    ]);
    const theirs = received as T[];
    for (const [k, i] of keep.entries()) {
      acc[i] = partner < me ? combine(theirs[k] as T, acc[i] as T) : combine(acc[i] as T, theirs[k] as T);
    }
    held = keep;
  }
  if (rank < folded) await ch.send(rank - 1, tag, acc[rank - 1], call, `values[${rank - 1}]`);
  return acc[rank] as T;
}

/** An EncodeError's name for a list of some of `values`: its k-th item is `values[indices[k]]`. */
function piecesOf(indices: readonly number[]): ValueName {
  return (path: readonly Step[]) => {
    const [first, ...rest] = path;
    return typeof first === "number" ? where(`values[${indices[first]}]`, rest) : where("values", path);
  };
}
