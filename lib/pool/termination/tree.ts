import { type WireResult, withResult } from "../results.ts";
import type { DetectionStrategy, Detector, DistributedHost } from "../strategy.ts";

/**
 * Messages:
 * ACK       child -> parent      { n: task messages acknowledged, m: latest task end in the child's subtree
 *                                  (epoch ms), 0 for an immediate acknowledgement, r?: partial results }
 */
export const tree: DetectionStrategy = {
  summary: "Dijkstra-Scholten: task messages are acknowledged; ends when the tree empties",
  messages: ["ack"],
  create: (host) => new Tree(host),
};

/**
 * Tree-based termination (Dijkstra-Scholten diffusing computation).
 *
 * Every task message is acknowledged. A rank's `deficit` counts its task messages not yet acknowledged. A
 * rank outside the tree that receives a task message joins it: the sender becomes its parent, and that
 * message's acknowledgement is held back. Any other task message is acknowledged at once. A rank leaves the
 * tree, acknowledging its parent, when it is passive and its deficit is zero. The root never leaves;
 * when it is passive with deficit zero, the tree is empty and the pool has terminated.
 *
 * Start: work may begin on every rank, so every rank starts in the tree as a child of the root, and the root
 * starts with a deficit of size - 1 (as if it had sent each rank a start message). Each rank acknowledges
 * that start when it first leaves.
 *
 * Acknowledgements carry the latest task end in the subtree, so the root learns when the last task finished.
 */
export class Tree implements Detector {
  private engaged = true;
  private parent: number;
  private deficit: number;
  private subtreeLast = 0;
  readonly stamp = 0;

  constructor(private readonly host: DistributedHost) {
    const root = host.rt.rank === host.root;
    this.parent = root ? -1 : host.root;
    this.deficit = root ? host.rt.size - 1 : 0;
  }

  sent(): void {
    this.deficit++;
  }

  received(source: number): void {
    if (!this.engaged) {
      this.engaged = true;
      this.parent = source;
      this.host.rt.count("treeJoins");
    } else {
      this.ack(source, 0);
    }
  }

  idle(): void {
    this.leave();
  }

  onMessage(source: number, kind: string, body: Record<string, unknown>): void {
    if (kind !== "ack") return;
    this.host.rt.count("acksReceived");
    // A child leaving the tree (m > 0; immediate acknowledgements carry 0): a trace shows the end's hops.
    if ((body.m as number) > 0) this.host.rt.trace?.instant(`ack from ${source} (left the tree)`);
    this.deficit -= body.n as number;
    // A child leaving the tree brings its subtree's partial results; they go up when this rank leaves.
    this.host.rt.results.merge(body.r as WireResult);
    const m = body.m as number;
    if (m > this.subtreeLast) this.subtreeLast = m;
    this.leave();
  }

  private ack(dest: number, last: number, result?: WireResult): void {
    this.host.rt.count("acksSent");
    this.host.send(dest, "ack", withResult({ n: 1, m: last }, result));
  }

  private leave(): void {
    if (!this.engaged || this.deficit > 0 || !this.host.passive) return;
    const last = Math.max(this.subtreeLast, this.host.lastActivityAt);
    if (this.parent < 0) {
      this.host.terminate(last);
      return;
    }
    this.engaged = false;
    this.host.rt.trace?.instant(`left the tree (parent ${this.parent})`);
    this.ack(this.parent, last, this.host.rt.results.take());
    this.parent = -1;
    this.subtreeLast = 0;
  }
}
