import { type Balancer, type DistributedHost, type InitiationStrategy, MAX_BATCH, type Partner } from "../strategy.ts";
import { Backoff } from "./backoff.ts";

/**
 * Messages:
 * PUSH      sender -> partner    task message: half the sender's movable tasks
 * PUSH_ACK  partner -> sender    { l: partner's queued tasks before the push }
 */
export const sender: InitiationStrategy = {
  summary: "a rank above highWater pushes half its movable tasks to a partner",
  reads: ["partner"],
  messages: ["pushAck"],
  taskMessages: ["push"],
  create: (host, partner) => new SenderInitiated(host, partner),
};

/**
 * Sender-initiated balancing: a rank whose queue holds more than `highWater` tasks pushes half of its
 * movable tasks to a partner. It pushes again only once the partner acknowledged (one push in flight), and
 * the acknowledgement tells how loaded the partner was: if it too was above `highWater`, the system is busy
 * and the sender backs off (doubling delays, reset by a push that landed on a lightly loaded rank), so loaded
 * ranks do not shuffle tasks among themselves. Idle ranks do nothing; work comes to them.
 */
export class SenderInitiated implements Balancer {
  readonly low = 0;
  readonly high: number;
  private pushing = false;
  private stopped = false;
  private readonly backoff: Backoff;

  constructor(
    private readonly host: DistributedHost,
    private readonly partner: Partner,
  ) {
    this.high = host.rt.config.highWater;
    this.backoff = new Backoff(host, () => this.check());
  }

  check(): void {
    if (this.pushing || this.stopped || this.backoff.waiting) return;
    const movable = this.host.movable;
    if (movable <= this.high) return;
    const moved = this.host.sendMovable(this.partner.next(), "push", Math.max(1, Math.min(movable >> 1, MAX_BATCH)));
    if (moved > 0) {
      this.pushing = true;
      this.host.rt.count("pushesSent");
    }
  }

  onMessage(_source: number, kind: string, body: Record<string, unknown>): void {
    if (kind !== "pushAck") return;
    this.pushing = false;
    if ((body.l as number) > this.high) {
      this.host.rt.count("backoffs");
      this.backoff.wait();
    } else {
      this.backoff.reset();
      this.check();
    }
  }

  received(source: number, kind: string, _count: number, loadBefore: number): void {
    if (kind !== "push") return;
    this.host.rt.count("pushesReceived");
    this.host.send(source, "pushAck", { l: loadBefore });
  }

  stop(): void {
    this.stopped = true;
    this.backoff.cancel();
  }
}
