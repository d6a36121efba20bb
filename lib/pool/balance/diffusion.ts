import { type Balancer, type DistributedHost, type InitiationStrategy, MAX_BATCH } from "../strategy.ts";
import { neighboursOf } from "../topology.ts";
import { Throttle } from "./throttle.ts";

/**
 * Messages:
 * LOAD      rank -> neighbours   { l: queued tasks }      when the load moved by a quarter (or ran dry)
 * DIFFUSE   rank -> neighbour    task message: 1/(max(deg i, deg j) + 1) of the difference in load
 */
export const diffusion: InitiationStrategy = {
  summary: "level load with `topology` neighbours: move 1/(max degree + 1) of each gap",
  reads: ["topology"],
  messages: ["load"],
  taskMessages: ["diffuse"],
  create: (host) => new Diffusion(host),
};

/** A load change below this share of the last report is not worth a report (uniform noise does not spread). */
const MARGIN_SHIFT = 2;
/** A gap no bigger than this share of the rank's own load moves nothing (1/8): uniform loads stay put. */
const NOISE_SHIFT = 3;

/** The smallest change from `reported` that gets a new report: a quarter, at least 1. */
function margin(reported: number): number {
  return Math.max(1, reported >> MARGIN_SHIFT);
}

/**
 * Diffusion (seed 000; Cybenko 1989, with Boillat's coefficient): each rank knows the loads of its neighbours
 * in the pool's `topology` and, whenever it holds more than one of them, sends it
 * floor((l_i - l_j) / (max(deg i, deg j) + 1)) of its movable tasks, and at least one to a neighbour that ran
 * dry. The coefficient keeps every exchange stable (no rank gives away more than it should keep, whatever
 * its neighbours do at the same time); repeated local exchanges level the load across the graph.
 *
 * Asynchronous and event-driven rather than in rounds: a rank reports its load to its neighbours when it
 * moved by a quarter since its last report (at most once per millisecond, at once when it runs dry), and acts
 * on a report, or on its own load leaving its band, when it hears it. A sender counts what it sent on the
 * receiver's account until the receiver's next report. A gap within an eighth of the rank's own load moves
 * nothing: that floor keeps near-uniform load from diffusing forever, and an idle machine sends no message.
 */
export class Diffusion implements Balancer {
  private readonly near: readonly number[];
  private readonly index = new Map<number, number>();
  private readonly alpha: readonly number[];
  /** Last known load of each neighbour (what it reported, plus what this rank sent it since); -1 unknown. */
  private readonly known: number[];
  /** The load this rank last reported; -1 before its first report. */
  private reported = -1;
  private stopped = false;
  private readonly throttle: Throttle;

  constructor(private readonly host: DistributedHost) {
    const { rank, size, config } = host.rt;
    this.near = neighboursOf(config.topology, rank, size);
    const degree = this.near.length;
    this.alpha = this.near.map((j) => 1 / (Math.max(degree, neighboursOf(config.topology, j, size).length) + 1));
    this.near.forEach((j, i) => this.index.set(j, i));
    this.known = this.near.map(() => -1);
    this.throttle = new Throttle(host, () => this.report());
  }

  get low(): number {
    const r = this.reported;
    return r < 0 ? Number.POSITIVE_INFINITY : r - margin(r) + 1;
  }

  get high(): number {
    const r = this.reported;
    return r < 0 ? -1 : r + margin(r) - 1;
  }

  check(): void {
    if (this.stopped) return;
    const load = this.host.load;
    const r = this.reported;
    if (r < 0 || Math.abs(load - r) >= margin(r)) {
      if (load === 0) this.throttle.urgent();
      else this.throttle.request();
    }
    this.push();
  }

  onMessage(source: number, kind: string, body: Record<string, unknown>): void {
    if (kind !== "load" || this.stopped) return;
    const i = this.index.get(source);
    if (i === undefined) return;
    this.known[i] = body.l as number;
    this.push();
  }

  received(_source: number, kind: string, count: number): void {
    if (kind === "diffuse") this.host.rt.count("diffusedIn", count);
  }

  stop(): void {
    this.stopped = true;
    this.throttle.cancel();
  }

  private report(): void {
    if (this.stopped) return;
    const load = this.host.load;
    if (load === this.reported) return;
    this.reported = load;
    this.host.rt.count("loadReports");
    for (const j of this.near) this.host.send(j, "load", { l: load });
  }

  /** Sends each known lower neighbour its share of the gap, lowest first. */
  private push(): void {
    const host = this.host;
    let movable = host.movable;
    if (movable === 0) return;
    let load = host.load;
    const known = this.known;
    let lowest = -1;
    for (let i = 0; i < known.length; i++) {
      const k = known[i] as number;
      if (k >= 0 && (lowest < 0 || k < (known[lowest] as number))) lowest = i;
    }
    if (lowest < 0 || load - (known[lowest] as number) < 2) return;
    const order = known.map((_, i) => i).sort((a, b) => (known[a] as number) - (known[b] as number));
    for (const i of order) {
      const theirs = known[i] as number;
      const gap = load - theirs;
      if (theirs < 0 || gap < 2 || gap <= load >> NOISE_SHIFT) continue;
      let n = Math.floor(gap * (this.alpha[i] as number));
      if (n === 0 && theirs === 0) n = 1;
      n = Math.min(n, movable, MAX_BATCH);
      if (n === 0) continue;
      const moved = host.sendMovable(this.near[i] as number, "diffuse", n);
      known[i] = theirs + moved;
      load -= moved;
      movable -= moved;
      if (movable === 0) break;
    }
  }
}
