import { beatIntervalMs, firstRecordDueMs } from "./heartbeat.ts";
import type { Rank } from "./rank.ts";
import type { StopPolicy } from "./stop-policy.ts";
import type { Survival } from "./survival.ts";

export interface WatchdogOptions {
  /** The job's ranks, as they are started. */
  readonly ranks: readonly Rank[];
  readonly survival: Survival;
  readonly policy: StopPolicy;
  /** How a message names a rank (with its host when it is remote). */
  readonly where: (rank: number) => string;
  /** How long a rank may stay silent (`--heartbeat`); 0: no watchdog. */
  readonly heartbeatMs: number;
  /** What node gets to start a local rank, beyond heartbeatMs (startAllowanceMs, heartbeat.ts). */
  readonly startMs: number;
}

/** What a message says of `--heartbeat`. */
const HEARTBEAT_OPTION = "--heartbeat SECONDS to change, 0 for none";

/**
 * Ranks that go quiet. A rank is heard from by its reports and heartbeats, the first sent by its preload before
 * the app runs (heartbeat.ts has the times); one silent for heartbeatMs is stopped or hung, and so is one never
 * heard from once its start is overdue (its process stopped or hung while node started it, or a remote one's
 * agent that hangs). A silent rank brings the job down, named; one the job survives is killed instead, so that
 * it can never come back with late messages, and counted dead at once.
 *
 * The time a rank's main thread spent waiting for a core, where the back-end can see it (local ranks), does not
 * count as silence: a crowded machine is not a hung rank. 64 ranks of a TypeScript app profiled with
 * `--node-arg=--cpu-prof` on 2 cores loaded their modules so slowly, each waiting its turn among 64, that one
 * sent no beat for 30 s and the job was brought down; counted this way they ran to the end. The wait is read
 * at the first check after a rank was last heard from, so what it waited between that and the check still
 * counts as silence: the watchdog errs towards finding a rank silent, by at most one check's interval.
 */
export class Watchdog {
  /** Ranks found silent: their connections are cut off at the end, not waited for. */
  readonly silent = new Set<number>();
  private timer: NodeJS.Timeout | undefined;
  /** Per rank: when it was last heard from, as the last check saw it, and how long it had waited for a core then. */
  private readonly waits = new Map<number, { heardAt: number; waited: number }>();

  constructor(private readonly opts: WatchdogOptions) {}

  /** Checks the ranks every heartbeat interval (the ranks' own), from now on. */
  start(): void {
    if (this.opts.heartbeatMs > 0) this.timer = setInterval(() => this.check(), beatIntervalMs(this.opts.heartbeatMs));
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Looks for a silent rank now (the timer's call; a test's, with a clock of its own). */
  check(now = Date.now()): void {
    const { ranks, survival, policy } = this.opts;
    if (policy.decided) return;
    this.markWaits(ranks);
    const isSilent = (r: Rank) =>
      !r.exited &&
      !survival.isDead(r.rank) &&
      (r.heard
        ? now - r.lastHeard > this.opts.heartbeatMs && this.silentMs(r, now) > this.opts.heartbeatMs
        : now - r.lastHeard > this.dueMs(r) || this.stoppedAtStart(r, now));
    let silent = ranks.find(isSilent);
    // What is said of a silent rank is read before it is killed: a stopped process is no longer one once killed.
    while (silent && survival.survives(silent.rank)) {
      const why = this.why(silent, now);
      silent.process.signal("SIGKILL");
      survival.died(silent.rank, why);
      silent = ranks.find(isSilent);
    }
    if (!silent) return;
    this.silent.add(silent.rank);
    const reason = this.reason(silent, now);
    // A stopped rank acts on no SIGTERM: it would hold the job for the grace, to go only by SIGKILL.
    silent.process.signal("SIGKILL");
    policy.stop(reason, 1);
  }

  /** Notes how long each rank heard from since the last check had waited for a core (see the class). */
  private markWaits(ranks: readonly Rank[]): void {
    for (const r of ranks) {
      if (!r.heard || r.exited || this.waits.get(r.rank)?.heardAt === r.lastHeard) continue;
      const waited = r.process.waitedForCoreMs?.();
      if (waited === undefined) this.waits.delete(r.rank);
      else this.waits.set(r.rank, { heardAt: r.lastHeard, waited });
    }
  }

  /** How long `r` has been silent, less what it waited for a core since the check after it was last heard. */
  private silentMs(r: Rank, now: number): number {
    return now - r.lastHeard - this.waitedSinceHeard(r);
  }

  private waitedSinceHeard(r: Rank): number {
    const mark = this.waits.get(r.rank);
    if (mark?.heardAt !== r.lastHeard) return 0;
    const waited = r.process.waitedForCoreMs?.();
    return waited === undefined ? 0 : Math.max(0, waited - mark.waited);
  }

  /** When `r`, not heard from yet, is overdue (ms after it started). */
  private dueMs(r: Rank): number {
    return firstRecordDueMs(this.opts.heartbeatMs, r.remote, this.opts.startMs);
  }

  /**
   * Whether `r` has not been heard from yet and its process is stopped: it is not starting, and is overdue after
   * heartbeatMs, as a rank that stopped answering is, not after the allowance for a slow start.
   */
  private stoppedAtStart(r: Rank, now: number): boolean {
    return !r.heard && now - r.lastHeard > this.opts.heartbeatMs && (r.process.stopped?.() ?? false);
  }

  /** Why silent `r` is counted dead, when the job survives it. */
  private why(r: Rank, now: number): string {
    if (r.heard) return `sent no heartbeat for ${this.opts.heartbeatMs / 1000} s`;
    if (this.stoppedAtStart(r, now)) {
      return `was stopped before its first record, ${seconds(now - r.lastHeard)} s after it started`;
    }
    return `did not start within ${seconds(this.dueMs(r))} s`;
  }

  /** The line that says why silent `r` brought the job down. */
  private reason(r: Rank, now: number): string {
    const stopping = this.opts.policy.stoppingAll();
    const rank = this.opts.where(r.rank);
    if (r.heard) {
      const waited = this.waitedSinceHeard(r);
      const crowded = waited >= 1000 ? `, besides ${seconds(waited)} s waiting for a core` : "";
      return (
        `workpool: ${rank} sent no heartbeat for ${this.opts.heartbeatMs / 1000} s${crowded} (stopped, or ` +
        `blocked in one synchronous stretch that long; ${HEARTBEAT_OPTION}); ${stopping}`
      );
    }
    if (this.stoppedAtStart(r, now)) {
      return (
        `workpool: ${rank} ${this.why(r, now)} (its process is stopped: SIGSTOP, or a debugger; ` +
        `${HEARTBEAT_OPTION}); ${stopping}`
      );
    }
    // Never heard from at all: the rank did not start, which is not the same as a rank that stopped answering. A
    // remote one's host or agent is the likely cause; a local one's process was stopped, or node hung while
    // starting it, before the preload could say a word.
    const notStarted = r.remote
      ? `never connected to the launcher: is its host reachable, and does the agent give up on one that is ` +
        `not, as ssh -o ConnectTimeout=8 does?`
      : `sent nothing to the launcher since its process started: stopped, or hung while node started it; ` +
        HEARTBEAT_OPTION;
    return `workpool: ${rank} did not start within ${seconds(this.dueMs(r))} s (${notStarted}); ${stopping}`;
  }
}

/** A duration in ms as whole seconds, rounded up, for messages. */
function seconds(ms: number): number {
  return Math.ceil(ms / 1000);
}
