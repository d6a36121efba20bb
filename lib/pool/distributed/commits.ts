/**
 * What a rank other than the root of a distributed pool that survives deaths (resilient.ts) tells the root's
 * ledger (ledger.ts): the contents of its next COMMIT, gathered as the rank works (the tasks put here, received,
 * finished, the deaths it learnt of, its tasks' partial results), and when a commit is due. Sending one, and
 * deciding when it must go (before a transfer, on going passive), is resilient.ts's; `next` empties what it
 * reports, so that every fact reaches the ledger in exactly one commit.
 */
import { now } from "../executor.ts";
import type { TaskKey } from "../keys.ts";
import type { Results } from "../results.ts";
import type { Commit, Entry } from "./ledger.ts";

/** How often a working rank reads the clock to see whether a commit is due (ms of tasks), at most every this many tasks. */
const CLOCK_EVERY_MS = 0.1;
const MAX_CLOCK_STRIDE = 64;
/** Puts after which the finished entries are dropped from a rank's list of fresh ones, at the least. */
const FRESH_COMPACT = 1024;

export class Commits<T> {
  private seq = 0;
  /**
   * Entries put here since the last commit (those not finished by then are held: they enter the ledger). The
   * finished ones are dropped every `compactAt` puts (`addFresh`): kept to the commit, 100 ms of a fine-grained
   * tree's tasks outlived the young generation, and the old one's collections cost a third of the rank's time.
   */
  private fresh: Entry<T>[] = [];
  private compactAt = FRESH_COMPACT;
  private finished: number[] = [];
  private receipts: number[] = [];
  private deaths: number[] = [];
  private ranSinceCommit = 0;
  private lastCommit = Number.NEGATIVE_INFINITY;
  /**
   * Tasks until the clock is next read for a commit that is due, how many go between reads, and the last read:
   * about every CLOCK_EVERY_MS of tasks, since a read per task costs as much as a fine-grained task.
   */
  private clockIn = 1;
  private clockEvery = 1;
  private clockAt = 0;
  private lastPassive = false;

  constructor(
    /** The most time between two commits while the rank works, ms (0: a commit at the start of every task). */
    private readonly commitMs: number,
    /** The run's results: each commit takes the partial result of the tasks finished since the last. */
    private readonly results: Results,
    /** A new ledger id, unique in the run. */
    private readonly newId: () => number,
  ) {}

  /** Whether the latest commit said this rank was passive. */
  get passive(): boolean {
    return this.lastPassive;
  }

  /** At the start of a task: whether a commit is due (commitMs passed since the last), reading the clock now and then. */
  due(): boolean {
    if (--this.clockIn > 0) return false;
    const t = now();
    const per = (t - this.clockAt) / this.clockEvery;
    this.clockAt = t;
    this.clockEvery =
      this.commitMs === 0 ? 1 : per > 0 ? Math.max(1, Math.min(MAX_CLOCK_STRIDE, Math.floor(CLOCK_EVERY_MS / per))) : 1;
    this.clockIn = this.clockEvery;
    return t - this.lastCommit >= this.commitMs;
  }

  /** `e` was put here: the next commit reports it, if it is not finished by then. */
  addFresh(e: Entry<T>): void {
    const fresh = this.fresh;
    fresh.push(e);
    if (fresh.length < this.compactAt) return;
    let kept = 0;
    for (const f of fresh) if (f.d !== 1) fresh[kept++] = f;
    fresh.length = kept;
    // Amortized: at least as many puts again as there are entries left before the next pass over them.
    this.compactAt = Math.max(FRESH_COMPACT, 2 * kept);
  }

  /** The task `e` ended here: the next commit reports its end. */
  ended(e: Entry<T>): void {
    e.d = 1;
    this.ranSinceCommit++;
    if (e.i !== 0) this.finished.push(e.i);
  }

  /** Transfer `n` from `source` arrived with `entries`: the next commit reports their receipt. */
  received(source: number, n: number, entries: readonly Entry<T>[]): void {
    const r = this.receipts;
    r.push(source, n, entries.length);
    for (const e of entries) r.push(e.i, e.h);
  }

  /** This rank learnt of `rank`'s death: the next commit is its answer. */
  died(rank: number): void {
    this.deaths.push(rank);
  }

  /** Whether anything happened here since the last commit. */
  hasNews(): boolean {
    return (
      this.ranSinceCommit > 0 ||
      this.fresh.length > 0 ||
      this.finished.length > 0 ||
      this.receipts.length > 0 ||
      this.deaths.length > 0
    );
  }

  /**
   * The next COMMIT, with everything since the last: `passive` and `lastActivityAt` are the rank's now; `dest`,
   * `n`, `entries`: the transfer it precedes (its tasks, taken from the queues already, have their ids and move
   * counts set here).
   */
  next(passive: boolean, lastActivityAt: number, dest?: number, n?: number, entries?: readonly Entry<T>[]): Commit {
    const c: Commit = { s: ++this.seq, p: passive ? 1 : 0, m: lastActivityAt };
    const fresh = this.fresh;
    if (fresh.length > 0) {
      let h: number[] | undefined;
      let ht: unknown[] = [];
      let hp: number[] | undefined;
      let hk: (TaskKey | null)[] | undefined;
      for (const e of fresh) {
        if (e.d === 1) continue;
        const id = this.newId();
        e.i = id;
        if (h === undefined) {
          h = [];
          ht = [];
        }
        if (e.p !== undefined && hp === undefined) hp = new Array<number>(h.length).fill(0);
        if (e.k !== undefined && hk === undefined) hk = new Array<TaskKey | null>(h.length).fill(null);
        h.push(id);
        ht.push(e.t);
        hp?.push(e.p ?? 0);
        hk?.push(e.k ?? null);
      }
      this.fresh = [];
      this.compactAt = FRESH_COMPACT;
      if (h !== undefined) {
        c.h = h;
        c.ht = ht;
        if (hp !== undefined) c.hp = hp;
        if (hk !== undefined) c.hk = hk;
      }
    }
    if (this.receipts.length > 0) {
      c.v = this.receipts;
      this.receipts = [];
    }
    if (entries !== undefined) {
      const l = [dest as number, n as number, entries.length];
      for (const e of entries) l.push(e.i, ++e.h);
      c.l = l;
    }
    if (this.finished.length > 0) {
      c.x = this.finished;
      this.finished = [];
    }
    if (this.deaths.length > 0) {
      c.d = this.deaths;
      this.deaths = [];
    }
    const r = this.results.take();
    if (r !== undefined) c.r = r;
    this.ranSinceCommit = 0;
    this.lastCommit = now();
    this.lastPassive = passive;
    return c;
  }
}
