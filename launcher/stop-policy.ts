import { how, nameRanks, type Rank, signalStatus } from "./rank.ts";
import type { Survival } from "./survival.ts";

/** ssh's status when the connection to the host was lost (or never made). */
const SSH_LOST = 255;

/** How long ranks get between SIGTERM and SIGKILL when the job is brought down. */
const GRACE_MS = 2000;

/** The signals that bring the job down (a second one: at once). */
const SIGNALS: readonly NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/** How a rank that failed ended. */
export interface Failure {
  readonly rank: number;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** Why the launcher brought the job down (a signal, the timeout, a silent rank): its last line, and the status. */
export interface Stop {
  readonly reason: string;
  readonly status: number;
}

/**
 * How the job ended, for its summary (exit-summary.ts): brought down by the launcher; or by `failure`, the first
 * rank that failed, with every rank that failed before any was stopped (`own`, in exit order: several often
 * fail on the same bad input); or neither (undefined: every rank ended well, or died and was survived).
 */
export type Outcome =
  { readonly stop: Stop } | { readonly failure: Failure; readonly own: readonly Failure[] } | undefined;

export interface StopPolicyOptions {
  /** The number of ranks, for messages. */
  readonly np: number;
  /** The job's ranks, as they are started. */
  readonly ranks: readonly Rank[];
  readonly survival: Survival;
  /** Resolves once what ranks wrote so far has been read (ControlServer#caughtUp). */
  readonly caughtUp: () => Promise<void>;
  /** Bring the job down after this long (`--timeout`). */
  readonly timeoutSeconds: number | undefined;
  /** What ranks last said they wait in (stalls.ts), for the timeout's message: a line each. */
  readonly waiting?: () => readonly string[];
  /** The line naming the ranks still running that wait on no message alone (stalls.ts `others`), if any. */
  readonly others?: () => string | undefined;
  /** How a message names a rank (with its host when it is remote); `rank N` without. */
  readonly where?: (rank: number) => string;
}

/**
 * When and how the job is brought down: every rank gets SIGTERM, and SIGKILL GRACE_MS later. The first rank
 * that fails brings it down, and is the failure the summary names; so does a signal to the launcher (a second
 * one kills every rank at once), the timeout, or a rank the watchdog finds silent (`stop`), each with a line of
 * its own and an exit status. The exception: once a pool has asked for it, the death of a rank that is not
 * essential to it (survival.ts) is survived, as long as no rank was stopped yet.
 */
export class StopPolicy {
  /** Set once the ranks were sent SIGTERM. */
  private stopping = false;
  private stopped: Stop | undefined;
  private failure: Failure | undefined;
  private readonly own: Failure[] = [];
  private killTimer: NodeJS.Timeout | undefined;
  private timeout: NodeJS.Timeout | undefined;

  constructor(private readonly opts: StopPolicyOptions) {}

  /** Listens for the signals that bring the job down, and starts the timeout. */
  start(): void {
    for (const signal of SIGNALS) process.on(signal, this.onSignal);
    const seconds = this.opts.timeoutSeconds;
    if (seconds === undefined) return;
    this.timeout = setTimeout(() => {
      if (this.decided) return;
      const waits = this.opts.waiting?.() ?? [];
      const said = waits.length === 0 ? "" : `\nwhat ranks last said they wait in:\n${waits.join("\n")}`;
      const others = this.opts.others?.();
      const busy = others === undefined ? "" : `\n${others}`;
      this.stop(`workpool: job timed out after ${seconds} s; ${this.stoppingAll()}${said}${busy}`, 124);
    }, seconds * 1000);
  }

  /** Once every rank has exited: no more timers, and the signals are the process's again. */
  dispose(): void {
    clearTimeout(this.timeout);
    clearTimeout(this.killTimer);
    for (const signal of SIGNALS) process.off(signal, this.onSignal);
  }

  /** Whether the job's end is decided: the launcher brought it down, or a rank failed. */
  get decided(): boolean {
    return this.stopped !== undefined || this.failure !== undefined;
  }

  /** `stopping N ranks`, for the line that says why. */
  stoppingAll(): string {
    return `stopping ${this.opts.np} rank${this.opts.np === 1 ? "" : "s"}`;
  }

  /** Brings the job down: `reason` is the launcher's last line, `status` its exit status. The first reason holds. */
  stop(reason: string, status: number): void {
    this.stopped ??= { reason, status };
    this.stopAll();
  }

  /** How the job ended; read once every rank has exited. */
  get outcome(): Outcome {
    if (this.stopped) return { stop: this.stopped };
    return this.failure ? { failure: this.failure, own: this.own } : undefined;
  }

  /**
   * Rank `r`'s process ended: a failure brings the job down, unless it is a death the job survives. A rank that
   * failed before the job was being stopped, or that exited with a status of its own after (not by our SIGTERM
   * or SIGKILL), failed on its own. Only the first kind is a death the job may survive.
   */
  async exited(r: Rank, code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    const { survival } = this.opts;
    // Killed by the launcher after missing its heartbeats: counted dead then.
    if (survival.isDead(r.rank)) return;
    if (code === 0 && signal === null) return;
    const early = !this.stopping;
    const own = early || (signal === null && code !== 143);
    // A death is a rank killed (a signal: SIGKILL, the kernel's OOM killer, a crash's SIGSEGV or SIGABRT) or a
    // remote rank whose connection was lost (ssh's 255). A status of the rank's own (an uncaught error, a
    // process.exit) is the app's verdict, and ends the job as always: a worker that rethrows its failed run's
    // error is no death to survive.
    const died = signal !== null || (r.remote && code === SSH_LOST);
    // What ranks wrote before this death is read first: a tolerate record still on its way decides it.
    await this.opts.caughtUp();
    if (early && died && !this.decided && survival.survives(r.rank)) {
      survival.died(r.rank, how(code, signal));
      return;
    }
    const failure = { rank: r.rank, code, signal };
    if (this.stopped === undefined && own) this.own.push(failure);
    if (!this.decided) {
      this.failure = failure;
      this.stopAll();
    }
  }

  private readonly onSignal = (signal: NodeJS.Signals): void => {
    if (this.stopped !== undefined) {
      for (const r of this.opts.ranks) if (!r.exited) r.process.signal("SIGKILL");
      return;
    }
    this.stop(`workpool: received ${signal}; ${this.stoppingAll()}`, signalStatus(signal));
  };

  private stopAll(): void {
    this.stopping = true;
    for (const r of this.opts.ranks) if (!r.exited) r.process.signal("SIGTERM");
    this.killTimer ??= setTimeout(() => {
      const left = this.opts.ranks.filter((r) => !r.exited);
      if (left.length === 0) return;
      // Said, since the job then ends later than a stop does (an app's SIGTERM handler that does not exit).
      const named = nameRanks(
        left.map((r) => r.rank),
        this.opts.where ?? ((rank) => `rank ${rank}`),
      );
      const verb = left.length === 1 ? "was" : "were";
      process.stderr.write(
        `workpool: ${named} ${verb} still running ${GRACE_MS / 1000} s after SIGTERM; killing with SIGKILL\n`,
      );
      for (const r of left) r.process.signal("SIGKILL");
    }, GRACE_MS);
  }
}
