/**
 * Deadlock diagnosis, the rank's side (the launcher's is launcher/stalls.ts). A send and a receive whose tags
 * do not match, a receive from a rank that sends nothing, a barrier one rank never reaches: MPI waits for
 * ever, and so did a job here until `--timeout`, saying nothing. The launcher can tell instead, because a rank
 * knows when it waits on messages alone, and the launcher can count the messages on their way.
 *
 * A rank waits on messages alone when the router's idle watch (Router#watchIdle) finds receives, collectives or
 * pool runs waiting and nothing else: no send held by a slow peer, no ZeroMQ socket of the app's busy, no
 * timer, immediate, socket, file operation or child process beyond what it had at start. (A pool run between
 * messages is such a wait: what else wakes it, its timers and its turns of the event loop, are resources the
 * watch sees; a task running holds the event loop, and the watch does not look then.) Such a rank can only be woken by
 * a message: from another rank, or from the launcher. When it has been so for two checks in a row with nothing
 * changed, it tells the launcher what it waits in, how many messages it handed to each rank, how many reached
 * it, and how many launcher records it read (`waits`, lib/control/records.ts); and says so again when that
 * changes, or that it no longer waits.
 *
 * The launcher declares a deadlock when every rank's last report says it waits, each read every record the
 * launcher sent it, and for every rank the messages the others handed it equal those that reached it. The
 * reports are not taken at one moment, but that cannot fool it: a rank that woke after its report was woken
 * by a message that reached it after its report; the first such message in the whole job was sent while its
 * sender was still active, so before its sender's report, and is counted in that report but not in its
 * receiver's, which breaks the equality for the receiver (Mattern's counting argument, with the ranks' own
 * wait as the passive state).
 */
import { launcherRecordsHeard, report } from "../control/report.ts";
import { CLOSE_CONTEXT, CONTEXT, SUB_CONTEXTS, WORLD_CONTEXTS } from "./contexts.ts";
import type { Matcher } from "./matcher.ts";

/** What a rank's report lists at most of its waits and of the messages no receive took. */
const MAX_LISTED = 8;

/** What the stall watch reads of the router. */
export interface StallSite {
  readonly rank: number;
  /** Messages handed to each other rank, every context (close's too). A message to itself is not counted. */
  readonly wireSent: readonly number[];
  /** Messages that reached this rank, every context. */
  readonly wireReceived: number;
  readonly matchers: ReadonlyMap<number, Matcher>;
}

/** One rank's reports of what it waits in (see the module's comment). */
export class StallWatch {
  /** What the last check found, while it found the rank waiting on messages alone. */
  private seen: string | undefined;
  /** What the launcher was last told; undefined: that the rank does not wait (or nothing yet). */
  private told: string | undefined;
  private reports = 0;

  constructor(private readonly site: StallSite) {}

  /**
   * One check of the idle watch: `waiting`, whether the rank waits on messages alone now; `held`, the pool runs
   * (Router#hold) that wait so, beside the receives and collectives.
   */
  check(waiting: boolean, held: readonly string[]): void {
    if (!waiting) {
      this.seen = undefined;
      if (this.told !== undefined) this.send([], [], [], 0, 0);
      this.told = undefined;
      return;
    }
    const { site } = this;
    const waits = [...held, ...describeWaits(site.matchers)].slice(0, MAX_LISTED);
    const heard = launcherRecordsHeard();
    const now = `${waits.join("\n")}|${site.wireSent.join(",")}|${site.wireReceived}|${heard}`;
    const steady = now === this.seen;
    this.seen = now;
    if (!steady || now === this.told) return;
    this.told = now;
    const sent: number[] = [];
    site.wireSent.forEach((n, r) => {
      if (n > 0) sent.push(r, n);
    });
    this.send(waits, describeUnreceived(site.matchers), sent, site.wireReceived, heard);
  }

  private send(w: string[], q: string[], o: number[], i: number, l: number): void {
    report({ t: "waits", s: ++this.reports, w, q, o, i, l });
  }
}

/** The kind of a context: a communicator's point-to-point or collective one, close's, or a pool's. */
function kindOf(context: number): { kind: "user" | "collective" | "close" | "pool"; split: boolean } {
  if (context === CLOSE_CONTEXT) return { kind: "close", split: false };
  const split = context >= WORLD_CONTEXTS;
  const offset = split ? (context - WORLD_CONTEXTS) % SUB_CONTEXTS : context;
  const kind = offset === CONTEXT.user ? "user" : offset === CONTEXT.collective ? "collective" : "pool";
  return { kind, split };
}

/** The receives and collectives waiting, as `recv (from rank 1, tag 5)`, `barrier (from rank 0)`. */
export function describeWaits(matchers: ReadonlyMap<number, Matcher>): string[] {
  const out = new Set<string>();
  for (const [context, m] of matchers) {
    if (m.waiting === 0) continue;
    const { kind, split } = kindOf(context);
    // A collective's tag is its sequence number, and close's are its own: they say nothing to the app; close
    // runs collectives of its own, named for close.
    const tags = kind === "user" || kind === "pool";
    for (const w of m.describePending(tags, kind === "close" ? "close" : undefined)) {
      out.add(split ? `${w} in a communicator from split` : w);
    }
  }
  return [...out].slice(0, MAX_LISTED);
}

/** The messages of the app's that no receive took, as `from rank 0, tag 5`. */
function describeUnreceived(matchers: ReadonlyMap<number, Matcher>): string[] {
  const out: string[] = [];
  for (const [context, m] of matchers) {
    if (m.size === 0) continue;
    const { kind, split } = kindOf(context);
    if (kind !== "user") continue;
    for (const q of m.describeQueued()) out.push(split ? `${q} in a communicator from split` : q);
  }
  return out.slice(0, MAX_LISTED);
}
