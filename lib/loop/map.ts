/**
 * Results per item: `pool.map(items, handler)` and `world.map(items, handler)` (issue 29).
 *
 * A map is a DOALL loop over the items' indices (doall.ts `forEach`: blocks, a probe, ranges of a measured grain,
 * ranges moved to ranks that run dry), whose iterations keep what the handler returned instead of folding it into
 * a reduce. A range's results are contiguous, so a rank sends each range's results to the collecting rank (the
 * root) as one message, `[first index, values]`, when the range's task ends (sooner for a large result, or every
 * FLUSH_ITEMS results): straight to the root, never through a coordinator or a fold, on the pool's own message
 * context with a tag of map's (pool.ts MAP_TAG), each message naming its map by a sequence number so that a late
 * batch of a failed map is not taken for the next one's. The root places them by index into an array of the
 * items' length made at the start, so its memory holds the results and one message at a time.
 *
 * Exactly once under `retries`: a rank sends a task's results before the task returns, so before the commit that
 * counts it; with the root the coordinator, both go down the same connection in that order, so a committed task's
 * results have reached the root. A task run twice (re-dealt after a death, or speculated) sends its results twice:
 * the root keeps the first copy of each index.
 */
import { pack } from "../comm/codec.ts";
import type { Communicator } from "../comm/world.ts";
import { deferred } from "../deferred.ts";
import { arrivesAsItIs, findUnsendable, sampledCheck, where } from "../comm/unsendable.ts";
import { describe, EncodeError, InvalidArgumentError, TaskError } from "../errors.ts";
import type { PoolConfig } from "../pool/options.ts";
import type { PutOptions, RunOptions, RunResult, TaskContext } from "../pool/types.ts";
import { blockOf, forEach, ledgerKeeper, workingRanks } from "./doall.ts";
import { ROOT as DISTRIBUTED_ROOT } from "../pool/distributed/protocol.ts";
import type { LoopContext } from "./options.ts";

/** What a map handler gets besides its item and index. */
export interface MapContext {
  /** The rank running the item. */
  readonly rank: number;
  /** Aborts when the map ends before every item ran (a handler threw, an abort, on any rank). */
  readonly signal: AbortSignal;
}

/**
 * Makes item `index`'s result (or a promise of it). Its result must be plain data (it travels to the root):
 * numbers, strings, arrays, objects, typed arrays, Maps, Sets, Dates, BigInts. An `async` handler's items on
 * one rank are in flight together, up to MapOptions `concurrency`.
 */
export type MapHandler<I, R> = (item: I, index: number, ctx: MapContext) => R | Promise<R>;

/** Options of `world.map` and `pool.map`. */
export interface MapOptions {
  /**
   * The rank that collects the results: `map` resolves to them there and to undefined on the other ranks. In a
   * pool with `retries`, the coordinator. @default 0
   */
  readonly root?: number;
  /**
   * Items per task, fixed: for comparisons. Unset: chosen on each rank from the measured time per item, as a
   * loop's grain is (docs/loops.md). A positive integer. @default chosen at run time
   */
  readonly grain?: number;
  /** Aborting makes the map reject with AbortError here and PeerAbortedError on the other ranks. */
  readonly signal?: AbortSignal;
  /**
   * Async handlers in flight per rank. 1: a rank's items run one after another, in tasks of a grain chosen from
   * their measured time (a loop's). Above 1: each task holds `grain` items (default 1), run one after another,
   * and a rank keeps up to this many tasks in flight (the pool's `concurrency`), for handlers that wait (a file,
   * a request). Must be 1 in a pool with `retries`. A positive integer. @default the pool's `concurrency` (16
   * unless set) for an `async` function, 1 for any other handler (one that returns a promise without being
   * `async` included), and 1 in a pool with `retries`
   */
  readonly concurrency?: number;
}

/**
 * `concurrency` when the app gives none: an `async` handler's items wait (a file, a request), and go in flight up
 * to the pool's `concurrency`, as a run's async tasks do; any other handler's run in tasks of a measured grain.
 * (64 items that each await 50 ms at -n 2: 1.66 s one after another, 0.11 s in flight.) With `retries`, 1.
 */
function defaultConcurrency(handler: unknown, config: PoolConfig): number {
  const isAsync = typeof handler === "function" && handler.constructor.name === "AsyncFunction";
  return isAsync && config.retries === 0 ? config.concurrency : 1;
}

/** A rank sends the results it holds once it holds this many. */
const FLUSH_ITEMS = 4096;
/** A result of at least this many bytes (a typed array, a Buffer) is sent at once, alone or with those before it. */
const LARGE_BYTES = 64 * 1024;

/** What a map needs of its pool (pool.ts imports this file, so it names no Pool). */
interface MapPool {
  readonly config: PoolConfig;
  readonly name: string;
  readonly waiting: number;
  readonly running: boolean;
  put(task: unknown, options?: PutOptions): void;
  run(
    handler: (task: never, ctx: TaskContext<never>) => unknown,
    options: RunOptions<number>,
  ): Promise<RunResult<number>>;
  listenMap(listener: (source: number, body: Record<string, unknown>) => void): void;
  postMap(dest: number, body: Record<string, unknown>): void;
  /** The map's size and progress here, for the live view (lib/control/live.ts), taken by the next run. */
  nextLoop: { readonly total: number; readonly done: () => number } | undefined;
}

/** A batch of results on the wire: map sequence number, index of the first, the results in index order. */
interface Batch {
  m: number;
  lo: number;
  v: unknown[];
  /** The sender's items, sampled (`sampleItems`), so that the root can tell other items of the same count. */
  f?: number[];
}

/** Items compared between ranks (`sampleItems`): the first, the last, and evenly spaced ones between. */
const SAMPLED_ITEMS = 17;

/** The indices `sampleItems` compares, of `n` items. */
function sampledIndices(n: number): number[] {
  if (n <= SAMPLED_ITEMS) return Array.from({ length: n }, (_, i) => i);
  return Array.from({ length: SAMPLED_ITEMS }, (_, k) => Math.round((k * (n - 1)) / (SAMPLED_ITEMS - 1)));
}

/**
 * A hash of each sampled item (`sampledIndices`) as encoded (its length and first HASHED_BYTES bytes): every rank must give the same items, and items made
 * on each rank from its own state (\`Math.random()\`, a rank's clock) differ in content, not in count, which the
 * loop alone checks. Undefined when an item cannot be encoded (items never travel, so they need not be data).
 */
function sampleItems(items: readonly unknown[]): number[] | undefined {
  try {
    return sampledIndices(items.length).map((i) => fnv1a(pack(items[i])));
  } catch {
    return undefined;
  }
}

/** FNV-1a of an item's length and its first HASHED_BYTES bytes (a large item costs no more to compare). */
function fnv1a(bytes: Uint8Array): number {
  let h = Math.imul(0x811c9dc5 ^ bytes.length, 0x01000193);
  const end = Math.min(bytes.length, HASHED_BYTES);
  for (let i = 0; i < end; i++) h = Math.imul(h ^ (bytes[i] as number), 0x01000193);
  return h >>> 0;
}
const HASHED_BYTES = 4096;

/** Per pool on this rank: maps begun, and batches that arrived for a map not begun here yet. */
interface MapState {
  seq: number;
  collect: ((source: number, batch: Batch) => void) | undefined;
  /** Batches for a later map, with their senders. */
  early: [source: number, batch: Batch][];
}
const states = new WeakMap<object, MapState>();

function stateOf(pool: MapPool): MapState {
  let state = states.get(pool);
  if (!state) {
    const s: MapState = { seq: 0, collect: undefined, early: [] };
    pool.listenMap((source, body) => {
      const batch = body as unknown as Batch;
      if (batch.m === s.seq && s.collect) s.collect(source, batch);
      else if (batch.m > s.seq) s.early.push([source, batch]);
      // else a late batch of an earlier map (one that failed here): dropped.
    });
    states.set(pool, s);
    state = s;
  }
  return state;
}

/** What a handler's throw becomes in its task: the item's index in the message, which reaches every rank. */
class ItemFailure extends Error {
  constructor(index: number, cause: unknown) {
    const e = cause instanceof Error ? cause : undefined;
    super(`item ${index}: ${e ? e.message : String(cause)}`, { cause });
    this.name = e?.name ?? "Error";
    if (e?.stack) this.stack = e.stack;
  }
}
const SAME_ITEMS = "every rank must give the same items";
const ITEM = /^item (\d+): ([\s\S]*)$/;

/** The TaskError a map rejects with for a handler's throw, naming the item's index as its `task`. */
function itemError(e: TaskError): TaskError {
  const cause = e.cause as Error | undefined;
  const m = cause instanceof Error ? ITEM.exec(cause.message) : null;
  if (!m || !cause) return e;
  const index = Number(m[1]);
  const original = cause instanceof ItemFailure ? cause.cause : Object.assign(new Error(m[2]), { name: cause.name });
  if (!(cause instanceof ItemFailure) && cause.stack) (original as Error).stack = cause.stack;
  return new TaskError(e.rank, index, `map: the item at index ${index} failed on rank ${e.rank}: ${m[2]}`, {
    cause: original,
  });
}

function isPromise(v: unknown): v is Promise<unknown> {
  return typeof v === "object" && v !== null && typeof (v as { then?: unknown }).then === "function";
}

/** Validates a map's arguments up front; the messages name the call, the argument and what was received. */
function checkMap(
  call: string,
  world: Communicator,
  config: PoolConfig,
  items: unknown,
  handler: unknown,
  options: unknown,
) {
  if (!Array.isArray(items)) {
    throw new InvalidArgumentError(
      `${call}: \`items\` must be an array, the same on every rank; got ${describe(items)}`,
    );
  }
  if (typeof handler !== "function") {
    throw new InvalidArgumentError(`${call}: \`handler\` must be a function; got ${describe(handler)}`);
  }
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new InvalidArgumentError(`${call}: options must be an object; got ${describe(options)}`);
  }
  const o = (options ?? {}) as MapOptions;
  for (const key of Object.keys(o)) {
    if (!["root", "grain", "signal", "concurrency"].includes(key)) {
      throw new InvalidArgumentError(`${call}: unknown option \`${key}\` (known: root, grain, signal, concurrency)`);
    }
  }
  const concurrency = o.concurrency ?? 1;
  if (!Number.isSafeInteger(concurrency) || concurrency < 1) {
    throw new InvalidArgumentError(
      `${call}: option \`concurrency\` must be a positive integer; got ${describe(o.concurrency)}`,
    );
  }
  const root = o.root ?? 0;
  if (!Number.isInteger(root) || root < 0 || root >= world.size) {
    throw new InvalidArgumentError(
      `${call}: option \`root\` must be a rank in 0..${world.size - 1}; got ${describe(root)}`,
    );
  }
  if (concurrency > 1 && config.retries > 0) {
    throw new InvalidArgumentError(
      `${call}: option \`concurrency\` must be 1 with a pool that has \`retries\` (it commits between tasks); got ${concurrency}`,
    );
  }
  if (world.deadRanks.includes(root)) {
    throw new InvalidArgumentError(`${call}: option \`root\` names rank ${root}, which died`);
  }
  const keeper = config.mode === "centralized" ? config.coordinator : DISTRIBUTED_ROOT;
  if (world.size > 1 && config.retries > 0 && root !== keeper) {
    const who = config.mode === "centralized" ? "the coordinator" : "the root";
    throw new InvalidArgumentError(
      `${call}: option \`root\` must be ${who} (rank ${keeper}) of a pool with \`retries\`, ` +
        `so that a dead worker's results are counted once; got ${root}`,
    );
  }
  return root;
}

/** @internal `pool.map` and `world.map`: see Pool.map. */
export async function mapOn<I, R>(
  poolObject: object,
  world: Communicator,
  items: readonly I[],
  handler: MapHandler<I, R>,
  options?: MapOptions,
  call = "map",
): Promise<R[] | undefined> {
  const pool = poolObject as MapPool;
  const root = checkMap(call, world, pool.config, items, handler, options);
  const n = items.length;
  const state = stateOf(pool);
  const seq = ++state.seq;
  const collecting = world.rank === root;
  const results: R[] | undefined = collecting ? new Array<R>(n) : undefined;
  /** On the root: which indices have a result, and how many. */
  const have = collecting ? new Uint8Array(n) : undefined;
  let placed = 0;
  const complete = deferred();
  if (n === 0) complete.resolve();
  const place = (lo: number, values: readonly unknown[]) => {
    const out = results as unknown[];
    const got = have as Uint8Array;
    for (let k = 0; k < values.length; k++) {
      const i = lo + k;
      if (i >= n || got[i] === 1) continue; // a copy (a task run twice), or a rank with more items (checked after)
      got[i] = 1;
      out[i] = values[k];
      placed++;
    }
    if (placed === n) complete.resolve();
  };
  // Other items of the same count, on the first rank seen to give them (checked on the root, at every batch).
  const sampled = sampleItems(items);
  let differs: { rank: number; item: number } | undefined;
  const compare = (source: number, f: number[] | undefined) => {
    if (differs || !sampled || !Array.isArray(f) || f.length !== sampled.length) return;
    const k = sampled.findIndex((h, j) => h !== f[j]);
    if (k >= 0) differs = { rank: source, item: sampledIndices(n)[k] as number };
  };
  const collect = (source: number, b: Batch) => {
    compare(source, b.f);
    place(b.lo, b.v);
  };
  state.collect = collecting ? collect : undefined;
  const early = state.early.filter(([, b]) => b.m === seq);
  state.early = state.early.filter(([, b]) => b.m > seq);
  if (collecting) for (const [source, b] of early) collect(source, b);

  // This rank's results not yet sent: indices lo .. lo + held.length - 1.
  let lo = 0;
  let held: unknown[] = [];
  const flush = () => {
    if (held.length === 0) return;
    if (collecting) place(lo, held);
    else {
      try {
        pool.postMap(root, (sampled ? { m: seq, lo, v: held, f: sampled } : { m: seq, lo, v: held }) satisfies Batch);
      } catch (e) {
        // One the sampled check let through: name its item.
        const k = held.findIndex((v) => !arrivesAsItIs(v));
        if (k >= 0) throw untravelled(lo + k, held[k]);
        throw e;
      }
    }
    held = [];
  };
  // A result that would not arrive as it is (a function, a class instance) fails its item on any rank, the root
  // included, where it would not travel: an app that works on one rank does not fail on sixteen.
  let checked = 0;
  const untravelled = (i: number, v: unknown): ItemFailure => {
    const found = findUnsendable(v, true);
    const what = found ? `${where("result", found.path)} ${found.what}` : "result cannot be encoded";
    return new ItemFailure(i, new EncodeError(`${what}; a result travels to the root, so return plain data`));
  };
  const keep = (i: number, v: unknown) => {
    if (sampledCheck(checked++) && !arrivesAsItIs(v)) throw untravelled(i, v);
    if (held.length === 0) lo = i;
    else if (i !== lo + held.length) {
      flush();
      lo = i;
    }
    held.push(v);
    if (held.length >= FLUSH_ITEMS || (ArrayBuffer.isView(v) && v.byteLength >= LARGE_BYTES)) flush();
  };
  let mapCtx: MapContext | undefined;
  const body = (i: number, c: LoopContext): Promise<void> | undefined => {
    if (i >= n) {
      throw new InvalidArgumentError(
        `${call}: rank ${world.rank} was given ${n} items and asked to run item ${i}: ${SAME_ITEMS}`,
      );
    }
    let v: unknown;
    try {
      v = handler(items[i] as I, i, (mapCtx ??= { rank: c.rank, signal: c.signal }));
    } catch (e) {
      throw new ItemFailure(i, e);
    }
    if (isPromise(v)) {
      return v.then(
        (r) => keep(i, r),
        (e: unknown) => {
          throw new ItemFailure(i, e);
        },
      );
    }
    keep(i, v);
    return undefined;
  };
  const loopOptions = { ...(options?.grain === undefined ? {} : { grain: options.grain }), signal: options?.signal };
  try {
    const concurrency = options?.concurrency ?? defaultConcurrency(handler, pool.config);
    if (concurrency > 1) await inFlight(pool, world, n, body, { ...options, concurrency }, call, flush);
    else await forEach(pool, world, 0, n, body, loopOptions, call, flush);
  } catch (e) {
    state.collect = undefined;
    const cause = e instanceof TaskError ? (e.cause as Error | undefined) : undefined;
    if (cause?.name === "InvalidArgumentError" && cause.message.includes(SAME_ITEMS)) {
      // A rank given fewer items was dealt an index beyond them.
      throw new InvalidArgumentError(`${call}: ${SAME_ITEMS}; this rank gave ${n} (${cause.message})`);
    }
    if (e instanceof TaskError) throw itemError(e);
    if (e instanceof InvalidArgumentError && e.message.startsWith(`${call}: the ranks ran `)) {
      throw new InvalidArgumentError(
        `${call}: ${SAME_ITEMS}; this rank gave ${n} (${e.message.slice(call.length + 2)})`,
      );
    }
    throw e;
  }
  if (!collecting) return undefined;
  // Every task has ended everywhere; batches sent by other ranks before their tasks ended may still be on the way.
  if (placed < n) {
    const offFailure = world.onFailure((e) => complete.reject(e));
    try {
      await complete.promise;
    } finally {
      offFailure();
    }
  }
  state.collect = undefined;
  if (differs) {
    throw new InvalidArgumentError(
      `${call}: ${SAME_ITEMS}; rank ${differs.rank} gave other items than this rank (rank ${root}): ` +
        `item ${differs.item} of ${n} differs (${Math.min(n, SAMPLED_ITEMS)} items compared, evenly spaced); ` +
        "make them from the same data on every rank, not from a rank's own state (Math.random(), its clock)",
    );
  }
  return results;
}

/**
 * A map with `concurrency` above 1: tasks of `grain` items (default 1), each working rank putting its block's
 * (pinned to it in a distributed pool, so they move only when stolen; under a centralized pool, kept), run with
 * the pool's `concurrency`. A task's items run one after another; its results are sent when it ends (flush).
 * Each task returns how many items it ran, so every rank can tell that the ranks gave the same number of items.
 */
async function inFlight(
  pool: MapPool,
  world: Communicator,
  n: number,
  body: (i: number, c: LoopContext) => Promise<void> | undefined,
  options: MapOptions,
  call: string,
  flush: () => void,
): Promise<void> {
  if (pool.running) {
    throw new InvalidArgumentError(
      `${call}: ${pool.name} is running a loop or a run already; await it before the next`,
    );
  }
  if (pool.waiting > 0) {
    throw new InvalidArgumentError(
      `${call}: ${pool.name} holds ${pool.waiting} task(s) put and not run; run them first, or map on another pool`,
    );
  }
  const grain = options.grain ?? 1;
  if (!Number.isSafeInteger(grain) || grain < 1) {
    throw new InvalidArgumentError(`${call}: option \`grain\` must be a positive integer; got ${describe(grain)}`);
  }
  const working = workingRanks(pool, world.size, world.deadRanks);
  const w = working.indexOf(world.rank);
  const keeper = ledgerKeeper(pool.config, world.size);
  if (keeper !== undefined) {
    // A pool with `retries`: every item is put where the ledger is, so none dies with a rank before its commit.
    if (world.rank === keeper) for (let a = 0; a < n; a += grain) pool.put([a, Math.min(n, a + grain)]);
  } else if (w >= 0) {
    const [lo, hi] = blockOf(0, n, w, working.length);
    const pin = world.size > 1 && pool.config.mode === "distributed" ? { to: world.rank } : undefined;
    for (let a = lo; a < hi; a += grain) pool.put([a, Math.min(hi, a + grain)], pin);
  }
  const handler = async (task: [number, number], ctx: TaskContext<never>): Promise<number> => {
    const c: LoopContext = { rank: ctx.rank, signal: ctx.signal, stop: () => {} };
    for (let i = task[0]; i < task[1] && !ctx.signal.aborted; i++) {
      await body(i, c);
      ran++;
    }
    flush();
    return task[1] - task[0];
  };
  const runOptions: RunOptions<number> = { reduce: "sum", concurrency: options.concurrency as number };
  let ran = 0;
  pool.nextLoop = { total: n, done: () => ran };
  const r = await pool.run(handler as never, options.signal ? { ...runOptions, signal: options.signal } : runOptions);
  if ((r.result ?? 0) !== n) {
    throw new InvalidArgumentError(
      `${call}: ${SAME_ITEMS}; this rank gave ${n} (the ranks ran ${r.result ?? 0} items)`,
    );
  }
}
