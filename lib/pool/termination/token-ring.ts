import type { WireResult } from "../results.ts";
import type { DetectionStrategy, Detector, DistributedHost } from "../strategy.ts";

/**
 * Messages:
 * TOKEN     r -> r+1 (mod size)  { q: sum of sent-minus-received counts, b: 1 if black, m: latest task end
 *                                  (epoch ms) seen this round, n: round, r?: partial results }
 */
export const tokenRing: DetectionStrategy = {
  summary: "dual-pass token ring (Safra's counts, a sharper colour rule)",
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
 * Dual-pass token ring for asynchronous channels that may reorder: Safra's algorithm (EWD 998) with message
 * counts, and a sharper colouring rule.
 *
 * Every rank keeps `count` = task messages sent minus task messages received, and `passed` = the round of
 * the last token it passed (on the root: of the last round it evaluated). Every task message carries the
 * sender's `passed` as its stamp. The root, when passive, sends a white token with q = 0 round the ring
 * 0 -> 1 -> ... -> size-1 -> 0. A rank holds the token until it is passive, then adds its count, blackens the
 * token if it is black, turns white, and passes it on. When the token is back and the root is passive, the
 * root declares termination iff the token is white, the root is white and q + root's count = 0; otherwise it
 * starts the next round at once.
 *
 * Colour: a rank turns black when it receives a task message stamped later than its own `passed`, i.e. one
 * sent by a rank the current round's token had already visited, to a rank it has not visited yet: a message
 * that crossed the token backwards. (Safra blackens on every receipt, which is also correct but fails far
 * more rounds.) The slides' synchronous rule (a sender to an earlier rank turns black) does not survive
 * messages in transit; docs/distributed.md gives a counterexample, and the proof that this rule is correct
 * in any delivery order.
 */
export class TokenRing implements Detector {
  private count = 0;
  private black = false;
  private passed = 0;
  private token: Token | undefined;
  private roundOpen = false;

  constructor(private readonly host: DistributedHost) {}

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
    this.token = body as unknown as Token;
    this.advance();
  }

  /** Acts on the token this rank holds (or, on the root, starts a round) once the rank is passive. */
  private advance(): void {
    const host = this.host;
    if (!host.passive) return;
    const { rt } = host;
    const token = this.token;
    if (rt.rank !== host.root) {
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
      host.send((rt.rank + 1) % rt.size, "token", next as unknown as Record<string, unknown>);
      return;
    }
    if (token) {
      this.token = undefined;
      this.roundOpen = false;
      rt.results.merge(token.r);
      this.passed = token.n;
      if (token.b === 0 && !this.black && token.q + this.count === 0) {
        host.terminate(Math.max(token.m, host.lastActivityAt));
        return;
      }
    }
    if (this.roundOpen) return;
    this.roundOpen = true;
    this.black = false;
    const round = this.passed + 1;
    rt.count("tokenRounds");
    rt.trace?.instant(`token round ${round} starts`);
    const fresh: Token = { q: 0, b: 0, m: host.lastActivityAt, n: round };
    host.send((rt.rank + 1) % rt.size, "token", fresh as unknown as Record<string, unknown>);
  }
}
