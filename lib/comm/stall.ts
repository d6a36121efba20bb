/**
 * Deadlock diagnosis, the rank's side (the launcher's is launcher/stalls.ts). A send and a receive whose tags
 * do not match, a receive from a rank that sends nothing, a barrier one rank never reaches: MPI waits for
 * ever, and so did a job here until `--timeout`, saying nothing. The launcher can tell instead, because a rank
 * knows when it waits on messages alone, and the launcher can count the messages on their way.
 *
 * A rank waits on messages alone when the router's idle watch (Router#watchIdle) finds receives, collectives or
 * pool runs waiting and nothing else: no send held by a slow peer, no ZeroMQ socket of the app's busy, no
 * timer, immediate, socket, file operation or child process beyond what it had at start, no CPU time used
 * since the last check beyond a trace (work Node lists nowhere: a crypto or zlib job on libuv's threads, a
 * worker thread), and no async task of a pool in flight (it may await such work). A pool run between messages
 * is such a wait: what else wakes it, its timers and its turns of the event loop, are resources the watch sees;
 * a task running holds the event loop, and the watch does not look then. Such a rank can only be woken by a
 * message: from another rank, or from the launcher. When it has been so for STEADY_CHECKS checks in a row with
 * nothing changed, it tells the launcher what it waits in, how many messages it handed to each rank, how many
 * reached it, and how many launcher records it read (`waits`, lib/control/records.ts); and says so again when
 * that changes, or that it no longer waits. What the watch cannot see and uses no CPU (a timer the app unref'd)
 * is covered only by that margin.
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
import { CLOSE_CONTEXT, collectiveStep, CONTEXT, offsetInBlock, WORLD_CONTEXTS } from "./contexts.ts";
import type { Describing, Matcher } from "./matcher.ts";

/**
 * Checks in a row that must find a rank waiting, with nothing changed, before it says so: a margin for waits the
 * idle watch cannot see and that use no CPU (an unref'd timer), about 5 s at the default check interval.
 */
const STEADY_CHECKS = 5;
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
  /** The world ranks of the members of the communicator from split that owns `context`, if it is made here. */
  membersOf(context: number): readonly number[] | undefined;
}

/** One rank's reports of what it waits in (see the module's comment). */
export class StallWatch {
  /** What the last check found, while it found the rank waiting on messages alone. */
  private seen: string | undefined;
  /** What the launcher was last told; undefined: that the rank does not wait (or nothing yet). */
  private told: string | undefined;
  private reports = 0;
  /** Checks in a row, after the first, that found the same as `seen`. */
  private steady = 0;

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
    const waits = [...held, ...describeWaits(site)].slice(0, MAX_LISTED);
    const heard = launcherRecordsHeard();
    const now = `${waits.join("\n")}|${site.wireSent.join(",")}|${site.wireReceived}|${heard}`;
    this.steady = now === this.seen ? this.steady + 1 : 0;
    this.seen = now;
    if (this.steady < STEADY_CHECKS - 1 || now === this.told) return;
    this.told = now;
    const sent: number[] = [];
    site.wireSent.forEach((n, r) => {
      if (n > 0) sent.push(r, n);
    });
    this.send(waits, describeUnreceived(site), sent, site.wireReceived, heard);
  }

  private send(w: string[], q: string[], o: number[], i: number, l: number): void {
    report({ t: "waits", s: ++this.reports, w, q, o, i, l });
  }
}

/** The kind of a context: a communicator's point-to-point or collective one, close's, or a pool's. */
function kindOf(context: number): "user" | "collective" | "close" | "pool" {
  if (context === CLOSE_CONTEXT) return "close";
  const offset = offsetInBlock(context);
  return offset === CONTEXT.user ? "user" : offset === CONTEXT.collective ? "collective" : "pool";
}

/**
 * How a rank of `context`'s communicator is named: as it is in the world's; in a communicator from split, by its
 * rank there and in the world (`rank 1 of the split, world rank 3`), since the report names ranks by the world's.
 */
function rankNamer(context: number, site: StallSite): ((source: number) => string) | undefined {
  if (context < WORLD_CONTEXTS || context === CLOSE_CONTEXT) return undefined;
  const members = site.membersOf(context);
  return (source) => `rank ${source} of the split${members ? `, world rank ${members[source]}` : ""}`;
}

/**
 * The receives and collectives waiting, as `recv (from rank 1, tag 5)`, `barrier (from rank 0; collective step
 * 3)`: a collective's step is its sequence number on its communicator, which every rank takes in the same order
 * (two ranks at different steps: one skipped a collective, or called them in another order).
 */
export function describeWaits(site: StallSite): string[] {
  const out = new Set<string>();
  for (const [context, m] of site.matchers) {
    if (m.waiting === 0) continue;
    const kind = kindOf(context);
    const rank = rankNamer(context, site);
    // Close's tags are its own, and it runs collectives of its own, named for close.
    const how: Describing =
      kind === "close"
        ? { tag: "none", call: "close" }
        : { ...(kind === "collective" ? { step: collectiveStep } : {}), ...(rank ? { rank } : {}) };
    for (const w of m.describePending(how)) out.add(w);
  }
  return [...out].slice(0, MAX_LISTED);
}

/** The messages of the app's that no receive took, as `from rank 0, tag 5`. */
function describeUnreceived(site: StallSite): string[] {
  const out: string[] = [];
  for (const [context, m] of site.matchers) {
    if (m.size === 0 || kindOf(context) !== "user") continue;
    const rank = rankNamer(context, site);
    out.push(...m.describeQueued(rank));
  }
  return out.slice(0, MAX_LISTED);
}
