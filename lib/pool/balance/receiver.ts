import type { DistributedHost } from "../distributed/host.ts";
import { MAX_BATCH, TAG } from "../distributed/protocol.ts";
import type { Partner } from "../partner/partner.ts";
import { Backoff, type Balancer } from "./balancer.ts";

/** How many of its `movable` tasks a rank gives an asker that holds `askerLoad`: about half the difference. */
export function share(movable: number, askerLoad: number): number {
  const diff = movable - askerLoad;
  if (diff >= 2) return Math.min(diff >> 1, MAX_BATCH);
  // One queued task still goes to an empty asker: this rank is busy with its running task anyway.
  return askerLoad === 0 && movable >= 1 ? 1 : 0;
}

/**
 * Receiver-initiated balancing (work stealing): a rank whose queue falls below `lowWater` asks one partner
 * for work before it runs dry, and asks again when the answer comes. The partner answers with about half its
 * movable tasks (TRANSFER) or a REFUSE; on a refusal the asker moves on to its next partner. Once every
 * partner refused in a row, it waits a doubling back-off before each further ask, reset when work arrives.
 *
 * One request is outstanding at a time and every request gets exactly one answer, so an answer always
 * belongs to the current request, whatever order messages arrive in. The back-off never holds up termination
 * detection: a rank waiting to ask again is passive and passes tokens and acknowledgements at once.
 */
export class ReceiverInitiated implements Balancer {
  readonly low: number;
  readonly high = Number.POSITIVE_INFINITY;
  private asking = false;
  private refusals = 0;
  private stopped = false;
  private readonly backoff: Backoff;

  constructor(
    private readonly host: DistributedHost,
    private readonly partner: Partner,
  ) {
    // An idle rank always asks, even with lowWater 0.
    this.low = Math.max(1, host.rt.config.lowWater);
    this.backoff = new Backoff(() => this.check());
  }

  check(): void {
    if (this.asking || this.stopped || this.backoff.waiting) return;
    const load = this.host.load;
    if (load >= this.low) return;
    this.asking = true;
    this.host.rt.count("requestsSent");
    this.host.rt.send(this.partner.next(), TAG.request, { l: load });
  }

  onMessage(source: number, tag: number, body: Record<string, unknown>): void {
    const rt = this.host.rt;
    if (tag === TAG.request) {
      rt.count("requestsReceived");
      const n = share(this.host.movable, body.l as number);
      if (n > 0) {
        this.host.sendMovable(source, TAG.transfer, n);
        rt.count("requestsAnswered");
      } else {
        rt.send(source, TAG.refuse, {});
        rt.count("requestsRefused");
      }
    } else if (tag === TAG.refuse) {
      this.asking = false;
      rt.count("refusalsReceived");
      if (++this.refusals >= this.partner.span) {
        rt.count("backoffs");
        this.backoff.wait();
      } else {
        this.check();
      }
    }
  }

  received(_source: number, tag: number): void {
    if (tag === TAG.transfer) {
      this.asking = false;
      this.host.rt.count("transfersReceived");
    }
    // Work arrived: the system has work again, ask at full speed. The engine calls check once it runs low.
    this.refusals = 0;
    this.backoff.reset();
  }

  stop(): void {
    this.stopped = true;
    this.backoff.cancel();
  }
}
