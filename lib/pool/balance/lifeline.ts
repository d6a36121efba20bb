import { random } from "../partner/random.ts";
import { type Balancer, type DistributedHost, type InitiationStrategy, MAX_BATCH, type Partner } from "../strategy.ts";
import { lifelinesOf } from "../topology.ts";
import { share } from "./receiver.ts";

/** Random steal attempts before a rank falls back on its lifelines (X10 GLB's w). */
export const RANDOM_STEALS = 4;
/** The lifeline graph is a hypercube in this base (X10 GLB's l). */
export const LIFELINE_BASE = 4;

/**
 * Messages:
 * STEAL     thief -> victim      { l: thief's queued tasks }     a random steal: one GIFT or one DECLINE
 * GIFT      victim -> thief      task message: about half the victim's movable tasks
 * DECLINE   victim -> thief      {}                              nothing to spare; nothing is remembered
 * LIFELINE  thief -> buddy       {}                              "I am out of work": the buddy remembers
 * DEAL      buddy -> thief       task message: a share of the buddy's tasks, once it has some
 */
export const lifeline: InitiationStrategy = {
  summary: `X10 GLB: ${RANDOM_STEALS} random steals, then lifelines (base-${LIFELINE_BASE} hypercube) push work`,
  messages: ["steal", "decline", "lifeline"],
  taskMessages: ["gift", "deal"],
  create: (host) => new Lifeline(host),
};

/**
 * Lifeline-based global load balancing (Saraswat, Kambadur, Kodali, Grove, Krishnamoorthy, PPoPP 2011).
 *
 * A rank running low (fewer than `lowWater` tasks queued) steals from random victims, one steal in flight,
 * up to `RANDOM_STEALS` in a row, and as many again once its queue is empty. A victim with work to spare answers with about half its movable tasks; one
 * without declines and forgets the thief. Once its random steals have failed and its queue is empty, the rank
 * sends a LIFELINE to each of its lifeline buddies (its outgoing edges in a base-4 hypercube) that does not
 * already hold one from it, and goes quiet: no more messages until work comes.
 *
 * A buddy that gets a lifeline request deals at once if it has work to spare, else it remembers the thief.
 * Whenever it has two or more movable tasks and remembered thieves, it deals each a share (its movable tasks
 * split evenly among itself and them). A dealt thief runs the work and, with its own thieves waiting, deals
 * on in turn, so work spreads from one rank along the lifeline graph in O(log size) steps, and an idle
 * machine is silent (receiver-initiated stealing keeps asking; here an idle rank sends at most one message
 * per lifeline per dry spell).
 *
 * Progress: the lifeline graph is strongly connected, so the lifeline requests of idle ranks reach every rank
 * that is not idle; a rank with work to spare deals to its waiting thieves; and the rank that has a task
 * that is not spared runs it, then goes idle and passes the request on along its own lifelines.
 */
export class Lifeline implements Balancer {
  readonly low: number;
  private readonly buddies: readonly number[];
  /** Random victims: the `random` partner policy, seeded as it is (seed + rank). */
  private readonly victims: Partner;
  private stealing = false;
  /** The steal in flight was sent with an empty queue. */
  private stealingDry = false;
  /**
   * Random steals that failed since this rank last got work: while it still had some queued (stealing ahead),
   * and since it ran dry. A rank that runs dry steals `RANDOM_STEALS` times afresh, as GLB's workers do each
   * time they run out, whatever its steals ahead found.
   */
  private failedAhead = 0;
  private failedDry = 0;
  /** Buddies holding a lifeline request from this rank (1), by rank. */
  private readonly asked: Uint8Array;
  /** Thieves waiting on this rank's lifeline, and a mark per rank. */
  private readonly thieves: number[] = [];
  private readonly waiting: Uint8Array;
  private stopped = false;

  constructor(private readonly host: DistributedHost) {
    const { rank, size, config } = host.rt;
    this.low = Math.max(1, config.lowWater);
    this.buddies = lifelinesOf(rank, size, LIFELINE_BASE);
    this.victims = random.create(rank, size, config.seed, config.topology);
    this.asked = new Uint8Array(size);
    this.waiting = new Uint8Array(size);
  }

  /** With thieves waiting, the engine calls `check` as soon as there is work to share. */
  get high(): number {
    return this.thieves.length > 0 ? 1 : Number.POSITIVE_INFINITY;
  }

  check(): void {
    if (this.stopped) return;
    const host = this.host;
    if (this.thieves.length > 0 && host.movable >= 2) this.deal();
    if (this.stealing) return;
    const load = host.load;
    if (load >= this.low) return;
    const { rt } = host;
    if ((load > 0 ? this.failedAhead : this.failedDry) < RANDOM_STEALS) {
      this.stealing = true;
      this.stealingDry = load === 0;
      rt.count("stealsSent");
      host.send(this.victims.next(), "steal", { l: load });
      return;
    }
    if (load > 0) return;
    for (const b of this.buddies) {
      if (this.asked[b] === 1) continue;
      this.asked[b] = 1;
      rt.count("lifelinesSent");
      host.send(b, "lifeline", {});
    }
  }

  onMessage(source: number, kind: string, body: Record<string, unknown>): void {
    if (this.stopped) return;
    const host = this.host;
    const { rt } = host;
    if (kind === "steal") {
      const n = share(host.movable, body.l as number);
      if (n > 0) {
        host.sendMovable(source, "gift", n);
        rt.count("stealsAnswered");
      } else host.send(source, "decline", {});
    } else if (kind === "decline") {
      this.stealing = false;
      if (this.stealingDry) this.failedDry++;
      else this.failedAhead++;
      this.check();
    } else if (kind === "lifeline") {
      rt.count("lifelinesReceived");
      if (this.waiting[source] === 0) {
        this.waiting[source] = 1;
        this.thieves.push(source);
      }
      if (host.movable >= 2) this.deal();
    }
  }

  received(source: number, kind: string): void {
    if (kind === "gift") {
      this.stealing = false;
      this.failedAhead = 0;
      this.failedDry = 0;
      this.host.rt.count("giftsReceived");
    } else if (kind === "deal") {
      // That buddy no longer holds this rank's request; the next dry spell asks it again.
      this.asked[source] = 0;
      this.failedAhead = 0;
      this.failedDry = 0;
      this.host.rt.count("dealsReceived");
    }
    if (this.thieves.length > 0 && this.host.movable >= 2) this.deal();
  }

  stop(): void {
    this.stopped = true;
  }

  /** Splits the movable tasks evenly among this rank and its waiting thieves (at least one each). */
  private deal(): void {
    const host = this.host;
    const each = Math.min(MAX_BATCH, Math.max(1, Math.floor(host.movable / (this.thieves.length + 1))));
    while (this.thieves.length > 0 && host.movable >= 2) {
      const thief = this.thieves.shift() as number;
      this.waiting[thief] = 0;
      host.rt.count("dealsSent");
      host.sendMovable(thief, "deal", each);
    }
  }
}
