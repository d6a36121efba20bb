import { RankFailedError } from "../errors.ts";

/**
 * The ranks that have gone, as one process knows them: those that died (the launcher told it), with why, in the
 * order it learnt it; and those that closed their world (left), with what each had begun as it closed. Also what
 * this rank has begun itself (`trackProgress`), which the others learn when it closes (close.ts), and the
 * listeners of deaths and leaves. Ranks here are world ranks; the router applies a death to its matchers
 * (Router#peerDied), a communicator translates ranks to its own.
 */
export class Departures {
  /** Ranks that died, in the order this process learnt it, with why (see `died`). The router reads it per message. */
  readonly dead = new Map<number, string>();
  private readonly deathListeners = new Set<(rank: number, why: string) => void>();
  /** Counters of what this rank has begun in a context (a pool's runs), sent to every rank when it closes. */
  private readonly progress = new Map<number, () => number>();
  /** Ranks that closed their world, with their counters (`progress`) as they closed. */
  private readonly leavers = new Map<number, ReadonlyMap<number, number>>();
  private readonly leaveListeners = new Set<(rank: number, progress: ReadonlyMap<number, number>) => void>();
  private readonly rank: number;
  private readonly size: number;

  /** `rank`: this process's world rank; `size`: the world's. */
  constructor(rank: number, size: number) {
    this.rank = rank;
    this.size = size;
  }

  /**
   * Records that world rank `rank` died, `why` says how; false, recording nothing, for this process's own rank,
   * a rank out of the world, or one already known dead. The caller applies the death, then calls `tellDeath`.
   */
  died(rank: number, why: string): boolean {
    if (rank === this.rank || !Number.isInteger(rank) || rank < 0 || rank >= this.size) return false;
    if (this.dead.has(rank)) return false;
    this.dead.set(rank, why);
    return true;
  }

  /** Tells the `onPeerDeath` listeners that world rank `rank` died (once `died` recorded it). */
  tellDeath(rank: number, why: string): void {
    for (const listener of [...this.deathListeners]) listener(rank, why);
  }

  /**
   * The RankFailedError a call gets for world rank `rank`, rank `there` of the communicator called, which died;
   * `collective`: the call is a collective, which that death broke.
   */
  deadError(rank: number, there: number, call: string, collective = false): RankFailedError {
    const who = rank === there ? `rank ${rank}` : `rank ${there} (world rank ${rank})`;
    const broken = collective ? "; a communicator that lost a rank can run no more collectives" : "";
    return new RankFailedError(there, `${call}: ${who} died: ${this.dead.get(rank) ?? "unknown"}${broken}`);
  }

  /** True once this process knows world rank `rank` died. */
  isDead(rank: number): boolean {
    return this.dead.has(rank);
  }

  /** The ranks that died, world ranks in the order this process learnt it. */
  get deadRanks(): number[] {
    return [...this.dead.keys()];
  }

  /** The first of `members` (world ranks) that died, if any: a communicator of them can run no collectives. */
  brokenBy(members: readonly number[] | undefined): number | undefined {
    if (this.dead.size === 0) return undefined;
    for (const rank of this.dead.keys()) if (!members || members.includes(rank)) return rank;
    return undefined;
  }

  /**
   * Calls `listener(rank, why)` for every death `died` records (world ranks), first for those already known, in
   * order. Returns a function that removes it.
   */
  onPeerDeath(listener: (rank: number, why: string) => void): () => void {
    for (const [rank, why] of this.dead) listener(rank, why);
    this.deathListeners.add(listener);
    return () => this.deathListeners.delete(listener);
  }

  /**
   * Counts what this rank begins in `context` (a pool's runs): `count()` is sent to every other rank when this
   * one closes, so that a rank still waiting for this one to begin more of it learns it never will (`onLeave`).
   */
  trackProgress(context: number, count: () => number): void {
    this.progress.set(context, count);
  }

  /**
   * What this rank has begun, as [context, count] pairs, for the other ranks as it closes. A context with
   * nothing begun is left out: a rank that never made the pool has begun none of its runs.
   */
  progressNow(): (readonly [number, number])[] {
    return [...this.progress].map(([context, count]) => [context, count()] as const).filter(([, n]) => n !== 0);
  }

  /**
   * Calls `listener(rank, progress)` for every rank that closed its world (world ranks), with its counters
   * (`trackProgress`: context to count) as it closed; first for those already known. Returns a function that
   * removes it.
   */
  onLeave(listener: (rank: number, progress: ReadonlyMap<number, number>) => void): () => void {
    for (const [rank, progress] of this.leavers) listener(rank, progress);
    this.leaveListeners.add(listener);
    return () => this.leaveListeners.delete(listener);
  }

  /** World rank `rank` closed its world; `data` is its counters, as [context, count] pairs. */
  left(rank: number, data: unknown): void {
    if (rank === this.rank || this.leavers.has(rank) || !Array.isArray(data)) return;
    const progress = new Map<number, number>(data as [number, number][]);
    this.leavers.set(rank, progress);
    for (const listener of [...this.leaveListeners]) listener(rank, progress);
  }
}
