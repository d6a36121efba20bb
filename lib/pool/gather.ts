/**
 * Results handed back by key (issue 29): a run with the option `gather` lets its tasks call `ctx.give(key,
 * value)`, and `run` resolves on the gathering rank (the root) with `gathered`, a Map of every key given to its
 * value. It is the keyed sibling of `map` for task trees, whose tasks the app did not list up front: Ray's tasks
 * return an object ref each, Dask's futures are gathered by key, X10 GLB folds results into one value; here a
 * task gives as many keyed values as it likes (none, one, one per leaf), and a handler needs no messaging.
 *
 * The data path is map's: a rank holds the values its tasks give and sends them to the root as one message of
 * keys and values when it holds GATHER_FLUSH of them or a large one, and when its run ends; straight to the root,
 * never through another rank. The root cannot know how many values are coming (a tree's size is not known), so
 * each rank ends with a `done` message after its last values: ZeroMQ keeps the order of one rank's messages to
 * another, so the root holds every value once it has every live rank's `done`. Every rank passes the same
 * `gather` (SPMD): a rank without it sends no `done`, which the root notices when that rank's next run of the
 * pool reaches it (InvalidArgumentError).
 *
 * Exactly once under `retries` (centralized, root the coordinator): a task's values are sent when the task
 * returns, before the commit that counts it, down the same connection, so a committed task's values have
 * reached the root; a task re-run after a death gives its keys again, and the root keeps the first value of a
 * key. So does a run without retries: a key given twice keeps its first value (give each key once).
 */
import type { Communicator } from "../comm/world.ts";
import { arrivesAsItIs, findUnsendable, sampledCheck, where } from "../comm/unsendable.ts";
import { deferred } from "../deferred.ts";
import { describe, EncodeError, InvalidArgumentError } from "../errors.ts";
import type { GatherKey, GatherOptions, TaskContext, TaskHandler } from "./types.ts";

/** A rank sends the values it holds once it holds this many. */
const GATHER_FLUSH = 4096;
/** A value of at least this many bytes (a typed array, a Buffer) is sent at once, with those held before it. */
const LARGE_BYTES = 64 * 1024;

/** A batch on the wire: the run's epoch, then keys and values in step; or the sender's last message of the run. */
export interface GatherBatch {
  e: number;
  k?: GatherKey[];
  v?: unknown[];
  done?: true;
}

/** Resolves the run option `gather` to the root's rank, or undefined without it; checks it up front. */
export function gatherRoot(
  option: boolean | GatherOptions | undefined,
  world: Communicator,
  coordinator: number,
  resilient: boolean,
): number | undefined {
  if (option === undefined || option === false) return undefined;
  if (option !== true && (typeof option !== "object" || option === null)) {
    throw new InvalidArgumentError(`run: option \`gather\` must be true or { root }; got ${describe(option)}`);
  }
  const root = option === true ? (resilient ? coordinator : 0) : (option.root ?? (resilient ? coordinator : 0));
  if (!Number.isInteger(root) || root < 0 || root >= world.size) {
    throw new InvalidArgumentError(
      `run: option \`gather.root\` must be a rank in 0..${world.size - 1}; got ${describe(root)}`,
    );
  }
  if (world.deadRanks.includes(root)) {
    throw new InvalidArgumentError(`run: option \`gather.root\` names rank ${root}, which died`);
  }
  if (resilient && world.size > 1 && root !== coordinator) {
    throw new InvalidArgumentError(
      `run: option \`gather.root\` must be the coordinator (rank ${coordinator}) of a pool with \`retries\`, ` +
        `so that a dead worker's values are counted once; got ${root}`,
    );
  }
  return root;
}

/** One run's gathering on one rank: `give` from tasks, `receive` from the pool's router, `finish` at the end. */
export class Gathering {
  /** On the root: every key given, with its first value. */
  readonly gathered: Map<GatherKey, unknown> | undefined;
  private keys: GatherKey[] = [];
  private values: unknown[] = [];
  private given = 0;
  /** On the root: ranks whose `done` has arrived. */
  private readonly finished = new Set<number>();
  private readonly complete = deferred();
  private closed = false;

  constructor(
    private readonly world: Communicator,
    private readonly root: number,
    readonly epoch: number,
    private readonly pool: string,
    private readonly post: (dest: number, batch: GatherBatch) => void,
  ) {
    this.gathered = world.rank === root ? new Map() : undefined;
  }

  get collecting(): boolean {
    return this.gathered !== undefined;
  }

  /** ctx.give: keeps `value` under `key` (sent to the root with the next batch). */
  give(key: GatherKey, value: unknown): void {
    if (this.closed) return; // a handler still running after its run ended: counts nowhere (as its puts)
    if (!((typeof key === "number" && Number.isFinite(key)) || typeof key === "string")) {
      throw new InvalidArgumentError(`give: key must be a string or a finite number; got ${describe(key)}`);
    }
    if (sampledCheck(this.given++) && !arrivesAsItIs(value)) {
      const found = findUnsendable(value, true);
      const what = found ? `${where("value", found.path)} ${found.what}` : "value cannot be encoded";
      throw new EncodeError(`give: ${what}; a given value travels to the gathering rank, so give plain data`);
    }
    const gathered = this.gathered;
    if (gathered) {
      if (!gathered.has(key)) gathered.set(key, value);
      return;
    }
    this.keys.push(key);
    this.values.push(value);
    if (this.keys.length >= GATHER_FLUSH || (ArrayBuffer.isView(value) && value.byteLength >= LARGE_BYTES)) {
      this.flush();
    }
  }

  /** Sends the values held (a pool with `retries` calls this as each task returns, before its commit). */
  flush(): void {
    if (this.keys.length === 0 || this.closed) return;
    const batch: GatherBatch = { e: this.epoch, k: this.keys, v: this.values };
    this.keys = [];
    this.values = [];
    this.post(this.root, batch);
  }

  /** A batch from another rank (the pool routes those of this run's epoch here). */
  receive(source: number, batch: GatherBatch): void {
    const gathered = this.gathered;
    if (!gathered) return;
    const { k, v } = batch;
    if (k && v) {
      for (let i = 0; i < k.length; i++) {
        const key = k[i] as GatherKey;
        if (!gathered.has(key)) gathered.set(key, v[i]);
      }
    }
    if (batch.done) {
      this.finished.add(source);
      this.checkComplete();
    }
  }

  /**
   * On the root: a message of run `epoch` of this pool came from `source`. A rank in a later run has ended this
   * one, so its `done` should be here: it is not, so that rank ran without `gather` (the ranks disagree).
   */
  heardFrom(source: number, epoch: number): void {
    if (this.gathered && typeof epoch === "number" && epoch > this.epoch && !this.finished.has(source)) {
      this.disagree(source, `began run ${epoch}`);
    }
  }

  private disagree(source: number, what: string): void {
    this.complete.reject(
      new InvalidArgumentError(
        `run: rank ${source} ${what} of ${this.pool} without sending what it gave in run ${this.epoch}: ` +
          "every rank must pass the same option `gather` to run",
      ),
    );
  }
  // A rank that ran without `gather` and then closed its world is not told apart here: its `leaving` comes
  // through the launcher, so it can overtake a `done` still on its way, and would be a false alarm.

  private checkComplete(): void {
    const dead = this.world.deadRanks;
    for (let r = 0; r < this.world.size; r++) {
      if (r !== this.root && !this.finished.has(r) && !dead.includes(r)) return;
    }
    this.complete.resolve();
  }

  /**
   * After the run ended on this rank (completed or stopped): a rank other than the root sends what it holds and
   * its `done`; the root waits for every live rank's `done` (a rank that died counts as done: under `retries`
   * its committed tasks' values have arrived, and the others ran again elsewhere).
   */
  async finish(): Promise<Map<GatherKey, unknown> | undefined> {
    if (!this.gathered) {
      this.flush();
      this.closed = true;
      this.post(this.root, { e: this.epoch, done: true });
      return undefined;
    }
    this.closed = true;
    const offDeath = this.world.onPeerDeath(() => this.checkComplete());
    const offFailure = this.world.onFailure((e) => this.complete.reject(e));
    try {
      this.checkComplete();
      await this.complete.promise;
    } finally {
      offDeath();
      offFailure();
    }
    return this.gathered;
  }

  /** The run failed: values held are dropped, and later gives count nowhere. */
  close(): void {
    this.closed = true;
    this.keys = [];
    this.values = [];
  }
}

/** A handler whose task sends the values it gave as it returns (or throws): under `retries`, before its commit. */
export function flushingAfter<T, R, S>(handler: TaskHandler<T, R, S>, gathering: Gathering): TaskHandler<T, R, S> {
  return (task: T, ctx: TaskContext<T, S>) => {
    let out: ReturnType<TaskHandler<T, R, S>>;
    try {
      out = handler(task, ctx);
    } catch (e) {
      gathering.flush();
      throw e;
    }
    if (typeof out === "object" && out !== null && typeof (out as { then?: unknown }).then === "function") {
      return (out as Promise<R | void>).finally(() => gathering.flush());
    }
    gathering.flush();
    return out;
  };
}
