import { setMaxListeners } from "node:events";
import { ENV } from "../comm/env.ts";
import type { Communicator } from "../comm/world.ts";
import { arrivesAsItIs, sampledCheck } from "../comm/unsendable.ts";
import { ClosedError, ConfigError, describe, InvalidArgumentError, StoppedError } from "../errors.ts";
import type { LiveRun } from "../control/live.ts";
import { REPORT, report } from "../control/report.ts";
import { Bound, Bounds, type BoundSense } from "./bound.ts";
import { ROOT as DISTRIBUTED_ROOT } from "./distributed/protocol.ts";
import { engineFor } from "./engines.ts";
import { flushingAfter, type GatherBatch, Gathering, gatherRoot } from "./gather.ts";
import { forEach } from "../loop/doall.ts";
import { mapOn, type MapHandler, type MapOptions } from "../loop/map.ts";
import type { LoopBody, LoopOptions, LoopResult, StoppableLoopResult } from "../loop/options.ts";
import { parsePoolSpec, type PoolConfig, type PoolOptions, resolvePoolConfig } from "./options.ts";
import { checkPutOptions, PendingPuts, untravelled } from "./pending.ts";
import { Results } from "./results.ts";
import { runConcurrency, watchRun } from "./run-setup.ts";
import { type Engine, type PendingPut, PoolRuntime, worldLink } from "./runtime.ts";
import { rootsDigest, SameRootsCheck } from "./same-roots.ts";
import { TraceRecorder } from "./trace.ts";
import {
  emptyStats,
  type PoolStats,
  type PutOptions,
  type RunOptions,
  type GatherKey,
  type RunResult,
  type StoppableRunResult,
  type TaskContext,
  type TaskHandler,
} from "./types.ts";

type Stashed = [source: number, tag: number, body: Record<string, unknown>];

/** The tag of a bound's improvement in a pool's context (engines' tags are small numbers). */
const BOUND_TAG = 1000;
/** The tag of a rank's digest of the tasks it put before the pool's first run (same-roots.ts). */
const ROOTS_TAG = 1001;
/** The tag of a batch of `map` results on its way to the collecting rank (loop/map.ts). */
const MAP_TAG = 1002;
/** The tag of a batch of values tasks gave (`ctx.give`, gather.ts) in a pool's context. */
const GATHER_TAG = 1003;

/**
 * A workpool: tasks put on any rank run exactly once on some rank, and `run` resolves on every rank once none
 * is queued, running or in transit anywhere. Create pools in the same order on every rank (each gets a private
 * message context by creation order). A pool can `run` any number of times (phases); tasks put between runs
 * wait for the next one.
 *
 * Concurrency rules: one `run` at a time per pool; `put` may be called any time on any rank (before `run`, from
 * handlers, or from the app while `run` is active). A handler that throws makes `run` reject on every rank with
 * a TaskError naming the rank and the task.
 */
export class Pool<T = unknown> {
  /** The resolved configuration: the launcher's `--pool SPEC` overridden by code options, then defaults. */
  readonly config: PoolConfig;
  private readonly world: Communicator;
  private readonly context: number;
  private readonly pending = new PendingPuts<T>(this);
  private engine: Engine<T> | undefined;
  private runtime: PoolRuntime | undefined;
  private epoch = 0;
  private stash: Stashed[] = [];
  private last: PoolStats | undefined;
  private readonly bounds = new Bounds();
  /** On rank 0 of a world of several ranks: whether every rank put the same tasks before the first run. */
  private readonly sameRoots: SameRootsCheck | undefined;
  /** Tasks handlers put into this pool on this rank, for the check in `putFrom`. */
  private handlerPuts = 0;
  /** Where `map` results that arrive here go (loop/map.ts); until a map listens, they wait in mapStash. */
  private mapListener: ((source: number, body: Record<string, unknown>) => void) | undefined;
  private mapStash: [source: number, body: Record<string, unknown>][] = [];
  /** The running (or ending) run's gathering, if it has the option `gather`; batches of later runs wait. */
  private gathering: Gathering | undefined;
  private gatherStash: [source: number, batch: GatherBatch][] = [];

  /** @internal use `world.pool()` */
  constructor(world: Communicator, context: number, config: PoolConfig) {
    this.world = world;
    this.context = context;
    this.config = config;
    this.name = `pool${world.allocatedContexts}`;
    if (world.rank === 0 && world.size > 1) {
      this.sameRoots = new SameRootsCheck(world.size, (tasks) => {
        const some = tasks === 1 ? "task" : `${tasks} tasks`;
        process.emitWarning(
          `${this.name}: every one of the ${world.size} ranks put the same ${some} before the first run, so ` +
            `${tasks === 1 ? "it runs" : "they run"} ${world.size} times, and so does every task ` +
            `${tasks === 1 ? "it puts" : "they put"}; a root task belongs on one rank: ` +
            "if (world.rank === 0) pool.put(task)",
          { type: "WorkpoolWarning", code: "WP_SAME_ROOTS" },
        );
      });
    }
    world.listen(context, (source, tag, data) => this.route(source, tag, data as Record<string, unknown>));
    // Runs begun here, which every other rank learns when this one closes its world (see run).
    world.trackProgress(context, () => this.epoch);
    // The launcher brings the job down when any rank dies, unless told that this pool survives its workers'
    // deaths: only the coordinator's then ends the job.
    if (config.retries > 0 && world.size > 1) {
      // The rank whose state nothing replicates: the coordinator's queue, or the distributed root's ledger.
      const essential = config.mode === "centralized" ? config.coordinator : DISTRIBUTED_ROOT;
      report({ t: "tolerate", essential: [world.worldRankOf(essential)] });
    }
  }

  private route(source: number, tag: number, body: Record<string, unknown>): void {
    if (tag === ROOTS_TAG) {
      this.sameRoots?.otherRoots(String(body.d));
      return;
    }
    if (tag === MAP_TAG) {
      if (this.mapListener) this.mapListener(source, body);
      else this.mapStash.push([source, body]);
      return;
    }
    if (tag === GATHER_TAG) {
      const batch = body as unknown as GatherBatch;
      if (this.gathering?.epoch === batch.e) this.gathering.receive(source, batch);
      else if (batch.e > this.epoch) this.gatherStash.push([source, batch]);
      // else: a batch of a run that failed here, or of a run without `gather` here (gather.ts: finish)
      return;
    }
    // A rank that began a later run has ended this one: without its `done`, it was not gathering.
    this.gathering?.heardFrom(source, body.e as number);
    if (tag === BOUND_TAG) {
      this.bounds.receive(body.b as number, body.v as number);
      return;
    }
    const e = body.e as number;
    if (this.engine && e === this.epoch) {
      try {
        this.engine.onMessage(source, tag, body);
      } catch (err) {
        // E.g. a task this rank deals or gives away cannot be encoded (EncodeError): the run fails here, and
        // the other ranks hear why, instead of the error escaping into the world's receive loop.
        this.engine.fail(err as Error);
      }
    } else if (e > this.epoch || (!this.engine && e === this.epoch + 1)) this.stash.push([source, tag, body]);
  }

  /** Adds a task. Before `run` it waits for the run; during `run` it joins the running pool. */
  put(task: T, options?: PutOptions): void {
    this.putFrom(task, options, false);
  }

  /** `put`, from a running task's `ctx.put` (`fromTask`) or from the app. */
  private putFrom(task: T, options: PutOptions | undefined, fromTask: boolean): void {
    // On any number of ranks, even one: a task that would not arrive as it is fails here, not once it moves.
    // Every put from the app; from handlers, the hot path, a sample (sampledCheck): a handler's tasks come from
    // a few lines of code, so a bad shape shows in its first puts.
    if (!fromTask || sampledCheck(this.handlerPuts++)) {
      if (!arrivesAsItIs(task)) throw untravelled(task);
    }
    if (options === undefined && this.engine !== undefined) {
      // The hot path: a handler putting a plain task.
      (this.runtime as PoolRuntime).stats.tasksPut++;
      this.engine.put(task, 0, undefined, fromTask);
      return;
    }
    checkPutOptions(options, this.config.mode, this.world.size);
    const priority = options?.priority ?? 0;
    const to = options?.to;
    const key = options?.key;
    if (this.engine && this.runtime) {
      this.runtime.stats.tasksPut++;
      this.engine.put(task, priority, to, fromTask, key);
    } else {
      this.pending.add(key === undefined ? { task, priority, to } : { task, priority, to, key });
    }
  }

  /**
   * The pool's name in statistics, traces and messages: `pool1` for the first pool a communicator made, in
   * the order every rank makes them.
   */
  readonly name: string;

  /** @internal True while a run of this pool is under way on this rank. */
  get running(): boolean {
    return this.engine !== undefined;
  }

  /** @internal Tasks put and waiting for a run. */
  get waiting(): number {
    return this.pending.length;
  }

  /**
   * @internal A loop about to run on this pool (doall.ts) gives its total and its count of iterations done here,
   * for the live view; taken by the next run.
   */
  nextLoop: LiveRun["loop"];

  /** @internal The rank this pool object lives on. */
  get rank(): number {
    return this.world.rank;
  }

  /**
   * Runs `handler` on tasks until the pool has terminated; call it on every rank. Resolves to this rank's
   * statistics plus `result`: the values handlers returned on every rank, combined with `options.reduce`
   * (sum by default), the same on every rank. Rejects with TaskError if a handler threw on any rank,
   * AbortError if `signal` aborted here (PeerAbortedError if it aborted on another rank), RankFailedError if
   * this rank's messaging failed or another rank's run failed otherwise.
   *
   * Types: `R` is what handlers return (inferred from the handler). A run whose tasks may `ctx.stop(value)` with a
   * value of another type names that type as the second type argument, `pool.run<number, Found>(...)`: `ctx.stop`
   * then takes a `Found`, and the result is a StoppableRunResult, whose `stopped` tells a `Found` from a `number`.
   */
  run<R = number>(handler: TaskHandler<T, R>, options?: RunOptions<R>): Promise<RunResult<R>>;
  run<R, S>(handler: TaskHandler<T, R, S>, options?: RunOptions<R>): Promise<StoppableRunResult<R, S>>;
  async run<R, S>(
    handler: TaskHandler<T, R, S>,
    options: RunOptions<R> = {},
  ): Promise<RunResult<R> | StoppableRunResult<R, S>> {
    if (typeof handler !== "function") {
      throw new InvalidArgumentError(`run: handler must be a function; got ${describe(handler)}`);
    }
    checkRunOptions(options);
    const results = Results.of(options.reduce as RunOptions["reduce"]);
    const concurrency = runConcurrency(options as RunOptions<unknown>, this.config);
    if (this.engine || this.gathering) {
      throw new InvalidArgumentError("run: this pool is already running; await the first run");
    }
    if (this.world.isClosed) throw new ClosedError("run: the world is closed");
    // With `retries` a task's given values go where its commits go (the ledger's rank), sent before them.
    const resilient = this.config.retries > 0;
    const keeper = this.config.mode === "centralized" ? this.config.coordinator : DISTRIBUTED_ROOT;
    const gatherAt = gatherRoot(options.gather, this.world, keeper, resilient, this.config.mode);
    const stats = emptyStats(this.world.rank, this.config.mode);
    stats.tasksPut = this.pending.length;
    stats.startedAt = performance.timeOrigin + performance.now();
    const t0 = performance.now();
    this.epoch++;
    const name = this.name;
    const coordinating =
      this.config.mode === "centralized" &&
      !this.config.coordinatorWorks &&
      this.world.size > 1 &&
      this.world.rank === this.config.coordinator;
    const trace = REPORT.trace
      ? new TraceRecorder(this.world.rank, `${name}.${this.epoch}`, coordinating ? "coordinating" : "idle", t0)
      : undefined;
    trace?.instant(`${name} run ${this.epoch} starts`, { mode: this.config.mode });
    const rt = new PoolRuntime(worldLink(this.world, this.context), this.config, this.epoch, stats, results, trace);
    rt.concurrency = concurrency;
    const initial = this.pending.take();
    if (this.epoch === 1 && this.world.size > 1) this.tellRoots(initial);
    const gathering = this.startGathering(gatherAt);
    /** The run ended because every task was done (not failed, not stopped): see ctx.put. */
    let completed = false;
    // Aborts once the run ends here other than by completing (types.ts, TaskContext.signal).
    const ended = new AbortController();
    // Every task in flight may listen on the signal (a timer, a fetch): with `concurrency` 16 that is more than
    // the 10 listeners past which Node warns of a leak, which this is not (each goes when its task ends).
    setMaxListeners(0, ended.signal);
    // Whether `ended` aborted, kept here: AbortSignal's getters check their receiver on every call, and ctx.put
    // asks at every put (in a profile of a tree of tiny tasks on 2 ranks, about a tenth of each rank's CPU).
    let aborted = false;
    const abort = (reason: unknown) => {
      aborted = true;
      ended.abort(reason);
    };
    const ctx = {
      rank: this.world.rank,
      signal: ended.signal,
      // A handler still running after its run failed, or ctx.stop ended it, puts into nothing: its tasks belong
      // to a run that is over, and must not become the next run's first tasks. After a run that ended because
      // every task was done, no task of it is still running: a put then (a timer's) is the app's mistake.
      put: (task: T, o?: PutOptions) => {
        if (this.runtime === rt && !aborted) this.putFrom(task, o, true);
        else if (completed) {
          throw new InvalidArgumentError(
            `put: ${name} run ${rt.epoch} is over (every task ran): ctx.put after it ended puts nothing; ` +
              "put from the handler while its task runs, or pool.put before the next run",
          );
        }
      },
      stop: (result?: unknown) => engine.stop(result === undefined ? undefined : [result]),
      give: (key: GatherKey, value: unknown) => {
        if (!gathering) {
          throw new InvalidArgumentError(
            `give: ${name} run ${rt.epoch} has no option \`gather\`: pass { gather: true } to run to have tasks ` +
              "give values by key",
          );
        }
        if (this.runtime === rt && !aborted) gathering.give(key, value);
      },
    };
    // Under `retries` a task's values go to the coordinator before its commit (gather.ts): sent as it returns.
    const run = gathering && resilient && !gathering.collecting ? flushingAfter(handler, gathering) : handler;
    const engine = engineFor<T>(rt, run as TaskHandler<T>, ctx as TaskContext<T>, initial);
    this.runtime = rt;
    this.engine = engine;
    const stashed = this.stash;
    this.stash = [];
    for (const m of stashed) this.route(...m);
    engine.start();
    // Before `run` settles (the first reaction to `done`): handlers still running learn that the run is over
    // at once, with the error `run` rejects with, or a StoppedError.
    const epoch = this.epoch;
    engine.done.then(
      () => {
        if (rt.stopped) abort(new StoppedError(`${name} run ${epoch} was stopped by ctx.stop`));
      },
      (e: unknown) => abort(e),
    );
    const live: LiveRun = {
      pool: name,
      run: epoch,
      config: this.config,
      stats,
      t0,
      queued: () => engine.queued?.() ?? 0,
      loop: this.nextLoop,
    };
    const unwatch = watchRun(this.world, this.context, engine, options.signal, live);
    this.nextLoop = undefined;
    let gathered: Map<GatherKey, unknown> | undefined;
    try {
      try {
        await engine.done;
      } catch (e) {
        gathering?.close();
        throw e;
      }
      completed = !rt.stopped;
      gathered = await gathering?.finish();
    } finally {
      this.gathering = undefined;
      unwatch();
      this.engine = undefined;
      this.runtime = undefined;
      stats.wallMs = performance.now() - t0;
      stats.idleMs = Math.max(0, stats.wallMs - stats.busyMs);
      this.last = stats;
      trace?.finish(performance.now());
    }
    if (REPORT.progress) report({ t: "progress", pool: name, done: stats.tasksExecuted, queued: 0 });
    if (REPORT.stats) report({ t: "stats", pool: name, run: this.epoch, config: this.config, stats });
    const result = { ...stats, result: results.final?.[0] as R | undefined, stopped: rt.stopped };
    return gathered ? { ...result, gathered } : result;
  }

  /** The run's gathering (to rank `at`), if it has the option `gather`: it takes the batches that came early. */
  private startGathering(at: number | undefined): Gathering | undefined {
    const gathering =
      at === undefined
        ? undefined
        : new Gathering(this.world, at, this.epoch, this.name, (dest, batch) =>
            this.world.postEncoded(dest, this.world.encode(this.context, GATHER_TAG, batch, "data")),
          );
    this.gathering = gathering;
    const early = this.gatherStash;
    this.gatherStash = [];
    for (const [source, batch] of early) {
      if (batch.e === this.epoch) gathering?.receive(source, batch);
      else if (batch.e > this.epoch) this.gatherStash.push([source, batch]);
    }
    return gathering;
  }

  /** Before the first run: the digest of what this rank put to rank 0, which checks for the same roots everywhere. */
  private tellRoots(initial: readonly PendingPut<T>[]): void {
    const digest = rootsDigest(initial);
    if (this.sameRoots) this.sameRoots.ownRoots(digest);
    else if (digest !== undefined) {
      this.world.postEncoded(0, this.world.encode(this.context, ROOTS_TAG, { d: digest }));
    }
  }

  /**
   * A shared bound for branch and bound (see Bound): a number every rank reads at no cost and any rank can
   * improve; improvements reach every rank at once, during runs and between them. Make bounds in the same
   * order on every rank. `sense`: `max` when larger is better, `min` when smaller is.
   */
  bound(sense: BoundSense, initial: number): Bound {
    if (sense !== "min" && sense !== "max") {
      throw new InvalidArgumentError(`bound: sense must be "min" or "max"; got ${describe(sense)}`);
    }
    if (typeof initial !== "number" || Number.isNaN(initial)) {
      throw new InvalidArgumentError(`bound: initial must be a number; got ${describe(initial)}`);
    }
    const index = this.bounds.next;
    const world = this.world;
    const b = new Bound(sense, initial, (v) => {
      if (world.isClosed) return;
      const bytes = world.encode(this.context, BOUND_TAG, { b: index, v });
      for (let r = 0; r < world.size; r++) if (r !== world.rank) world.postEncoded(r, bytes);
    });
    this.bounds.add(b);
    return b;
  }

  /**
   * Collective, on every rank: a DOALL loop. Runs `body(i)` once for every i in `start` up to `end`
   * (exclusive) as one run of this pool, whose tasks are ranges of indices: each working rank probes the first
   * iterations of its block, cuts the rest into ranges of a grain chosen from the measured iteration time, and
   * the pool moves ranges to ranks that run dry (docs/loops.md). Resolves on every rank like `run`, with
   * `result` the values `body` returned combined with `options.reduce` (sum by default), plus this rank's
   * `loop` figures. The pool must hold no tasks put and not run; put none while the loop runs. Rejects with
   * InvalidArgumentError on bad arguments (naming them), and as `run` does otherwise.
   */
  forEach<R = number>(start: number, end: number, body: LoopBody<R>, options?: LoopOptions<R>): Promise<LoopResult<R>>;
  forEach<R, S>(
    start: number,
    end: number,
    body: LoopBody<R, S>,
    options?: LoopOptions<R>,
  ): Promise<StoppableLoopResult<R, S>>;
  forEach<R>(start: number, end: number, body: LoopBody<R>, options?: LoopOptions<R>): Promise<LoopResult<R>> {
    return forEach(this as Pool<unknown>, this.world, start, end, body, options);
  }

  /**
   * Collective, on every rank: runs `handler(items[i], i)` once for every item, spread over the ranks as
   * `forEach` spreads a loop, and resolves on `options.root` (default 0) to every item's result in item order,
   * and to undefined on the other ranks. Every rank gives the same items. Results travel straight from the rank
   * that ran an item to the root (docs/loops.md, Results per item). Rejects with TaskError naming the item's
   * index (`task`) if a handler threw, with InvalidArgumentError on bad arguments, and as `run` does otherwise.
   */
  map<I, R>(items: readonly I[], handler: MapHandler<I, R>, options?: MapOptions): Promise<R[] | undefined> {
    return mapOn(this as Pool<unknown>, this.world, items, handler, options);
  }

  /** @internal Routes the `map` results that reach this rank to `listener` (first those already here). */
  listenMap(listener: (source: number, body: Record<string, unknown>) => void): void {
    this.mapListener = listener;
    const stash = this.mapStash;
    this.mapStash = [];
    for (const [source, body] of stash) listener(source, body);
  }

  /**
   * @internal Sends a batch of `map` results to rank `dest` at once: encoded here, so a result that cannot
   * travel throws EncodeError in the task that made it; one for a rank that died is dropped.
   */
  postMap(dest: number, body: Record<string, unknown>): void {
    this.world.postEncoded(dest, this.world.encode(this.context, MAP_TAG, body, "data"));
  }

  /** Statistics of the last finished run on this rank, if any. */
  stats(): PoolStats | undefined {
    return this.last;
  }

  /** Collective: every rank's statistics of the last run, indexed by rank, on `root`; undefined elsewhere. */
  async gatherStats(root = 0): Promise<PoolStats[] | undefined> {
    return this.world.gather(this.last ?? emptyStats(this.world.rank, this.config.mode), root);
  }
}

/** The body of `world.pool` (lib/world.ts): a pool on the world's next free context. */
export function createPool<T>(world: Communicator, options?: PoolOptions): Pool<T> {
  world.checkOpen("pool");
  let config: PoolConfig;
  try {
    config = resolvePoolConfig(options, world.env.pool, world.size);
  } catch (e) {
    throw specError(e, world.env.pool, world.size);
  }
  const pool = new Pool<T>(world, world.allocateContext(), config);
  if (world.rank === config.coordinator) warnOneWorker(pool.name, config, world.size, options, world.env.pool);
  return pool;
}

let warnedOneWorker = false;

/**
 * A centralized pool on two ranks whose coordinator only deals has one worker: every task runs on one rank, beside
 * the messages, so the job is slower than a plain loop (a stranger's tree search at `--pool centralized -n 2`:
 * 364 ms against the plain recursion's 337). Said once a process, on the coordinator, unless the app or the spec
 * chose `coordinatorWorks` itself (the seed slides' protocol, which `compare` runs, names it).
 */
function warnOneWorker(
  name: string,
  config: PoolConfig,
  size: number,
  options: PoolOptions | undefined,
  spec: string | undefined,
): void {
  if (warnedOneWorker || size !== 2 || config.mode !== "centralized" || config.coordinatorWorks) return;
  if (options?.coordinatorWorks !== undefined) return;
  if (spec !== undefined && parsePoolSpec(spec).coordinatorWorks !== undefined) return;
  warnedOneWorker = true;
  process.emitWarning(
    `${name}: a centralized pool on 2 ranks has one worker: its coordinator (rank ${config.coordinator}) runs no ` +
      "task, so every task runs on the other rank; `coordinatorWorks: true` (`--pool " +
      "centralized,coordinatorWorks=true`) puts both to work, as does the distributed pool (the default); " +
      "`coordinatorWorks: false` keeps a coordinator that only deals, and this warning away",
    { type: "WorkpoolWarning", code: "WP_ONE_WORKER" },
  );
}

/**
 * `workpool launch` checks `--pool` before any rank starts, but under mpirun or srun WORKPOOL_POOL reaches the
 * ranks unchecked: when the spec alone is what fails, the error names the variable instead of looking like one
 * in the app's own options. Any other error is returned as it is.
 */
function specError(e: unknown, spec: string | undefined, size: number): unknown {
  if (!(e instanceof ConfigError) || spec === undefined) return e;
  try {
    resolvePoolConfig(undefined, spec, size);
    return e;
  } catch (own) {
    return own instanceof ConfigError
      ? new ConfigError(`environment variable ${ENV.pool}=${JSON.stringify(spec)}: ${own.message}`)
      : e;
  }
}

const RUN_OPTIONS = ["concurrency", "signal", "reduce", "gather"];

/** `run`'s options: an object of known keys (a misspelt `reduce` ran with the default sum, and said nothing). */
function checkRunOptions(options: unknown): void {
  if (typeof options !== "object" || options === null) {
    throw new InvalidArgumentError(`run: options must be an object; got ${describe(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!RUN_OPTIONS.includes(key)) {
      throw new InvalidArgumentError(`run: unknown option \`${key}\` (known: ${RUN_OPTIONS.join(", ")})`);
    }
  }
}
