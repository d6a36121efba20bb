import { type Balancer, type DistributedHost, type InitiationStrategy, MAX_BATCH } from "../strategy.ts";
import { spanningTree, type TreeLinks } from "../topology.ts";
import { Throttle } from "./throttle.ts";

/**
 * Messages:
 * LOAD      child -> parent      { l: tasks queued in the child's subtree, g: tasks it got from the parent so
 *                                  far, s: tasks it sent the parent so far }
 * LEVEL     parent -> child      { a: the pool's mean load per rank, as the parent knows it }
 * RIPPLE    along a tree edge    task message, either way
 */
export const ripple: InitiationStrategy = {
  summary: "Ripple: each spanning-tree edge carries its subtree's surplus or deficit",
  messages: ["load", "level"],
  taskMessages: ["ripple"],
  create: (host) => new Ripple(host),
};

/** A change below a quarter of the last report is not reported. */
function margin(reported: number): number {
  return Math.max(1, reported >> 2);
}

/**
 * A flow below a quarter of what the far side should hold moves nothing (at least one task must move): the
 * two ends of an edge judge it with loads and means up to a quarter (an eighth for the mean) out of date, and
 * a smaller threshold lets both send at once, tasks crossing on the edge over and over.
 */
function floor(expected: number): number {
  return Math.max(1, expected / 4);
}

/**
 * Ripple load balancing (seed 002: Melhem, Pruhs and Znati) over the binomial spanning tree of the ranks
 * (topology.ts). Ripple spreads every change of load (new tasks, finished tasks) evenly over all ranks along a
 * spanning tree: each rank keeps its fair share of what it receives and passes the rest on, in proportion to
 * the sizes of the subtrees beyond each edge, so leveling takes time linear in the tree's depth. Superposing
 * the ripples of every change, the net number of tasks an edge must carry is the surplus of the subtree beyond
 * it: its load minus the mean load times its size. This class moves exactly that net flow (Tortoise's least
 * migration), computed from loads that ripple up the tree and the mean that ripples down:
 *
 * - every rank reports its subtree's load to its parent when it moved by a quarter (at most once per
 *   millisecond; at once when it runs dry), with the task counts sent and got on that edge, so the parent can
 *   account for tasks still in flight;
 * - the root knows the total, hence the mean; each rank passes the mean on to its children (LEVEL) when it
 *   moved by an eighth, with a flag saying whether the rank itself ran dry;
 * - a rank whose subtree holds more than its share sends the surplus to its parent, from its own queue beyond
 *   its own share; a rank whose child's subtree holds less than its share sends the deficit down, again
 *   keeping its own share (a subtree that ran dry gets at least one task). Tasks passed down are passed on
 *   down by the rank they reach, so load forked anywhere ripples to every part of the tree.
 *
 * A rank's load counts the task it is running: with fewer queued tasks than ranks (a tree search, the end of
 * any run) "running one, one queued" and "idle" must differ. A subtree that ran dry gets a task, and a parent
 * that ran dry gets one from a child, from any rank with one beyond the task it runs. A flow within a quarter
 * of the far side's share moves nothing, so near-uniform load stays put, and an idle machine sends nothing.
 */
export class Ripple implements Balancer {
  private readonly tree: TreeLinks;
  private readonly size: number;
  /** Ranks in this rank's subtree, itself included. */
  private readonly span: number;
  /** Each child's subtree load as this rank accounts it (its last report, adjusted by the tasks on the edge). */
  private readonly childLoad: number[];
  /** Whether each child has reported yet; until all have, this rank neither reports nor (root) knows the mean. */
  private readonly heardFrom: boolean[];
  private unheard: number;
  private readonly sentDown: number[];
  private readonly gotUp: number[];
  private gotDown = 0;
  private sentUp = 0;
  /** What the parent holds as this subtree's load (last report, adjusted by tasks on the edge); -1 none yet. */
  private parentView = -1;
  /** The mean load per rank (non-root: as last heard from the parent); -1 unknown. */
  private heard = -1;
  private lastLevel = -1;
  /** The parent's queue was empty at its last LEVEL; this rank's own emptiness as last told its children. */
  private parentDry = false;
  private toldDry = false;
  /** The own load at the last check: the engine calls `check` when the load leaves a band around it. */
  private anchor = -1;
  private stopped = false;
  private readonly reportThrottle: Throttle;
  private readonly levelThrottle: Throttle;

  constructor(private readonly host: DistributedHost) {
    const { rank, size } = host.rt;
    this.size = size;
    this.tree = spanningTree(rank, size);
    this.span = 1 + this.tree.childSizes.reduce((a, b) => a + b, 0);
    this.childLoad = this.tree.children.map(() => 0);
    this.heardFrom = this.tree.children.map(() => false);
    this.unheard = this.tree.children.length;
    this.sentDown = this.tree.children.map(() => 0);
    this.gotUp = this.tree.children.map(() => 0);
    this.reportThrottle = new Throttle(host, () => this.report());
    this.levelThrottle = new Throttle(host, () => this.level());
  }

  get low(): number {
    const a = this.anchor;
    return a < 0 ? Number.POSITIVE_INFINITY : a - margin(a) + 1;
  }

  get high(): number {
    const a = this.anchor;
    return a < 0 ? -1 : a + margin(a) - 1;
  }

  check(): void {
    if (this.stopped) return;
    this.anchor = this.host.load;
    this.flow();
    // A rank that ran dry speaks at once: its subtree's deficit (or, at the root, the lower mean) is news.
    const dry = this.units() === 0;
    const subtree = this.subtreeLoad();
    if (this.tree.parent >= 0 && this.unheard === 0) {
      const v = this.parentView;
      if (v < 0 || Math.abs(subtree - v) >= margin(v)) {
        if (dry) this.reportThrottle.urgent();
        else this.reportThrottle.request();
      }
    }
    const a = this.mean();
    const last = this.lastLevel;
    if (
      this.tree.children.length > 0 &&
      a >= 0 &&
      (last < 0 || a > 0 !== last > 0 || Math.abs(a - last) > last / 8 || dry !== this.toldDry)
    ) {
      if (dry) this.levelThrottle.urgent();
      else this.levelThrottle.request();
    }
  }

  onMessage(source: number, kind: string, body: Record<string, unknown>): void {
    if (this.stopped) return;
    if (kind === "load") {
      const c = this.tree.children.indexOf(source);
      if (c < 0) return;
      // Tasks sent to the child that it had not got, and tasks it sent here not yet arrived (their arrival
      // subtracts them again), are not in its report.
      const inFlightDown = (this.sentDown[c] as number) - (body.g as number);
      const inFlightUp = (body.s as number) - (this.gotUp[c] as number);
      if (!this.heardFrom[c]) {
        this.heardFrom[c] = true;
        this.unheard--;
      }
      this.childLoad[c] = (body.l as number) + inFlightDown + inFlightUp;
    } else if (kind === "level") {
      if (source !== this.tree.parent) return;
      this.heard = body.a as number;
      this.parentDry = body.d === 1;
    } else return;
    this.check();
  }

  received(source: number, kind: string, count: number): void {
    if (kind !== "ripple" || this.stopped) return;
    this.host.rt.count("rippledIn", count);
    if (source === this.tree.parent) {
      this.gotDown += count;
      this.parentView += count;
    } else {
      const c = this.tree.children.indexOf(source);
      if (c >= 0) {
        this.gotUp[c] = (this.gotUp[c] as number) + count;
        // Before the child's first report its load is unknown; that report will not count these tasks.
        if (this.heardFrom[c]) this.childLoad[c] = (this.childLoad[c] as number) - count;
      }
    }
    this.check();
  }

  stop(): void {
    this.stopped = true;
    this.reportThrottle.cancel();
    this.levelThrottle.cancel();
  }

  /**
   * This rank's load in tasks, the one it is running included: with a mean below one task a rank (what most
   * tree searches look like), "running one, one queued" and "idle" must differ, and queue lengths alone do not
   * tell them apart. Between tasks the rank is about to run one of its queued tasks, so it counts them alone.
   */
  private units(): number {
    return this.host.load + (this.host.running ? 1 : 0);
  }

  private subtreeLoad(): number {
    let sum = this.units();
    for (const l of this.childLoad) sum += l;
    return sum;
  }

  /** The mean load per rank: the root computes it from the whole tree; the others use what they heard. */
  private mean(): number {
    if (this.tree.parent >= 0) return this.heard;
    return this.unheard > 0 ? -1 : this.subtreeLoad() / this.size;
  }

  /** Moves each edge's net flow that this rank is the giver of: its subtree's surplus up, children's deficits down. */
  private flow(): void {
    const a = this.mean();
    if (a < 0) return;
    const host = this.host;
    const keep = Math.max(1, Math.round(a));
    const { parent, children, childSizes } = this.tree;
    for (let c = 0; c < children.length; c++) {
      if (!this.heardFrom[c]) continue;
      const theirs = this.childLoad[c] as number;
      const expected = a * (childSizes[c] as number);
      const deficit = expected - theirs;
      if (host.movable === 0) return;
      const own = this.units();
      let n = deficit >= floor(expected) ? Math.min(Math.round(deficit), own - keep) : 0;
      // A subtree that ran dry gets a task from a rank with one beyond the one it runs.
      if (n <= 0 && theirs <= 0 && own >= 2) n = 1;
      if (n <= 0) continue;
      const moved = this.send(children[c] as number, n);
      this.sentDown[c] = (this.sentDown[c] as number) + moved;
      this.childLoad[c] = theirs + moved;
    }
    if (parent < 0 || this.parentView < 0) return;
    const expected = a * this.span;
    const surplus = this.subtreeLoad() - expected;
    const own = this.units();
    let n = surplus >= floor(expected) ? Math.min(Math.floor(surplus), own - keep) : 0;
    // A parent that ran dry gets a task from a child with one beyond the one it runs.
    if (n <= 0 && this.parentDry && own >= 2) n = 1;
    if (n <= 0) return;
    this.parentDry = false;
    const moved = this.send(parent, n);
    this.sentUp += moved;
    this.parentView -= moved;
  }

  /**
   * Moves `n` tasks to `dest` now, in as many task messages of at most MAX_BATCH as that takes, and returns how
   * many moved. One message a check held an edge's flow to MAX_BATCH per task run at the giver: from one source
   * at 4,096 simulated ranks (100 tasks a rank), the root's first child alone was owed about 200,000 tasks.
   */
  private send(dest: number, n: number): number {
    let moved = 0;
    while (moved < n) {
      const m = this.host.sendMovable(dest, "ripple", Math.min(n - moved, MAX_BATCH));
      if (m === 0) break;
      moved += m;
    }
    return moved;
  }

  private report(): void {
    if (this.stopped) return;
    const l = this.subtreeLoad();
    if (l === this.parentView) return;
    this.parentView = l;
    this.host.rt.count("loadReports");
    this.host.send(this.tree.parent, "load", { l, g: this.gotDown, s: this.sentUp });
  }

  private level(): void {
    if (this.stopped) return;
    const a = this.mean();
    const dry = this.units() === 0;
    if (a < 0 || (a === this.lastLevel && dry === this.toldDry)) return;
    this.lastLevel = a;
    this.toldDry = dry;
    for (const c of this.tree.children) this.host.send(c, "level", { a, d: dry ? 1 : 0 });
  }
}
