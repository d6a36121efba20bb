import { type Balancer, type DistributedHost, type InitiationStrategy, MAX_BATCH, type Partner } from "../strategy.ts";
import { FLOW_PART, flows, startLevel } from "./flow.ts";
import { Backoff } from "./backoff.ts";

/** Busy answers in a row before an offerer starts backing off (fewer if it has fewer partners). */
const QUICK_TRIES = 2;
/**
 * Most tasks one acceptance takes, in PARTs of MAX_BATCH and the PUSH that closes it (`push`). One message's worth
 * (4,096) held a source's neighbours to that much each, and they were then above the mark: from one source at
 * 4,096 simulated ranks, `sender/neighbours` ended at 2.11x the bound, 1.39x with this.
 */
const MAX_ACCEPT = 64 * MAX_BATCH;

/**
 * Messages:
 * OFFER     sender -> partner    { l: the sender's movable tasks,   answered by exactly one ACCEPT or BUSY
 *                                  v?: its flow's level, with one
 *                                  partner a rank (`flowShare`) }
 * ACCEPT    partner -> sender    { n: tasks it takes, d?: the ranks    the partner counts them as its own until
 *                                  it takes them for, when more than   the PUSH (or RELEASE) arrives
 *                                  itself (see SenderInitiated) }
 * BUSY      partner -> sender    { w?: 1 }                           it holds more than highWater (with what it
 *                                                                    accepted), or as much as the sender; with
 *                                                                    w, more than the flow's level: READY follows
 * PART      sender -> partner    task message: MAX_BATCH of the n accepted, when more than that is pushed
 * PUSH      sender -> partner    task message: the rest of the n accepted (at most), after its PARTs
 * RELEASE   sender -> partner    {}                                  nothing left to push: the n are released
 * MORE      partner -> sender    { d }                               the chain it takes for has grown to d
 * READY     partner -> sender    {}                                  down to the flow's level again: offer now
 * NEED      rank -> predecessor  { n }                               one partner a rank: n more tasks wanted by
 *                                                                    this rank and the chain of idle ranks ahead
 * FEED      rank -> successor    task message: what the chain ahead asked for (NEED), beyond the task kept to run
 */
export const sender: InitiationStrategy = {
  summary: "a rank above highWater offers work to a partner; one at or below it takes half the gap",
  reads: ["partner"],
  messages: ["offer", "accept", "busy", "release", "more", "ready", "need"],
  taskMessages: ["push", "part", "feed"],
  create: (host, partner) => new SenderInitiated(host, partner),
};

/**
 * Sender-initiated balancing (Eager, Lazowska and Zahorjan's threshold policy, with the transfer sized by the
 * receiver): a rank holding more than `highWater` movable tasks offers work to a partner, telling how much
 * it holds. A partner holding at most `highWater` tasks (counting what it accepted from other offers and has
 * not received yet) accepts half the gap between the two, and counts them as its own at once; any other
 * partner answers BUSY. The sender pushes what was accepted (fewer if it ran some meanwhile; a RELEASE if it
 * has none left), and offers again at once while it is still above the mark. After a few BUSY answers in a
 * row it backs off (1, 2, 4 ... 20 ms), reset by an acceptance. One offer is outstanding at a time, and every
 * offer gets exactly one answer, so an answer always belongs to the current offer. Idle ranks send nothing;
 * work comes to them.
 *
 * Why each part (1,024 simulated ranks, `npm run bench -- scale`): the first form pushed half the queue blind
 * and learnt the partner's load from an acknowledgement. Among loaded ranks that shuffled half of every queue
 * to another loaded rank every back-off period (47 moves per task run, from one source), and a pushed
 * batch made its receiver push it on at once; and with a mark of 16, a depth-first tree search, whose queues
 * rarely pass it, never spread (2,781 of 131,746 tasks run in 5x the bound). Asking first moves tasks only
 * to ranks at or below the mark, only downhill, by half the gap, so a task moves again only to a rank that
 * had even less; the reservation keeps several senders that hit one idle rank together from all filling
 * it; and the low default mark (1: a rank with one task beyond its next offers it) spreads trees.
 *
 * Chains ahead (few partners a rank): a rank pushes only to them, so work from one rank reaches the others along
 * a chain, and with halves the rank k hops on got 1/2^k of it (ring partners: one source at 1,024 simulated ranks
 * ran 17,043 of 102,603 tasks in 20 times the bound). So an acceptor takes for the ranks it last saw take work
 * ahead of it: its demand is (1 + the `d` of its partner's last ACCEPT, 0 after a BUSY) / its partners' span,
 * at most the other ranks. With demand D over 1 it accepts whatever it holds, as many as even the load per
 * rank between the sender and the D ranks it takes for (`(l x D - mine) / (D + 1)`), and says D in its ACCEPT.
 * When its demand has doubled since it last said it, it tells the rank whose offer it last accepted (MORE), so
 * the count travels back along the chain at message speed, not one rank per wave of work. With many partners
 * (`random`: 1,023 at 1,024 ranks) the demand stays 1 and nothing changes.
 *
 * One partner a rank (`ring`): one source's work flows down the ring at a level (`flowShare`): each rank keeps
 * about the source's tasks over the job's ranks and offers on the rest as soon as it is in; a rank above the
 * level makes the offerer wait for its READY instead of backing off (backing off, the source sent its work out
 * one part per 20 ms). And idle ranks ask (`credit`), in place of the chain counts: a tree's work still went round
 * the ring as a clump of about 100 fed ranks, 9.5 times the bound at 1,024 simulated ranks and no end within 20 at
 * 4,096. Its queues hold a task or two a rank (depth-first), so no rank was above the mark; and counts of the
 * ranks ahead went stale both ways (counted once too few to spread the work, too many and tasks circled the ring
 * 370 times each). Asks are exact: a rank that runs dry asks its predecessor for one task (NEED), a rank asked
 * for more than it can spare asks for the rest, and each rank sends its successor what was asked of it beyond the
 * task it keeps to run next (FEED), so a task moves only towards a rank that asked for it.
 */
export class SenderInitiated implements Balancer {
  private readonly baseHigh: number;
  /** One partner a rank (`ring`): work flows along the chain at a level (`flowShare`), and chains ask (`credit`). */
  private readonly oneWay: boolean;
  /** The level of the flow whose offer this rank last accepted, until it accepts one holding nothing. */
  private level = 0;
  /** The rank told to wait (BUSY with `w`) until this one is down to its level again (READY), or -1. */
  private waiter = -1;
  private offering = false;
  private busyAnswers = 0;
  private stopped = false;
  /** The demand `d` of the partner's last ACCEPT (1 if it said none), 0 after a BUSY: the chain ahead. */
  private ahead = 0;
  /** The demand this rank last said (ACCEPT or MORE), and to whom it last said it in an ACCEPT. */
  private told = 1;
  private offerer = -1;
  /** One partner a rank: the rank whose only partner this one is (the predecessor on the ring), or -1. */
  private readonly previous: number;
  /** Tasks the chain ahead asked for (NEED) that this rank has not sent it yet. */
  private owed = 0;
  /** Tasks this rank asked its predecessor for (NEED) that have not come yet. */
  private asked = 0;
  private readonly quickTries: number;
  private readonly backoff: Backoff;
  /**
   * Tasks accepted from offers whose PUSH (or RELEASE) has not arrived yet, by offering rank, oldest first, and
   * their sum. Each acceptance is closed by exactly one PUSH or RELEASE; a sender's next offer may overtake its
   * PUSH, so a rank can hold two acceptances of one sender.
   */
  private readonly reserved = new Map<number, number[]>();
  private reservedTotal = 0;

  constructor(
    private readonly host: DistributedHost,
    private readonly partner: Partner,
  ) {
    this.baseHigh = host.rt.config.highWater;
    this.oneWay = flows(partner, host.rt.size);
    this.previous = this.oneWay ? (partner.previous ?? -1) : -1;
    this.quickTries = Math.min(QUICK_TRIES, partner.span);
    this.backoff = new Backoff(host, () => this.check());
  }

  /** A rank in a flow keeps the flow's level and offers the rest. */
  get high(): number {
    return this.level > this.baseHigh ? this.level : this.baseHigh;
  }

  /** With a rank waiting for READY, the engine calls `check` once this one is down to its level. */
  get low(): number {
    return this.waiter >= 0 ? this.level + 1 : 0;
  }

  check(): void {
    if (this.stopped) return;
    if (this.waiter >= 0 && this.host.load + this.reservedTotal <= this.level) {
      this.host.send(this.waiter, "ready", {});
      this.host.rt.count("readySent");
      this.waiter = -1;
    }
    if (this.previous >= 0) this.credit();
    if (this.offering || this.backoff.waiting) return;
    const movable = this.host.movable;
    if (movable <= this.high) return;
    this.offering = true;
    this.host.rt.count("offersSent");
    const body: Record<string, unknown> = { l: movable };
    if (this.oneWay) body.v = Math.max(this.level, startLevel(movable, this.host.rt.size));
    this.host.send(this.partner.next(), "offer", body);
  }

  /**
   * One partner a rank (`ring`), an offer that says a level `v` of 2 or more (a flow: one rank's work for many): a
   * rank holding at most that accepts what the sender holds above it, up to FLOW_PART more than the level, keeps
   * the level and offers on the rest as soon as it is in; a rank above the level tells the sender to wait
   * (BUSY with `w`) and says READY once it is down to it. Returns the tasks to accept, 0 for BUSY, or -1 when the
   * offer is no flow's (answered as any other).
   */
  private flowShare(l: number, v: unknown, mine: number): number {
    if (!this.oneWay || typeof v !== "number" || !Number.isSafeInteger(v) || v < 2) return -1;
    // (This rank's own level counts too: a source's level falls as it gives its work away.)
    const level = mine === 0 ? v : Math.max(this.level, v);
    if (mine > level) return 0;
    const n = Math.min(l - v, level + FLOW_PART - mine);
    if (n >= 1) this.level = level;
    return Math.max(0, n);
  }

  onMessage(source: number, kind: string, body: Record<string, unknown>): void {
    if (this.stopped) return;
    const host = this.host;
    const rt = host.rt;
    if (kind === "offer") {
      const mine = host.load + this.reservedTotal;
      const d = this.demand();
      const l = body.l as number;
      const flow = this.flowShare(l, body.v, mine);
      // A chain's share evens the load per rank, the sender's against this rank's spread over the chain.
      const n =
        flow >= 0
          ? flow
          : Math.min(
              d > 1 ? Math.floor((l * d - mine) / (d + 1)) : mine > this.baseHigh ? 0 : ((l - mine) / 2) | 0,
              MAX_ACCEPT,
            );
      if (n >= 1) {
        this.reserve(source, n);
        rt.count("offersAccepted");
        this.offerer = source;
        this.told = d;
        host.send(source, "accept", d > 1 ? { n, d } : { n });
      } else if (flow === 0 && this.level >= 2) {
        this.waiter = source;
        host.send(source, "busy", { w: 1 });
      } else host.send(source, "busy", {});
    } else if (kind === "accept") {
      this.offering = false;
      this.setAhead(body.d);
      this.busyAnswers = 0;
      this.backoff.reset();
      const moved = this.push(source, body.n as number);
      if (moved > 0) rt.count("pushesSent");
      else {
        rt.count("releasesSent");
        host.send(source, "release", {});
      }
      this.check();
    } else if (kind === "busy") {
      this.offering = false;
      if (body.w === 1) {
        // Inside a flow: the partner says READY once it has room; no back-off meanwhile.
        rt.count("flowWaits");
        return;
      }
      this.ahead = 0;
      rt.count("busyReceived");
      if (++this.busyAnswers >= this.quickTries) {
        rt.count("backoffs");
        this.backoff.wait();
      } else this.check();
    } else if (kind === "need") {
      const n = body.n;
      if (typeof n === "number" && Number.isSafeInteger(n) && n > 0 && n <= 2 * rt.size) {
        this.owed = Math.min(this.owed + n, rt.size);
        this.check();
      }
    } else if (kind === "release") this.unreserve(source);
    else if (kind === "more") this.setAhead(body.d);
    else if (kind === "ready") {
      this.busyAnswers = 0;
      this.backoff.reset();
      this.check();
    }
  }

  /**
   * The ranks this one takes work for at each partner: itself and the chain ahead, per partner; at most the
   * other ranks (at 2 ranks that is 1: two ranks that each counted the other would even out their loads back
   * and forth, where the mark holds them).
   */
  private demand(): number {
    // (With a predecessor to ask, chains ask for what they lack: `credit`.)
    if (this.previous >= 0) return 1;
    return Math.min((1 + this.ahead) / this.partner.span, this.host.rt.size - 1);
  }

  /** The chain ahead said its demand (`d` of an ACCEPT or MORE: 1 if none); passed back once it has doubled. */
  private setAhead(d: unknown): void {
    this.ahead = typeof d === "number" && d > 1 && d <= this.host.rt.size ? d : 1;
    const mine = this.demand();
    if (this.offerer < 0 || mine < 2 * Math.max(1, this.told)) return;
    this.told = mine;
    this.host.rt.count("chainMores");
    this.host.send(this.offerer, "more", { d: mine });
  }

  /**
   * Sends up to `n` accepted tasks to `dest`: PARTs of MAX_BATCH while more than that is left, then the PUSH
   * that closes the acceptance (FIFO channels: the parts arrive first; if one arrived after the PUSH, its tasks
   * would only have been reserved for a shorter while). Returns how many moved: 0 when this rank holds none.
   */
  private push(dest: number, n: number): number {
    let moved = 0;
    while (n - moved > MAX_BATCH && this.host.movable > MAX_BATCH) {
      const m = this.host.sendMovable(dest, "part", MAX_BATCH);
      if (m === 0) break;
      moved += m;
    }
    return moved + (this.host.movable > 0 ? this.host.sendMovable(dest, "push", Math.max(1, n - moved)) : 0);
  }

  /**
   * Chains of idle ranks (one partner a rank): feeds the chain ahead what it asked for, beyond the one task this
   * rank keeps to run next, and asks the predecessor for what it still lacks (its own task, when it holds none,
   * and what the chain ahead asked that it could not give).
   */
  private credit(): void {
    const host = this.host;
    if (this.owed > 0) {
      const spare = host.movable - 1;
      if (spare >= 1) {
        const moved = host.sendMovable(this.partner.next(), "feed", Math.min(spare, this.owed));
        this.owed -= moved;
        host.rt.count("feedsSent");
      }
    }
    const want = (host.load + this.reservedTotal === 0 ? 1 : 0) + this.owed;
    if (want > this.asked && (this.asked === 0 || want >= 2 * this.asked)) {
      host.send(this.previous, "need", { n: want - this.asked });
      host.rt.count("needsSent");
      this.asked = want;
    }
  }

  received(source: number, kind: string, count: number): void {
    if (kind === "push") {
      this.host.rt.count("pushesReceived");
      this.unreserve(source);
    }
    const fromPrevious = source === this.previous;
    if (fromPrevious) this.asked = Math.max(0, this.asked - count);
    // A flow goes on at once, not after this rank's task; so does what the chain ahead asked for.
    if (fromPrevious || (kind === "push" && this.level >= 2)) this.check();
  }

  stop(): void {
    this.stopped = true;
    this.backoff.cancel();
  }

  private reserve(source: number, n: number): void {
    const list = this.reserved.get(source);
    if (list === undefined) this.reserved.set(source, [n]);
    else list.push(n);
    this.reservedTotal += n;
  }

  private unreserve(source: number): void {
    const list = this.reserved.get(source);
    if (list === undefined) return;
    this.reservedTotal -= list.shift() as number;
    if (list.length === 0) this.reserved.delete(source);
  }
}
