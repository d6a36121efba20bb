import { describe, InvalidArgumentError } from "../errors.ts";
import { type ReduceOp, resolveOp } from "./ops.ts";

/**
 * Collective algorithms over a private message context, so no point-to-point traffic of any tag can be
 * mistaken for theirs. Every rank calls collectives in the same order (as in MPI); each call takes the next
 * sequence number, which is the tag of all its messages, so successive collectives never mix either.
 *
 * bcast: binomial tree from the root. reduce: binomial tree toward rank 0, combining in rank order, then one
 * hop to the root if it is not 0. barrier: dissemination (ceil(log2 p) rounds). gather/scatter: direct to or
 * from the root. allreduce and allgather: reduce or gather to 0, then bcast.
 */
export interface CollectiveChannel {
  readonly rank: number;
  readonly size: number;
  /** Next collective sequence number; advanced identically on every rank. */
  nextSequence(): number;
  send(dest: number, tag: number, data: unknown, call: string): Promise<void>;
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
  if (!Array.isArray(values) || values.length !== ch.size) {
    throw new InvalidArgumentError(
      `scatter: values on the root must be an array of ${ch.size} items (one per rank); got ${describe(values)}`,
    );
  }
  const sends: Promise<void>[] = [];
  for (let r = 0; r < ch.size; r++) if (r !== root) sends.push(ch.send(r, tag, values[r], "scatter"));
  await Promise.all(sends);
  return values[root] as T;
}
