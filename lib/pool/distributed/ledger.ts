import type { TaskKey } from "../keys.ts";
import type { WireResult } from "../results.ts";

/**
 * A task as a distributed pool that survives deaths (resilient.ts) queues, runs and moves it: the app's task
 * plus what the root's ledger knows it by.
 */
export interface Entry<T> {
  /** The app's task. */
  readonly t: T;
  /** Ledger id, unique in the run (0: put on this rank since its last commit; the root has not heard of it). */
  i: number;
  /** How many times it moved between ranks: of two reports of where it is, the root keeps the later move's. */
  h: number;
  /** Priority, when not 0. */
  p?: number;
  /** Locality key, when it has one. */
  k?: TaskKey;
  /** Set on the rank that ran it, once it finished there (never travels: a finished task is not moved). */
  d?: 1;
}

/**
 * COMMIT    rank -> root        one message that moves the root's ledger of what the rank holds from one exact
 *                               state to the next (resilient.ts says when a rank sends one):
 * { s: sequence (applied in this order),
 *   h?, ht, hp?, hk?: ids, tasks, priorities and keys of the tasks put here since the last commit and still
 *                     held here (queued, running, or about to leave in the transfer this commit precedes),
 *   v?: transfers received since the last commit, flattened: source, transfer number, n, then n (id, moves),
 *   l?: the transfer this commit precedes: destination, transfer number, n, then n (id, moves),
 *   x?: ledger ids finished here since the last commit,
 *   d?: ranks whose death this rank has learnt since the last commit (it takes no message from them now),
 *   r?: the partial result of every task finished here since the last commit,
 *   p: 1 if the rank is passive (nothing queued, running or waiting to leave), m: its latest task end }
 * ACK       root -> rank        { a: sequence numbers }  these commits, each preceding a transfer, are applied:
 *                               the transfers may leave (a receiver must never hold a task whose giver's
 *                               commit could still be lost with the giver)
 */
export interface Commit {
  s: number;
  h?: number[];
  ht?: unknown[];
  hp?: number[];
  hk?: (TaskKey | null)[];
  v?: number[];
  l?: number[];
  x?: number[];
  d?: number[];
  r?: WireResult;
  p: 0 | 1;
  m: number;
}

/** The root's record of one ledger task: who holds it, after how many moves, and the task to re-deal. */
interface Rec<T> {
  holder: number;
  hop: number;
  entry: Entry<T> | undefined;
  done: boolean;
}

/** A transfer whose giver's commit arrived before its receiver's receipt: where its tasks went, and how far. */
interface Lent {
  readonly dest: number;
  /** id, moves, id, moves, ... */
  readonly pairs: number[];
}

/** A death whose re-dealing waits for every live rank's answer (its commit naming the death). */
interface PendingDeath {
  readonly rank: number;
  readonly waiting: Set<number>;
}

/** What applying commits or a death gave the root to do. */
export interface LedgerNews<T> {
  /** Tasks to run again (they join the root's queue). */
  readonly redeal: Entry<T>[];
  /** Ids of tasks the root must re-deal but never got the contents of (see `lost`). */
  readonly lost: number[];
  /** Sequence numbers of applied commits that precede a transfer: the giver waits for them (ACK). */
  readonly acks: number[];
}

const transferKey = (source: number, n: number): number => n * 65536 + source;

/**
 * The root's ledger of a distributed pool that survives deaths (resilient.ts): for every task some other
 * rank holds, which rank holds it, and the task itself, so that a dead rank's tasks can be run again.
 * The root never dies (the launcher ends the job if it does), so its own tasks are in no ledger.
 *
 * Exactly once: a rank's ledger changes only by its commits, applied in the order sent, and a commit carries
 * the values of the tasks it reports finished together with the tasks they put (still held, or in the same
 * commit's transfer). A transfer is preceded by a commit naming its tasks, so each task of the run is either
 * in the ledger at its holder or was put since its holder's last commit by a task that is still in that
 * holder's ledger. A task that moves is recorded twice, by its giver's commit (`l`) and by its receiver's
 * (`v`), in either order; `h` (moves so far) decides which is later.
 *
 * When rank D dies, the root first waits for every live rank's answer (a commit naming D: everything D sent it
 * that it will ever take is in that commit's receipts), then re-deals every unfinished task it records at D,
 * and the tasks of D's transfers that their live receiver never took.
 */
export class Ledger<T> {
  private readonly recs = new Map<number, Rec<T>>();
  /** Unfinished records held by a rank other than the root. */
  private open = 0;
  private readonly nextSeq: number[];
  private readonly early: Map<number, Commit>[];
  private readonly committed: Uint8Array;
  private readonly passive: Uint8Array;
  private readonly dead: Uint8Array;
  /** Deaths re-dealt already: a late report of a task at such a rank re-deals it at once. */
  private readonly settled: Uint8Array;
  /** Live ranks, not the root, whose latest commit (or none yet) says they are not passive. */
  private active: number;
  private readonly lent = new Map<number, Lent>();
  private readonly acked = new Set<number>();
  /** Deaths each rank has answered (possibly before the root heard of them). */
  private readonly answered: Set<number>[];
  private readonly pending: PendingDeath[] = [];
  /** Latest task end in any applied commit (epoch ms). */
  lastActivity = 0;

  constructor(
    private readonly size: number,
    private readonly root: number,
  ) {
    this.nextSeq = new Array<number>(size).fill(1);
    this.early = Array.from({ length: size }, () => new Map<number, Commit>());
    this.committed = new Uint8Array(size);
    this.passive = new Uint8Array(size);
    this.dead = new Uint8Array(size);
    this.settled = new Uint8Array(size);
    this.answered = Array.from({ length: size }, () => new Set<number>());
    this.active = size - 1;
  }

  /** Unfinished tasks the ledger records at `rank`. */
  heldBy(rank: number): number {
    let n = 0;
    for (const r of this.recs.values()) if (r.holder === rank && !r.done) n++;
    return n;
  }

  /**
   * True when nothing is left anywhere: every live rank's latest commit says it is passive, no task is
   * recorded at a rank other than the root, and no death waits for answers. (The root checks its own queue.)
   */
  get quiescent(): boolean {
    return this.active === 0 && this.open === 0 && this.pending.length === 0;
  }

  /**
   * A commit from `source` arrived. Applies it, and any that were waiting for it, in order; returns the partial
   * results to merge, and what to re-deal.
   */
  apply(source: number, c: Commit, news: LedgerNews<T>, results: WireResult[]): void {
    if (this.dead[source] === 1) return;
    if (c.s !== this.nextSeq[source]) {
      (this.early[source] as Map<number, Commit>).set(c.s, c);
      return;
    }
    let next: Commit | undefined = c;
    while (next !== undefined) {
      this.applyOne(source, next, news);
      if (next.r !== undefined) results.push(next.r);
      if (next.l !== undefined) news.acks.push(next.s);
      const s: number = (this.nextSeq[source] as number) + 1;
      this.nextSeq[source] = s;
      const early = this.early[source] as Map<number, Commit>;
      next = early.get(s);
      if (next !== undefined) early.delete(s);
    }
  }

  private applyOne(w: number, c: Commit, news: LedgerNews<T>): void {
    const { h, ht, hp, hk, v, l, x, d } = c;
    if (h !== undefined) {
      const tasks = ht as unknown[];
      for (let i = 0; i < h.length; i++) {
        const id = h[i] as number;
        const entry: Entry<T> = { t: tasks[i] as T, i: id, h: 0 };
        const p = hp?.[i];
        if (p !== undefined && p !== 0) entry.p = p;
        const k = hk?.[i];
        if (k !== undefined && k !== null) entry.k = k;
        const rec = this.recs.get(id);
        if (rec === undefined) this.add(id, w, 0, entry, news);
        else if (rec.entry === undefined && !rec.done) rec.entry = entry;
      }
    }
    if (v !== undefined) {
      for (let at = 0; at < v.length;) {
        const source = v[at] as number;
        const key = transferKey(source, v[at + 1] as number);
        const n = v[at + 2] as number;
        if (source !== this.root) {
          if (this.lent.has(key)) this.lent.delete(key);
          else this.acked.add(key);
        }
        at += 3;
        for (let j = 0; j < n; j++, at += 2) this.move(v[at] as number, w, v[at + 1] as number, news);
      }
    }
    if (l !== undefined) {
      const dest = l[0] as number;
      const key = transferKey(w, l[1] as number);
      if (dest === this.root) {
        // Tasks on their way to the root stay the giver's until the root takes them (receivedAtRoot): until
        // then they keep the run going, and the giver's death re-deals them if they never arrive.
        this.acked.delete(key);
      } else {
        const pairs = l.slice(3);
        for (let at = 0; at < pairs.length; at += 2)
          this.move(pairs[at] as number, dest, pairs[at + 1] as number, news);
        if (this.acked.has(key)) this.acked.delete(key);
        else this.lent.set(key, { dest, pairs });
      }
    }
    if (x !== undefined) {
      for (const id of x) {
        const rec = this.recs.get(id);
        if (rec === undefined) this.recs.set(id, { holder: w, hop: 0, entry: undefined, done: true });
        else if (!rec.done) {
          if (rec.holder !== this.root) this.open--;
          rec.done = true;
          rec.entry = undefined;
        }
      }
    }
    if (d !== undefined) {
      const answered = this.answered[w] as Set<number>;
      for (const rank of d) {
        answered.add(rank);
        for (const p of this.pending) if (p.rank === rank) p.waiting.delete(w);
      }
    }
    if (c.m > this.lastActivity) this.lastActivity = c.m;
    const was = this.committed[w] === 1 && this.passive[w] === 1;
    this.committed[w] = 1;
    this.passive[w] = c.p;
    const is = c.p === 1;
    if (was && !is) this.active++;
    else if (!was && is) this.active--;
    if (d !== undefined) this.settle(news);
  }

  /**
   * The root itself received a transfer (it takes no message from a rank it knows dead). The giver's commit
   * naming it was applied before it left (ACK), and left it recorded at the giver: now it is the root's.
   */
  receivedAtRoot(entries: readonly Entry<T>[], news: LedgerNews<T>): void {
    for (const e of entries) this.move(e.i, this.root, e.h, news);
  }

  /** The root sent `e` to `dest` (its move count already raised): the ledger holds it there from now. */
  sentFromRoot(e: Entry<T>, dest: number, news: LedgerNews<T>): void {
    const rec = this.recs.get(e.i);
    if (rec === undefined) this.add(e.i, dest, e.h, e, news);
    else {
      if (rec.entry === undefined) rec.entry = e;
      this.move(e.i, dest, e.h, news);
    }
  }

  private add(id: number, holder: number, hop: number, entry: Entry<T> | undefined, news: LedgerNews<T>): void {
    const rec: Rec<T> = { holder, hop, entry, done: false };
    this.recs.set(id, rec);
    if (holder !== this.root) this.open++;
    if (this.settled[holder] === 1) this.redeal(id, rec, news);
  }

  /** Task `id` is at `holder` after `hop` moves, unless a later move is known or it finished. */
  private move(id: number, holder: number, hop: number, news: LedgerNews<T>): void {
    const rec = this.recs.get(id);
    if (rec === undefined) {
      this.add(id, holder, hop, undefined, news);
      return;
    }
    if (rec.done || hop <= rec.hop) return;
    if (rec.holder !== this.root) this.open--;
    rec.holder = holder;
    rec.hop = hop;
    if (holder !== this.root) this.open++;
    if (this.settled[holder] === 1) this.redeal(id, rec, news);
  }

  /** The root takes an unfinished task back to run it again. */
  private redeal(id: number, rec: Rec<T>, news: LedgerNews<T>): void {
    if (rec.done || rec.holder === this.root) return;
    this.open--;
    rec.holder = this.root;
    if (rec.entry === undefined) {
      news.lost.push(id);
      return;
    }
    // The copy the root runs (or sends on) carries the move count the ledger has.
    rec.entry.h = rec.hop;
    delete rec.entry.d;
    news.redeal.push(rec.entry);
  }

  /** Rank `rank` died: its tasks are re-dealt once every live rank has answered (at once if all have). */
  death(rank: number, news: LedgerNews<T>): void {
    if (rank === this.root || this.dead[rank] === 1) return;
    this.dead[rank] = 1;
    if (!(this.committed[rank] === 1 && this.passive[rank] === 1)) this.active--;
    for (const p of this.pending) p.waiting.delete(rank);
    const waiting = new Set<number>();
    for (let r = 0; r < this.size; r++) {
      if (r !== this.root && this.dead[r] === 0 && !(this.answered[r] as Set<number>).has(rank)) waiting.add(r);
    }
    this.pending.push({ rank, waiting });
    this.settle(news);
  }

  /** Re-deals each dead rank whose death every live rank has answered. */
  private settle(news: LedgerNews<T>): void {
    for (let i = 0; i < this.pending.length;) {
      const p = this.pending[i] as PendingDeath;
      if (p.waiting.size > 0) {
        i++;
        continue;
      }
      this.pending.splice(i, 1);
      const dead = p.rank;
      this.settled[dead] = 1;
      for (const [id, rec] of this.recs) if (rec.holder === dead) this.redeal(id, rec, news);
      // Its transfers that a live receiver never took (the receiver's answer came, without their receipt).
      for (const [key, lent] of this.lent) {
        if (key % 65536 !== dead) continue;
        this.lent.delete(key);
        const { pairs } = lent;
        for (let at = 0; at < pairs.length; at += 2) {
          const id = pairs[at] as number;
          const rec = this.recs.get(id);
          if (rec !== undefined && rec.holder === lent.dest && rec.hop === pairs[at + 1]) this.redeal(id, rec, news);
        }
      }
    }
  }
}
