import { type Balancer, type DistributedHost, type InitiationStrategy, MAX_BATCH, type Partner } from "../strategy.ts";
import { FLOW_PART, flows, startLevel } from "./flow.ts";
import { dealsAt, fewPerRank } from "../dealing.ts";
import { LONG_TASK_MS } from "../executor.ts";
import { Backoff } from "./backoff.ts";

/** Refusals in a row before an asker starts backing off (fewer if it has fewer partners). */
const QUICK_TRIES = 2;
/**
 * Fewest tasks above the level a rank passes on to an asker that is not waiting on it (below, they wait for its
 * ask): a tree's children, one or two at a time, would otherwise go round the ring as they are made.
 */
const FLOW_MIN = 8;
/** Most ranks a rank offers its work to when it starts a run holding several tasks (`open`). */
export const MAX_OFFERS = 64;
/** Longest a rank waits for the answers to its offers before it runs its first task anyway. */
export const OPEN_WAIT_MS = 50;
/**
 * Longest a dealing rank stands by between two asks (`standBy`) before it runs a task of its own: no rank asked
 * meanwhile, so none is idle.
 */
export const STANDBY_MS = 50;
/**
 * A dealing rank's stand-by before any asker has said how long its tasks take: the first asks come when the first
 * tasks dealt end, which may take seconds; a task of its own begun before would keep them all waiting. At its end
 * it stands by again while a rank it dealt a task to, holding nothing else, has yet to ask again (`awaited`).
 */
export const UNKNOWN_STANDBY_MS = 1000;
/** On a GIVE or TRANSFER from a rank that deals one task at a time (`dealtWork`). */
const DEALT: Readonly<Record<string, unknown>> = { y: 1 };
/** `opening[rank]`, before this rank's first task: offered work, and yet to answer. */
const OFFERED = 1;
/** `opening[rank]`, before this rank's first task: given a share (asked or not); its late WANT gets nothing. */
const SERVED = 2;

/**
 * How many of its `movable` tasks a rank gives an asker that holds `askerLoad`: about half the difference, or
 * with `parts` > 2 about that fraction of it (long tasks: see ReceiverInitiated).
 */
export function share(movable: number, askerLoad: number, parts = 2): number {
  const diff = movable - askerLoad;
  if (diff >= 2) return Math.min(parts === 2 ? diff >> 1 : Math.ceil(diff / parts), MAX_BATCH);
  // One queued task still goes to an empty asker: this rank is busy with its running task anyway.
  return askerLoad === 0 && movable >= 1 ? 1 : 0;
}

/**
 * One of `parts` even shares of `movable` tasks (capped at MAX_BATCH), at least one while this rank keeps one;
 * none when it holds fewer than two.
 */
export function evenShare(movable: number, parts: number): number {
  return movable < 2 ? 0 : Math.min(Math.max(1, Math.floor(movable / parts)), MAX_BATCH);
}

/**
 * `n` of a rank's `movable` tasks, less one if it would give its last while it runs nothing (between two tasks, or
 * idle with tasks just come): it would go idle while the asker runs the task it was about to start, later by a
 * message's time. (Running a task, it gives its last queued one: the asker starts it sooner.)
 */
function keepOne(running: boolean, movable: number, n: number): number {
  return running || n < movable || n <= 0 ? n : movable - 1;
}

/**
 * How many of its `movable` tasks a rank gives an asker that holds `askerLoad` and speaks for `demand` idle ranks
 * (itself and those waiting on it, `demand` >= 1): the asker's `demand / (demand + 1)` of the difference, so that
 * the asker and this rank each end with about what one rank of the chain should hold. `demand` 1 is `share`.
 */
export function chainShare(movable: number, askerLoad: number, demand: number): number {
  if (demand <= 1) return share(movable, askerLoad);
  const diff = movable - askerLoad;
  if (diff < 2) return share(movable, askerLoad);
  return Math.min(Math.max(1, Math.floor((diff * demand) / (demand + 1))), MAX_BATCH);
}

/**
 * Messages:
 * REQUEST   asker -> partner     { l: asker's queued tasks, k?: locality keys it ran recently, d?: the idle
 *                                ranks it speaks for, when more than itself (see ReceiverInitiated, chains),
 *                                g?: its mean task time in ms, once it has run a task (`standBy`),
 *                                r?: the tasks it has received unasked (GIVE) from this partner }
 *                                                                answered by exactly one TRANSFER or REFUSE
 * TRANSFER  giver -> asker       task message: about half the giver's movable tasks (keyed tasks: those of
 *                                the asker's keys `k` first; see DistributedHost.sendMovable); to a chain
 *                                with one partner a rank (`flow`), what the giver holds above the flow's level,
 *                                with { v: that level }; from a rank that deals one task at a time, with
 *                                { y: 1 } (the tasks may be long: `dealtWork`)
 * REFUSE    partner -> asker     { c?: 1 }                      the asker is noted as hungry here; with c, the
 *                                                                request crossed a GIVE to it (see `crossed`)
 * NOTIFY    partner -> asker     {}                             "I have work now": sent to hungry askers
 *                                                                while async tasks are in flight here
 * GIVE      partner -> asker     task message, unasked for (the asker's own request, if any, stays out): a
 *                                share to a WANT, or to a hungry asker between two tasks (one task while the
 *                                partner's tasks may be long, else what its request would get), or a part of
 *                                a chain's flow, with { v: the flow's level } (`flow`); { y: 1 } as on a TRANSFER
 * OPEN      holder -> rank       {}                             the holder starts a run with tasks to spare,
 *                                                                or has run the root and holds its children:
 *                                                                answered at once by a WANT or a HAVE
 * WANT      rank -> holder       { l: its queued tasks, r? }    "I run low": answered by a GIVE, or nothing
 * HAVE      rank -> holder       {}                             "I have work"
 */
export const receiver: InitiationStrategy = {
  summary: "a rank running low asks a partner, which gives about half its movable tasks",
  reads: ["partner"],
  messages: ["request", "refuse", "notify", "open", "want", "have"],
  taskMessages: ["transfer", "give"],
  create: (host, partner) => new ReceiverInitiated(host, partner),
};

/**
 * Receiver-initiated balancing (work stealing): a rank whose queue falls below `lowWater` asks one partner
 * for work before it runs dry, and asks again when the answer comes. The partner answers with about half its
 * movable tasks (TRANSFER) or a REFUSE; on a refusal the asker moves on to its next partner. After a few
 * refusals in a row it waits a doubling back-off (1 ms to 20 ms) before each further ask, reset when a
 * steal succeeds, so idle ranks do not flood a machine where no one has work.
 *
 * A refusal is a promise: the refusing rank notes the asker as hungry, and once it has work to spare (two or
 * more movable tasks) it gives each hungry asker its share between two tasks (`giveToHungry`), or, while async
 * tasks are in flight (it answers requests then), sends it a NOTIFY, and the asker stops backing off and asks it
 * next. Until then the asker skips that rank when picking partners, so an idle rank asks each partner at most
 * once per dry spell, and once all have refused it goes quiet until given work. Invariant: for every other
 * rank B, either this rank may still ask B, or it is on B's hungry list; so work that appears anywhere reaches
 * idle ranks at message speed, without polling. With the `ring` policy an idle predecessor learns at once when
 * its successor has work.
 *
 * One request is outstanding at a time (two at most, to different ranks, while tasks may be long: `askAgain`)
 * and every request gets exactly one answer, from the rank asked, so an answer always belongs to the request
 * out at its sender, whatever order messages arrive in. The back-off never holds up termination
 * detection: a rank waiting to ask again is passive and passes tokens and acknowledgements at once.
 *
 * Opening a run (`open`): a rank that starts a run holding two or more movable tasks, at most
 * OPEN_MAX_PER_RANK a rank (the coarse tasks an app put on one rank before `run`), would answer no request
 * while its first task runs, and that task may take seconds; random askers also take a while to find the one
 * rank with work. So before its first task it sends OPEN to up to MAX_OFFERS ranks (the next ones after it,
 * one per task beyond the first) and waits, at most OPEN_WAIT_MS, for their answers, which come at once: WANT
 * from a rank running low (whatever request it has out, which may wait at a rank inside a long task), HAVE
 * from one with work. A WANT gets a GIVE of an even split among the offered ranks yet to answer, this one and
 * this rank (`movable / (unanswered + 2)`), and so does a request that arrives meanwhile, not half to the
 * first. Where every rank put tasks of its own, that costs one round of small messages.
 *
 * While its tasks may be long (measured long, or none run yet), a rank with tasks to spare GIVEs one task to
 * each hungry asker instead of a NOTIFY (whose request would wait a whole task here), and answers requests with
 * 1/size shares instead of halves (the first asker would hold half of everything behind its own long task).
 *
 * Chains of idle ranks (`demand`): a refused asker that waits on this rank speaks for itself and for the idle
 * ranks waiting on it, in turn, as far as it is their only way to work. Each rank's demand is (1 + the demand of
 * its hungry askers) / its partners' span, so a rank with one partner (`ring`) passes on all of its chain, and one
 * with 1,023 random partners about none (the ranks it waits on share it). A request carries its demand `d` when it
 * is over 1, and is answered with `demand / (demand + 1)` of the difference instead of half (`chainShare`); a rank
 * that gets work while askers with a chain wait on it, between two tasks, GIVEs each its share of the chain at
 * once instead of a NOTIFY (whose request would wait for this rank's next task); and a waiting rank whose demand
 * has doubled since it last asked asks again, so the counts travel up the chain. Why: with `ring` partners every
 * steal halved, so the rank k hops from the source held 1/2^k of the work, a dozen ranks ran at once, and one
 * source at 64 simulated ranks ran 4,268 of its 6,410 tasks in 5 times the bound.
 */
interface HeldAsk {
  readonly source: number;
  /** A WANT (answered by a GIVE or nothing), else a request (a TRANSFER or a REFUSE). */
  readonly want: boolean;
  readonly keys: readonly unknown[] | undefined;
}

export class ReceiverInitiated implements Balancer {
  private readonly baseLow: number;
  /**
   * The ranks this one has a request out at, oldest first: one, or two when the first went unanswered through a
   * task of this rank's (`askAgain`). Each answer (TRANSFER or REFUSE) comes from the rank asked.
   */
  private readonly out: number[] = [];
  /** Tasks this rank had run when its oldest request out left. */
  private ranWhenAsked = 0;
  private refusals = 0;
  private stopped = false;
  private preferred = -1;
  private readonly quickTries: number;
  private readonly hungry: number[] = [];
  private readonly isHungry: Uint8Array;
  /** Partners that refused this rank and have not notified it since. */
  private readonly refusedBy: Uint8Array;
  private refusedCount = 0;
  private readonly backoff: Backoff;
  /** Requests and WANTs held for `answerHeld` (`hold`). */
  private readonly held: HeldAsk[] = [];
  /** This run opened with offers, here or on a rank that sent this one an OPEN. */
  private opens = false;
  /**
   * Before this rank's first task: each rank's part in the opening (OFFERED, SERVED, or 0); how many offered ranks
   * have not answered; the wait's timer.
   */
  private opening: Uint8Array | undefined;
  private unanswered = 0;
  private cancelOpen: (() => void) | undefined;
  /**
   * Chains: what each rank's last request or WANT here said it speaks for (`demandOf`; 0 before it asked),
   * their sum (`behind`), which said more than 1 (`chainAskers`), and the demand this rank last told.
   */
  private readonly demand: Float64Array;
  /** The load each asker last said it had. */
  private readonly askerLoad: Float64Array;
  private behind = 0;
  /** The askers whose last request said more than 1 (`demand`): the chains waiting on this rank. */
  private readonly chainAskers: number[] = [];
  /** One partner a rank (`ring`): chains are fed by a flow (`flow`). */
  private readonly oneWay: boolean;
  /** The level of the flow that last reached this rank (its GIVEs' `v`), until this rank runs dry. */
  private level = 0;
  private toldDemand = 1;
  /** The partner that last refused this rank: a waiting rank whose demand doubled asks it again. */
  private lastRefuser = -1;
  /** While tasks may be long: the rank that last gave this one work, asked first (it may be dealing). */
  private lastGiver = -1;
  /** Dealing ended for this run (`endDealing`); while it lasts, `host.dealing` says so. */
  private dealingOver = false;
  /** Standing by (`standBy`): the timer that ends it; and whether the last stand-by ended with no ask. */
  private cancelStandBy: (() => void) | undefined;
  private waitedInVain = false;
  /** The longest mean task time an asker with long tasks said it has (its request's `g`), in ms. */
  private askersMeanMs = 0;
  /**
   * Dealing: ranks this one dealt a task to that held nothing else when they asked (1), and that have not asked
   * again since; each will, when that task ends (`awaited`).
   */
  private dealtTo: Uint8Array | undefined;
  private dealtCount = 0;
  /** The priority of the task last dealt to each rank of `dealtTo`, and when (`host.now()`): `ownTurn`. */
  private dealtPriority: Float64Array | undefined;
  private dealtAt: Float64Array | undefined;
  /** Tasks this rank ran as a dealer on its own turn (`ownTurn`), and their priorities summed: it deals on after. */
  private ownTasks = 0;
  private ownPriorities = 0;
  /**
   * A dealer dealt this rank work (`y` on its GIVE or TRANSFER): its tasks may be long, and until it has timed
   * one it asks for no more while it holds one (`check`). Else the first asker at 16 ranks, holding the task
   * just dealt it, asked again before running it and was dealt the 4th longest of 40 tasks of 0.2-3 s, which
   * then waited 2.7 s behind the first: 1.34x the bound.
   */
  private dealtWork = false;
  /**
   * This rank entered the run holding one task, the root of the work (`open`): after it, holding two or more,
   * it offers them (`afterRoot`); then `offerNow` until the offers go out (`standBy`).
   */
  private rootRun = false;
  private offerNow = false;
  /**
   * Tasks given unasked (GIVE) to each rank, and received unasked from each: a request tells the second to the
   * rank it asks (`r`), which so knows what of its GIVEs had not reached the asker when it asked (`crossed`).
   */
  private readonly givenTo: Float64Array;
  private readonly givenBy: Float64Array;

  constructor(
    private readonly host: DistributedHost,
    private readonly partner: Partner,
  ) {
    // An idle rank always asks, even with lowWater 0.
    this.baseLow = Math.max(1, host.rt.config.lowWater);
    this.oneWay = flows(partner, host.rt.size);
    this.quickTries = Math.min(QUICK_TRIES, partner.span);
    this.isHungry = new Uint8Array(host.rt.size);
    this.refusedBy = new Uint8Array(host.rt.size);
    this.demand = new Float64Array(host.rt.size);
    this.askerLoad = new Float64Array(host.rt.size);
    this.givenTo = new Float64Array(host.rt.size);
    this.givenBy = new Float64Array(host.rt.size);
    this.backoff = new Backoff(host, () => this.check());
  }

  /**
   * A rank asks below `lowWater` tasks (at least 1: an idle rank always asks), times the ranks it speaks for while
   * it feeds a chain: what it holds must last until more has come along the chain.
   */
  get low(): number {
    // (Read after every task: kept to a field or two. Long tasks lower it to 1 in `check`.)
    if (this.chainAskers.length === 0) return this.baseLow;
    // A rank in a flow keeps its level and passes on the rest: it asks below that too.
    if (this.oneWay) return Math.max(this.level + this.baseLow, this.baseLow * Math.max(1, this.myDemand()));
    return this.baseLow * Math.max(1, this.myDemand());
  }

  /** With hungry askers waiting, the engine calls `check` as soon as there is work to spare. */
  get high(): number {
    return this.held.length > 0 || this.rootRun ? 0 : this.hungry.length > 0 ? 1 : Number.POSITIVE_INFINITY;
  }

  check(): void {
    if (this.stopped) return;
    if (this.host.load === 0) this.level = 0;
    if (this.chainAskers.length > 0 && this.oneWay) this.flow();
    if (this.rootRun && this.host.rt.stats.tasksExecuted > 0) this.afterRoot();
    if (this.held.length > 0) this.answerHeld();
    if (this.hungry.length > 0 && this.host.movable >= 2) this.notify();
    if (this.backoff.waiting || (this.asking && !this.askAgain())) return;
    const load = this.host.load;
    if (load >= this.low) return;
    // Tasks that may be long: ask only with nothing queued. A task fetched ahead waits here through the whole
    // task this rank runs, while a rank that finishes first asks in vain; a steal's round trip is short beside
    // such a task.
    if (load >= 1 && this.chainAskers.length === 0 && this.mayBeLong()) return;
    let dest = this.preferred;
    this.preferred = -1;
    // (Not with partners fewer than the other ranks, `ring`, `neighbours`: the last giver's refusal would count
    // against them.)
    const anyone = this.partner.span >= this.host.rt.size - 1;
    if (dest < 0 && anyone && this.lastGiver >= 0 && this.refusedBy[this.lastGiver] === 0 && this.mayBeLong()) {
      dest = this.lastGiver;
    }
    if (dest < 0) dest = this.pickPartner();
    // Every partner refused: wait for a NOTIFY. (Or the one partner left is the one already asked.)
    if (dest < 0 || this.out.includes(dest)) return;
    this.request(dest, load);
  }

  private get asking(): boolean {
    return this.out.length > 0;
  }

  /**
   * The request out has gone unanswered through a whole task of this rank's, which is idle now, and tasks may be
   * long: the rank asked is inside a long task of its own (a synchronous task reads no message), and this one
   * would wait all of it. So it asks a second partner, the rank that last gave it work first (a dealer answers at
   * once). The first request still gets its answer. (A rank entered the run, asked a random partner, then got a
   * task dealt unasked; its task over, it sat 74 ms with its request waiting inside the partner's 129 ms task,
   * while the dealer held 25 tasks.)
   */
  private askAgain(): boolean {
    const host = this.host;
    return (
      this.out.length === 1 &&
      host.load === 0 &&
      !host.running &&
      host.rt.stats.tasksExecuted > this.ranWhenAsked &&
      this.partner.span > 1 &&
      this.mayBeLong()
    );
  }

  /** The answer to the request out at `source` has come. */
  private answeredBy(source: number): void {
    const i = this.out.indexOf(source);
    if (i < 0) return;
    this.out.splice(i, 1);
    if (i === 0) this.ranWhenAsked = this.host.rt.stats.tasksExecuted;
  }

  /** Sends the one request out: this rank's load, its recent keys, and its demand when it speaks for a chain. */
  private request(dest: number, load: number): void {
    if (this.out.length === 0) this.ranWhenAsked = this.host.rt.stats.tasksExecuted;
    else this.host.rt.count("secondAsks");
    this.out.push(dest);
    this.host.rt.count("requestsSent");
    const keys = this.host.recentKeys();
    const body: Record<string, unknown> = keys.length === 0 ? { l: load } : { l: load, k: keys };
    const d = this.myDemand();
    this.toldDemand = d;
    if (d > 1) body.d = d;
    if (this.host.rt.stats.tasksExecuted > 0) body.g = this.host.meanTaskMs;
    this.host.send(dest, "request", this.withGiven(dest, body));
  }

  /** `body` of an ask to `dest`, with `r`: the tasks this rank has received from it unasked (see `crossed`). */
  private withGiven(dest: number, body: Record<string, unknown>): Record<string, unknown> {
    const given = this.givenBy[dest] as number;
    if (given > 0) body.r = given;
    return body;
  }

  /**
   * The idle ranks this one speaks for at each partner: itself and its hungry askers' chains, per partner; at
   * most every other rank (when every rank is idle the hungry lists make a cycle, and the counts would grow
   * round it without end).
   */
  private myDemand(): number {
    const starving = this.host.load < this.baseLow ? 1 : 0;
    return Math.min((starving + this.behind) / this.partner.span, this.host.rt.size - 1);
  }

  /**
   * A rank that waits for a NOTIFY (every partner refused it) and whose chain has doubled since it last asked
   * asks the partner that last refused it again, so that partner's count of the chain stays within 2x.
   */
  private retell(): void {
    if (this.asking || this.stopped || this.lastRefuser < 0 || this.refusedCount < this.partner.span) return;
    const d = this.myDemand();
    if (d < 2 * Math.max(1, this.toldDemand)) return;
    this.host.rt.count("chainRequests");
    this.request(this.lastRefuser, this.host.load);
  }

  open(): boolean {
    const host = this.host;
    if (host.load === 1 && host.movable === 1 && host.rt.size > 1) this.rootRun = true;
    if (host.movable < 2 || !this.fewTasksARank() || this.stopped) return false;
    return this.offer();
  }

  /**
   * The root's first task has run (`rootRun`): holding two or more tasks now, with none given or taken yet, the
   * rank offers them before its next task as it would have before its first (`open`). The other ranks entered
   * the run with nothing; their requests, sent as they entered it, reach this rank while it runs the root and
   * its next task, and that task may be long: nothing tells it in advance. A sudoku tree whose four leaves took
   * 0.6-1.6 s ran 2.6-3.4 s on 2 ranks, the second rank's first request waiting through a whole leaf here.
   */
  private afterRoot(): void {
    this.rootRun = false;
    const host = this.host;
    const counters = host.rt.stats.counters;
    if (host.movable < 2 || (counters.tasksMovedIn ?? 0) > 0 || (counters.tasksMovedOut ?? 0) > 0) return;
    this.offerNow = true;
    host.dealing = true;
  }

  /** Offers this rank's tasks to the next ranks (OPEN) and waits for their answers (see `open`). */
  private offer(): boolean {
    const host = this.host;
    const { rank, size } = host.rt;
    // Not to a rank served already (it asked before this rank entered the run): it has its share.
    const opening = (this.opening ??= new Uint8Array(size));
    let n = 0;
    for (let i = 1; i < size && n < MAX_OFFERS && n < host.movable - 1; i++) {
      const dest = (rank + i) % size;
      if (opening[dest] === SERVED) continue;
      opening[dest] = OFFERED;
      host.send(dest, "open", {});
      n++;
    }
    if (n === 0) return false;
    host.rt.count("openingOffers", n);
    this.opens = true;
    this.unanswered = n;
    this.cancelOpen = host.after(OPEN_WAIT_MS, () => this.opened());
    return true;
  }

  /**
   * The offers are answered, or the wait is up: the rank runs its first task. A rank that has not answered by
   * then is still starting (its process, or the code before its `run`), not working: it gets its share unasked
   * (GIVE; one task from a rank that deals, MIN_DEALING_RANKS, else an even share), and its late WANT nothing
   * more. Held back instead, that share would wait behind this rank's first task, which may take seconds: at 16
   * ranks on 2 cores, where ranks entered the run up to 76 ms apart, half of them sat idle through rank 0's
   * first task of 221 ms.
   */
  private opened(): void {
    this.cancelOpen?.();
    this.cancelOpen = undefined;
    const opening = this.opening;
    if (this.unanswered > 0 && opening !== undefined) {
      this.host.rt.count("openingUnanswered", this.unanswered);
      let left = this.unanswered;
      for (let dest = 0; dest < opening.length && left > 0; dest++) {
        if (opening[dest] !== OFFERED) continue;
        const even = evenShare(this.host.movable, left + 1);
        const deals = dealsAt(this.host.rt.size);
        const n = this.stopped ? 0 : deals ? Math.min(1, even) : even;
        left--;
        opening[dest] = n > 0 ? SERVED : 0;
        // Dealt one, it asks again when that one ends, as a rank that asked would (`awaited`).
        if (deals && n > 0) this.noteAsker(dest, true);
        this.give(dest, n, deals ? DEALT : undefined);
      }
      // Dealt one each, as asks would have been: this rank deals the rest likewise (`standBy`). (Under load, 4
      // ranks slow to start all got theirs unasked, and this one ran its own tasks while theirs were long.)
      if (this.dealtCount > 0 && this.mayDeal()) this.host.dealing = true;
      this.unanswered = 0;
    }
    this.host.release();
  }

  /** An offered rank answered (its WANT, HAVE or a request) while this rank waits; true if `source` was one. */
  private answered(source: number): boolean {
    const opening = this.opening;
    if (this.cancelOpen === undefined || opening === undefined || opening[source] !== OFFERED) return false;
    opening[source] = 0;
    this.unanswered--;
    return true;
  }

  /** `source` was given a share before this rank's first task (`opening`). */
  private served(source: number): boolean {
    return this.opening !== undefined && this.opening[source] === SERVED;
  }

  /** The policy's next partner that has not refused this rank since it last notified, or -1 if none. */
  private pickPartner(): number {
    if (this.refusedCount >= this.partner.span) return -1;
    for (let tries = 4 * this.partner.span; tries > 0; tries--) {
      const dest = this.partner.next();
      if (this.refusedBy[dest] === 0) return dest;
    }
    // A random policy can miss the few partners left; try again after the next back-off.
    this.backoff.wait();
    return -1;
  }

  onMessage(source: number, kind: string, body: Record<string, unknown>): void {
    const rt = this.host.rt;
    if (kind === "request") {
      rt.count("requestsReceived");
      this.asked(source, false, body);
    } else if (kind === "refuse") {
      this.answeredBy(source);
      rt.count("refusalsReceived");
      if (body.c === 1) {
        // Not a refusal: the tasks given unasked that crossed the request have come (one channel keeps order).
        this.check();
        return;
      }
      this.lastRefuser = source;
      if (this.refusedBy[source] === 0) {
        this.refusedBy[source] = 1;
        this.refusedCount++;
      }
      if (++this.refusals >= this.quickTries) {
        rt.count("backoffs");
        this.backoff.wait();
      } else {
        this.check();
      }
    } else if (kind === "open") {
      // Answered at once, whatever request this rank has out: it may be waiting at a rank inside a long task.
      rt.count("openingOffersReceived");
      this.opens = true;
      const load = this.host.load;
      if (load >= this.baseLow || this.stopped) this.host.send(source, "have", {});
      else this.host.send(source, "want", this.withGiven(source, { l: load }));
    } else if (kind === "want") {
      // A rank that asked and was served while it was offered work too, or whose share came unasked.
      if (this.served(source)) rt.count("openingLateWants");
      else this.asked(source, true, body);
    } else if (kind === "have") {
      rt.count("openingHaves");
      if (this.answered(source) && this.unanswered === 0) this.opened();
    } else if (kind === "notify") {
      rt.count("notifiesReceived");
      this.notified(source);
    }
  }

  /** `source` has work for this rank (NOTIFY, OPEN): it is asked next, at once unless a request is out. */
  private notified(source: number): void {
    if (this.refusedBy[source] === 1) {
      this.refusedBy[source] = 0;
      this.refusedCount--;
    }
    this.preferred = source;
    if (!this.asking || this.askAgain()) {
      this.refusals = 0;
      this.backoff.reset();
      this.check();
    }
  }

  received(source: number, kind: string, count: number, _loadBefore: number, body: Record<string, unknown>): void {
    this.lastGiver = source;
    const v = body.v;
    if (typeof v === "number" && v >= 1 && Number.isSafeInteger(v)) this.level = Math.max(this.level, v);
    if (body.y === 1) this.dealtWork = true;
    if (this.chainAskers.length > 0 && this.oneWay) this.flow();
    if (kind === "give") {
      this.givenBy[source] = (this.givenBy[source] as number) + count;
      // As a NOTIFY would: the giver had work, so it may be asked again; the request out (if any) stays out.
      this.host.rt.count("givesReceived");
      if (this.refusedBy[source] === 1) {
        this.refusedBy[source] = 0;
        this.refusedCount--;
      }
      this.refusals = 0;
      this.backoff.reset();
    } else if (kind === "transfer") {
      this.answeredBy(source);
      this.refusals = 0;
      this.backoff.reset();
      this.host.rt.count("transfersReceived");
    }
    if (this.hungry.length > 0 && this.host.movable >= 2) this.notify();
  }

  /**
   * A request, or a WANT (an answer to this rank's OPEN): held (`hold`), or answered now. While opening, with an
   * even split among the offered ranks yet to answer, the asker and this rank; after, with a share (`share`):
   * about half the difference, or, while tasks may be long, 1/size of it (each further asker waits a whole task
   * here, and every idle rank asks at once, so the first asker would hold half of everything behind its own long
   * task; 2 ranks halve as before).
   */
  private asked(source: number, want: boolean, body: Record<string, unknown>): void {
    const demand = this.demandOf(body);
    this.setDemand(source, demand);
    if (typeof body.g === "number") this.askerRan(body.g);
    const coming = this.crossed(source, body);
    const load = (body.l as number) + coming;
    this.askerLoad[source] = load;
    if (coming === 0 && this.hold(source, want, body)) return;
    const opening = this.cancelOpen !== undefined;
    // A request from an offered rank stands for its answer: its WANT, sent before our share reached it, gets
    // nothing more (`served`).
    if (opening) this.answered(source);
    const movable = this.host.movable;
    const standing = this.cancelStandBy !== undefined;
    // Before its first task, with MIN_DEALING_RANKS or more, a rank holding few tasks a rank deals them one at a
    // time.
    const dealing = this.mayDeal();
    if (dealing) this.host.dealing = true;
    const n = this.askShare(movable, load, demand, coming, standing, dealing, opening);
    this.noteAsker(source, dealing && n > 0 && load === 0);
    // Dealt one at a time (standing by, dealing): the asker learns that the tasks may be long (`dealtWork`).
    const dealt = (standing || dealing) && n > 0 ? DEALT : undefined;
    if (want) this.give(source, n, dealt);
    else if (n <= 0 && coming > 0) {
      // Not hungry: the tasks on their way reach it before this answer.
      this.host.rt.count("crossedAsks");
      this.host.send(source, "refuse", { c: 1 });
    } else this.answer(source, n, body.k as readonly unknown[] | undefined, dealt);
    if (n > 0 && this.host.rt.stats.tasksExecuted === 0) {
      (this.opening ??= new Uint8Array(this.host.rt.size))[source] = SERVED;
    }
    if (opening && this.unanswered === 0) this.opened();
    // The rest of what this rank holds above a flow's level follows the answer.
    if (n > 0 && !want) this.flowTo(source);
    if (standing) {
      // Standing by again (the engine asks), with a fresh wait.
      this.endStandBy();
      this.host.release();
    }
  }

  /**
   * How many of its `movable` tasks this rank gives an ask (`asked`) from a rank that holds `load` (with the
   * `coming` tasks given it unasked that it had not received when it asked) and speaks for `demand` idle ranks.
   */
  private askShare(
    movable: number,
    load: number,
    demand: number,
    coming: number,
    standing: boolean,
    dealing: boolean,
    opening: boolean,
  ): number {
    if (standing || dealing || opening) {
      // An asker with tasks on their way from here gets no more from a rank that hands out one task at a time.
      if (coming > 0) return 0;
      if (standing) return Math.min(1, movable);
      if (dealing) return movable >= 2 ? 1 : 0;
      return evenShare(movable, this.unanswered + 2);
    }
    const level = this.levelFor(demand);
    if (level > 0) return Math.min(movable - level, FLOW_PART);
    const n = this.mayBeLong()
      ? share(movable, load, Math.max(2, this.host.rt.size))
      : chainShare(movable, load, demand);
    return keepOne(this.host.running, movable, n);
  }

  /** Sends `n` tasks unasked for (GIVE), if `n` > 0. */
  private give(dest: number, n: number, extra?: Readonly<Record<string, unknown>>): number {
    if (n <= 0) return 0;
    const sent = this.host.sendMovable(dest, "give", n, undefined, extra);
    this.givenTo[dest] = (this.givenTo[dest] as number) + sent;
    this.host.rt.count("givesSent");
    return sent;
  }

  /**
   * Tasks this rank gave `source` unasked that had not reached it when it sent this ask: they count as its load.
   * (A rank that stood by dealing answered an asker's WANT with a GIVE and its request, which crossed that GIVE,
   * with a second task, which then waited behind the first one's 300 ms while other ranks sat idle.)
   */
  private crossed(source: number, body: Record<string, unknown>): number {
    const had = typeof body.r === "number" ? body.r : 0;
    return Math.max(0, (this.givenTo[source] as number) - had);
  }

  /** Answers a request with `n` tasks, or refuses it (the asker is then hungry here). */
  private answer(
    source: number,
    n: number,
    keys: readonly unknown[] | undefined,
    extra?: Readonly<Record<string, unknown>>,
  ): void {
    const rt = this.host.rt;
    if (n > 0) {
      const level = this.levelFor(this.demand[source] as number);
      this.host.sendMovable(source, "transfer", n, keys, level > 0 ? { ...extra, v: level } : extra);
      rt.count("requestsAnswered");
      return;
    }
    this.host.send(source, "refuse", {});
    rt.count("requestsRefused");
    if (this.isHungry[source] === 0) {
      this.isHungry[source] = 1;
      this.hungry.push(source);
    }
    this.retell();
  }

  /**
   * What a request or WANT says its sender speaks for at this rank: its `d`, or, when it sent none (1 or less),
   * one idle rank split among its partners (every rank has the same partner policy, so the same span): an asker
   * with 1,023 random partners adds 1/1,023 here, one with a single partner (`ring`) 1.
   */
  private demandOf(body: Record<string, unknown>): number {
    const d = body.d;
    return typeof d === "number" && d > 1 && d < this.host.rt.size ? d : 1 / this.partner.span;
  }

  /**
   * The level each rank of a chain that speaks for `demand` idle ranks is to hold, in a flow (flow.ts; 0 without
   * one, or when `demand` is 1 or less): the higher of the level that reached this rank and `startLevel`.
   */
  private levelFor(demand: number): number {
    if (!this.oneWay || demand <= 1) return 0;
    return Math.max(1, this.level, startLevel(this.host.movable, this.host.rt.size));
  }

  /**
   * One partner a rank (`ring`): the work for a chain of idle ranks passes down it as a flow. Each rank keeps the
   * flow's level and passes on the rest at once, unasked, in parts of FLOW_PART tasks, each saying the level
   * (`v`). (With halves, or the chain's share of the difference, a rank passed on nearly all of what reached it:
   * from one source at 1,024 simulated ranks the work went round the ring as a clump of 100 to 250 fed ranks, and
   * each rank it left was idle for good, its one partner having passed everything on: 6 times the bound.)
   */
  private flow(): void {
    for (const dest of this.chainAskers) {
      const hungry = this.isHungry[dest] === 1;
      const level = this.levelFor(this.demand[dest] as number);
      if (!hungry && this.host.movable - level < FLOW_MIN) continue;
      if (this.flowTo(dest, level) > 0 && hungry) {
        this.isHungry[dest] = 0;
        this.hungry.splice(this.hungry.indexOf(dest), 1);
      }
    }
  }

  /** Sends `dest`, which asked for its chain, what this rank holds above the level, unasked; returns how many. */
  private flowTo(dest: number, level = this.levelFor(this.demand[dest] as number)): number {
    const host = this.host;
    // (Not while this rank opens the run, stands by or deals: those split what it holds their own ways.)
    if (level === 0 || this.cancelOpen !== undefined || this.cancelStandBy !== undefined || host.dealing) return 0;
    let given = 0;
    while (host.movable > level) {
      const sent = this.give(dest, Math.min(host.movable - level, FLOW_PART), { v: level });
      if (sent === 0) break;
      host.rt.count("flowGives");
      given += sent;
    }
    return given;
  }

  /** Records what an asker's last request or WANT said it speaks for here (`demandOf`). */
  private setDemand(source: number, d: number): void {
    const old = this.demand[source] as number;
    if (old > 1 && d <= 1) this.chainAskers.splice(this.chainAskers.indexOf(source), 1);
    if (old <= 1 && d > 1) this.chainAskers.push(source);
    this.behind += d - old;
    this.demand[source] = d;
  }

  /**
   * Between two tasks that may be long, with tasks to spare: a request or WANT is held until the messages that
   * arrived during the last task are all in (the engine's check before its next task), so that every asker
   * gets an even share of what this rank holds, not the first one a share of everything and the last little.
   */
  private hold(source: number, want: boolean, body: Record<string, unknown>): boolean {
    const host = this.host;
    if (this.cancelOpen !== undefined || this.cancelStandBy !== undefined) return false;
    if (host.running || host.movable < 2 || !this.mayBeLong()) return false;
    // Before the first task every rank has yet to ask: an even split among those that have would give each far
    // more than a 1/size share. A dealer (after a task on its own turn) deals each ask one task, in turn.
    if (host.rt.stats.tasksExecuted === 0 || host.dealing) return false;
    this.held.push({ source, want, keys: body.k as readonly unknown[] | undefined });
    host.rt.count("asksHeld");
    return true;
  }

  /** The held asks, answered together: each gets `movable / (askers left + 1)`, this rank keeping a share. */
  private answerHeld(): void {
    const host = this.host;
    const held = this.held;
    for (let i = 0; i < held.length; i++) {
      const { source, want, keys } = held[i] as HeldAsk;
      const n = evenShare(host.movable, held.length - i + 1);
      if (want) this.give(source, n);
      else this.answer(source, n, keys);
    }
    held.length = 0;
  }

  /**
   * This rank's tasks are long (Executor `longTasks`), or it has run none yet in a run that opened with few
   * tasks a rank (`opens`): tasks so few are likely coarse, and their length is not known yet. (Before the
   * first task of a run with many tasks, halving spreads them faster: one source of many short tasks ended
   * 1.19x the bound at 64 simulated ranks when unknown counted as long, 1.07x when not.)
   */
  private mayBeLong(): boolean {
    return (
      this.host.longTasks ||
      (this.host.rt.stats.tasksExecuted === 0 && (this.opens || this.dealtWork || this.fewTasksARank()))
    );
  }

  /**
   * This rank holds few tasks a rank of the job (2 to OPEN_MAX_PER_RANK), all its own (none came from another
   * rank: the tasks an app put before `run`): a run it starts opens with offers (`open`), a request that comes
   * before that, from a rank that entered the run first, gets a 1/size share, not half (at 16 ranks, the first
   * asker took 20 of 40 tasks and held them behind a task of 275 ms), and it deals them (`standBy`). A rank
   * that was given a few tasks of a tree steals and halves as before: dealing them too slowed a tree's spread
   * at 4,096 simulated ranks from 1.21 to 1.28 times the bound.
   */
  private fewTasksARank(): boolean {
    const movable = this.host.movable;
    const { rt } = this.host;
    return movable >= 2 && fewPerRank(movable, rt.size) && (rt.stats.counters.tasksMovedIn ?? 0) === 0;
  }

  /** Tells hungry askers, as many as there is work for (about one per two movable tasks), to ask again. */
  private notify(): void {
    const host = this.host;
    if (this.mayBeLong() && !host.running) {
      this.giveToHungry(true);
      return;
    }
    if (this.chainAskers.length > 0 && !host.running) this.giveToChains();
    if (!host.running) {
      this.giveToHungry(false);
      return;
    }
    // About one NOTIFY per two movable tasks, and none to an asker that held as much as this rank could give it
    // (it asked above lowWater, feeding a chain): its request would be refused, and it would be notified again.
    let budget = host.movable >> 1;
    let kept = 0;
    const hungry = this.hungry;
    for (let i = 0; i < hungry.length; i++) {
      const dest = hungry[i] as number;
      const load = this.askerLoad[dest] as number;
      if (budget > 0 && (load < this.baseLow || host.movable >= load + 2)) {
        budget--;
        this.isHungry[dest] = 0;
        host.rt.count("notifiesSent");
        host.send(dest, "notify", {});
      } else hungry[kept++] = dest;
    }
    hungry.length = kept;
  }

  /**
   * Between two tasks, with hungry askers that speak for chains of idle ranks: each gets its chain's share of
   * what this rank holds at once (GIVE), `movable x demand / (1 + behind, less the chains served before it)`,
   * this rank keeping one share; a NOTIFY would make it ask while this rank runs its next task, and the chain
   * would wait that long at every rank along it.
   */
  private giveToChains(): void {
    const host = this.host;
    let weight = 1 + this.behind;
    let kept = 0;
    for (let i = 0; i < this.hungry.length; i++) {
      const dest = this.hungry[i] as number;
      const d = this.demand[dest] as number;
      if (d <= 1 || host.movable < 2) {
        this.hungry[kept++] = dest;
        continue;
      }
      const n = Math.min(Math.max(1, Math.floor((host.movable * d) / weight)), host.movable - 1, MAX_BATCH);
      weight -= d;
      this.isHungry[dest] = 0;
      this.give(dest, n);
      this.host.rt.count("chainGives");
    }
    this.hungry.length = kept;
  }

  /**
   * Between two tasks: each hungry asker gets its share at once (GIVE), while this rank has two or more tasks,
   * the latest refused first (the longer ago an asker was refused, the likelier it has found work elsewhere since
   * and is inside a task of its own, where the task given would wait as it would here). Its share is what its
   * request would get, or one task while this rank's tasks may be long (`long`). A NOTIFY would make it ask
   * while this rank runs its next task, which may be the first long one (nothing marks it in advance): the asker
   * would wait that whole task, and the task it could run waits here (a sudoku tree whose four leaves took 0.6-1.6
   * s ran 2.6-3.4 s on 2 ranks, the second rank idle through each leaf here).
   */
  private giveToHungry(long: boolean): void {
    const host = this.host;
    const hungry = this.hungry;
    while (hungry.length > 0 && host.movable >= 2) {
      const dest = hungry.pop() as number;
      this.isHungry[dest] = 0;
      host.rt.count("hungryGives");
      this.give(dest, long ? 1 : chainShare(host.movable, 0, this.demand[dest] as number));
    }
  }

  /**
   * A rank that was asked for its tasks before its first, holding few tasks a rank (MIN_DEALING_RANKS), deals
   * them: while its tasks may be long and it holds any, it runs none while asks keep coming, but stands by,
   * answering each at once with one task, the last included, until no ask has come for twice the longest mean
   * task time askers told in their requests (`g`: they ask about once a task; at least STANDBY_MS;
   * UNKNOWN_STANDBY_MS before any told); then it runs one. An asker whose tasks are short ends its dealing
   * (`askerRan`). (The last task run here at the end of a run of 20-300 ms tasks on 16 ranks was its whole
   * last 221 ms, all other ranks idle.) Each task of its own
   * would keep every ask meanwhile waiting for its whole length, and the tasks it dealt out in shares would wait
   * behind the long tasks of the ranks it gave them to, as they wait behind its own. Ranks it gives to ask it
   * first next time (`lastGiver`).
   */
  standBy(): boolean {
    if (this.offerNow) {
      this.offerNow = false;
      this.host.dealing = false;
      if (this.stopped || !this.offer()) return false;
      this.host.rt.count("rootOpenings");
      return true;
    }
    if (this.waitedInVain) {
      this.waitedInVain = false;
      // No ask came: the other ranks have work of their own; this one runs its tasks and steals as any other.
      // Unless one it dealt its only task to has yet to come back (`awaited`).
      if (!this.awaited()) {
        this.endDealing();
        return false;
      }
      this.host.rt.count("standBysExtended");
    }
    if (!this.host.dealing || this.stopped || this.host.movable < 1 || !this.mayBeLong()) return false;
    if (this.ownTurn()) {
      this.ownTasks++;
      this.ownPriorities += this.host.topPriority;
      this.host.rt.count("dealerOwnTasks");
      return false;
    }
    this.host.rt.count("standBys");
    // Askers that run long tasks ask about once a task each: a gap of twice their mean says none is coming. The
    // last task waits for an ask only briefly: the others may all be inside tasks of their own.
    const wait =
      this.host.movable === 1
        ? STANDBY_MS
        : this.askersMeanMs > 0
          ? Math.max(STANDBY_MS, 2 * this.askersMeanMs)
          : UNKNOWN_STANDBY_MS;
    this.cancelStandBy = this.host.after(wait, () => {
      this.cancelStandBy = undefined;
      this.waitedInVain = true;
      this.host.release();
    });
    return true;
  }

  /**
   * An asker's request said its mean task time (`g`): a dealer stands by at most twice the longest one heard,
   * and stops dealing once an asker's tasks are short (the ranks then run through tasks faster than a round
   * trip to it, and stealing halves serve them better).
   */
  private askerRan(meanMs: number): void {
    if (meanMs > this.askersMeanMs) this.askersMeanMs = meanMs;
    if (meanMs <= LONG_TASK_MS) this.endDealing();
  }

  /**
   * This rank deals what it holds one task at a time (`standBy`): enough ranks (MIN_DEALING_RANKS), none of its
   * own tasks run yet, few tasks a rank, and dealing not over for this run.
   */
  private mayDeal(): boolean {
    return (
      !this.dealingOver &&
      dealsAt(this.host.rt.size) &&
      this.host.rt.stats.tasksExecuted === this.ownTasks &&
      this.fewTasksARank()
    );
  }

  /**
   * `source` asked; `dealt`: it held nothing and is dealt a task now (the top of this rank's queue, whose priority
   * is noted), so it will ask again when that task ends.
   */
  private noteAsker(source: number, dealt: boolean): void {
    const size = this.host.rt.size;
    const to = (this.dealtTo ??= new Uint8Array(size));
    const was = to[source] as number;
    to[source] = dealt ? 1 : 0;
    this.dealtCount += (dealt ? 1 : 0) - was;
    if (dealt) {
      (this.dealtPriority ??= new Float64Array(size))[source] = this.host.topPriority;
      (this.dealtAt ??= new Float64Array(size))[source] = this.host.now();
    }
  }

  /**
   * A dealer runs a task of its own, not standing by, when it expects to finish it before any rank it dealt to
   * comes back: every other rank runs a task it dealt, each of a higher priority than the one it would run, and
   * where the priorities are times (the app put its tasks with their expected times as priorities, as a cost model
   * would, so that the longest run first), each rank's task, begun when dealt, ends after this one would. Time per
   * unit of priority is learned from the dealer's own tasks (`ownMsPerPriority`); before its first, only the first
   * round qualifies: every rank dealt its task within the last STANDBY_MS, so the shortest of the round is this
   * rank's. Standing by instead, the dealer leaves a core idle through the whole run (16 emulated ranks, 40 tasks of
   * 0.2-3 s with their times as priorities: the dealer ran none of them, and the run took 1.17 times the bound of
   * 16 ranks); running whatever comes next once every rank is busy, it ran a task of 1.9 s that began 2 s after
   * the others' and held their second asks (1.47). With equal priorities nothing says a task is short: it stands
   * by as before.
   */
  private ownTurn(): boolean {
    const { size } = this.host.rt;
    const to = this.dealtTo;
    const dealt = this.dealtPriority;
    const at = this.dealtAt;
    if (to === undefined || dealt === undefined || at === undefined) return false;
    if (this.dealtCount < size - 1 || this.host.movable < 1) return false;
    const mine = this.host.topPriority;
    const now = this.host.now();
    const k = this.ownMsPerPriority();
    for (let r = 0; r < size; r++) {
      if (to[r] !== 1) continue;
      const p = dealt[r] as number;
      if (!(p > mine)) return false;
      const since = now - (at[r] as number);
      if (k === undefined ? since > STANDBY_MS : since + k * mine > k * p) return false;
    }
    return true;
  }

  /** Ms per unit of priority over the tasks this dealer ran on its own turn; undefined before one of priority > 0. */
  private ownMsPerPriority(): number | undefined {
    const ms = this.host.meanTaskMs * this.ownTasks;
    return this.ownPriorities > 0 && ms > 0 ? ms / this.ownPriorities : undefined;
  }

  /**
   * A stand-by waited in vain before any asker told its task time, and a rank this one dealt its only task to has
   * not asked since: that task has not ended, so the tasks are long, and a task of this rank's own begun now would
   * keep its ask, and every other, waiting for that task's whole length. So this rank stands by again, as the
   * centralized pool's working coordinator does until its workers' task times are known (coordinator.ts
   * `standsBy`): 16 emulated ranks, 40 tasks of 0.2-3 s put with their times as priorities, the dealer ran its
   * own 1.9 s task after its first 1 s stand-by, the other 15 finished their first tasks in 2.0-2.9 s, and all
   * waited for it: 1.42-1.69x the bound, against 1.07 for the ideal. Not in a pool that survives deaths (a rank
   * dealt to may never come back), nor once an asker has said how long its tasks take (the wait then follows
   * from that).
   */
  private awaited(): boolean {
    return this.dealtCount > 0 && this.askersMeanMs === 0 && !(this.host.rt.config.retries > 0);
  }

  /** Dealing is over for this run: askers' tasks are short, or a stand-by waited in vain. */
  private endDealing(): void {
    if (this.host.dealing) this.host.rt.count("dealingEnded");
    this.host.dealing = false;
    this.dealingOver = true;
  }

  private endStandBy(): void {
    this.cancelStandBy?.();
    this.cancelStandBy = undefined;
  }

  stop(): void {
    this.endStandBy();
    this.host.dealing = false;
    this.stopped = true;
    this.held.length = 0;
    this.backoff.cancel();
    this.cancelOpen?.();
    this.cancelOpen = undefined;
  }
}
