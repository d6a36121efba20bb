import type { WireResult } from "../results.ts";
import type { DetectionStrategy, Detector, DistributedHost } from "../strategy.ts";

/**
 * Messages:
 * TOKEN     r -> next(r)         { q: sum of sent-minus-received counts, b: 1 if black, m: latest task end
 *                                  (epoch ms) seen this round, n: round, r?: partial results }
 */
export const tokenRing: DetectionStrategy = {
  summary: "dual-pass token rings through the root, ~sqrt(size) ranks each (Safra's counts)",
  messages: ["token"],
  create: (host) => new TokenRing(host),
};

interface Token {
  /** Sum of the visited ranks' counts (task messages sent minus received). */
  q: number;
  /** 1 once a visited rank was black. */
  b: number;
  /** Latest task end (epoch ms) on the visited ranks. */
  m: number;
  /** Round number, from 1. */
  n: number;
  /** The visited ranks' partial results (results.ts), when any task returned a value. */
  r?: WireResult;
}

/**
 * The rings of a job of `size` ranks: the ranks other than the root, in order, cut into `count` runs of at
 * most `length` = ceil(sqrt(size - 1)) ranks. Ring i is root -> first(i) -> first(i) + 1 -> ... -> last -> root,
 * so a round takes about sqrt(size) hops instead of size (what one ring costs when each hop waits for a
 * process to be scheduled, 16-64 ranks on 2 cores).
 */
export function ringsOf(size: number): { readonly length: number; readonly count: number } {
  const others = size - 1;
  const length = Math.max(1, Math.ceil(Math.sqrt(others)));
  return { length, count: Math.ceil(others / length) };
}

/**
 * Dual-pass token rings for asynchronous channels that may reorder: Safra's algorithm (EWD 998) with message
 * counts and a sharper colouring rule, over several rings that share the root.
 *
 * Every rank keeps `count` = task messages sent minus task messages received, and `passed` = the round of
 * the last token it passed (on the root: of the last round it evaluated). Every task message carries the
 * sender's `passed` as its stamp. The root, when passive, starts a round: it sends a white token with q = 0
 * into each ring (ringsOf: about sqrt(size) rings of about sqrt(size) ranks, numbered in order from the
 * root). A rank holds the token until it is passive, then adds its count, blackens the token if it is black,
 * turns white, and passes it on to the next rank of its ring (the last one to the root). When every ring's
 * token is back and the root is passive, the root declares termination iff every token is white, the root is
 * white and the tokens' q plus the root's count is 0; otherwise it starts the next round at once.
 *
 * Colour: a rank turns black when it receives a task message stamped later than its own `passed`, i.e. one
 * sent by a rank that had already passed the current round's token, to a rank that has not passed it yet.
 * (Safra blackens on every receipt, which is also correct but fails far more rounds.) The slides'
 * synchronous rule (a sender to an earlier rank turns black) does not survive messages in transit;
 * docs/distributed.md gives a counterexample, and the proof that this rule is correct in any delivery order
 * and over any number of rings (it uses only each rank's cut, the moment it passes the token, never the
 * order of the cuts).
 */
export class TokenRing implements Detector {
  private count = 0;
  private black = false;
  private passed = 0;
  /** A non-root rank: the token it holds until it is passive. */
  private token: Token | undefined;
  /** The root: tokens of the open round still out, and what the returned ones gathered. */
  private out = 0;
  private roundOpen = false;
  private gathered: Token = { q: 0, b: 0, m: 0, n: 0 };
  private readonly next: number;
  private readonly firsts: number[] = [];

  constructor(private readonly host: DistributedHost) {
    const { rank, size } = host.rt;
    const { length, count } = ringsOf(size);
    // Positions count from the root (position 0), so any root rank works.
    const at = (position: number) => (host.root + position) % size;
    const position = (rank - host.root + size) % size;
    for (let i = 0; i < count; i++) this.firsts.push(at(1 + i * length));
    const lastOfRing = position > 0 && (position % length === 0 || position === size - 1);
    this.next = position === 0 || lastOfRing ? host.root : at(position + 1);
  }

  get stamp(): number {
    return this.passed;
  }

  sent(): void {
    this.count++;
  }

  received(_source: number, stamp: number): void {
    this.count--;
    if (stamp > this.passed) {
      this.black = true;
      this.host.rt.count("blackenings");
    }
  }

  idle(): void {
    this.advance();
  }

  onMessage(_source: number, kind: string, body: Record<string, unknown>): void {
    if (kind !== "token") return;
    const token = body as unknown as Token;
    if (this.host.rt.rank !== this.host.root) {
      this.token = token;
    } else {
      // One ring's token is back: it joins what the others brought (results merge at once).
      this.host.rt.results.merge(token.r);
      const g = this.gathered;
      g.q += token.q;
      g.b |= token.b;
      if (token.m > g.m) g.m = token.m;
      this.out--;
    }
    this.advance();
  }

  /** Acts on the token this rank holds (or, on the root, evaluates and starts rounds) once it is passive. */
  private advance(): void {
    const host = this.host;
    if (!host.passive) return;
    const { rt } = host;
    if (rt.rank !== host.root) {
      const token = this.token;
      if (!token) return;
      this.token = undefined;
      const next: Token = {
        q: token.q + this.count,
        b: this.black ? 1 : token.b,
        m: Math.max(token.m, host.lastActivityAt),
        n: token.n,
      };
      // This rank's results since it last passed the token ride along; a round that fails still delivers them.
      rt.results.merge(token.r);
      const r = rt.results.take();
      if (r) next.r = r;
      this.black = false;
      this.passed = token.n;
      rt.count("tokensPassed");
      rt.trace?.instant(`token ${token.n} passed`, { q: next.q, black: next.b });
      host.send(this.next, "token", next as unknown as Record<string, unknown>);
      return;
    }
    if (this.roundOpen) {
      if (this.out > 0) return;
      this.roundOpen = false;
      const g = this.gathered;
      this.passed = g.n;
      if (g.b === 0 && !this.black && g.q + this.count === 0) {
        host.terminate(Math.max(g.m, host.lastActivityAt));
        return;
      }
    }
    this.roundOpen = true;
    this.black = false;
    const round = this.passed + 1;
    this.gathered = { q: 0, b: 0, m: 0, n: round };
    rt.count("tokenRounds");
    rt.trace?.instant(`token round ${round} starts`, { rings: this.firsts.length });
    this.out = this.firsts.length;
    for (const first of this.firsts) host.send(first, "token", { q: 0, b: 0, m: host.lastActivityAt, n: round });
    // No other rank (a pool of one): the round is over at once.
    if (this.out === 0) this.advance();
  }
}
