/**
 * Every failure workpool reports is one of these classes, so code can tell "bad input" from "a task threw"
 * from "a rank died" from "someone aborted" with `instanceof` or by the stable `code`.
 *
 * How a failed pool run reads (it rejects on every rank):
 * - a task handler threw on rank r: TaskError (rank r, the task) on every rank, rank r included;
 * - rank r's `run` signal aborted: AbortError on rank r, PeerAbortedError (rank r) on the others;
 * - rank r's run failed otherwise (neither a task's error nor an abort): that error on rank r,
 *   RankFailedError (rank r) on the others.
 * On the other ranks `cause` is rebuilt from the original's name and message (errors do not travel whole).
 *
 * A rank that dies outright (killed, exited) brings the whole job down through the launcher, as in MPI, so no
 * rank is left to see an error for it; with one exception (docs/survival.md). Once a centralized pool with
 * `retries` exists, the job survives the death of any rank but such a pool's coordinator (killed by a signal, its
 * host lost, silent past `--heartbeat`; never a rank's own non-zero exit), and the survivors see it:
 * - that pool's run goes on (its tasks re-dealt) unless every worker died (RankFailedError) or a task was
 *   running on `retries` workers that died (TaskError naming the task);
 * - any other pool's run rejects with RankFailedError naming the dead rank;
 * - receives naming it, receives from ANY source pending when it died, sends to it, and every pending and later
 *   collective of a communicator that contains it reject with RankFailedError.
 */

export type ErrorCode =
  | "WP_INVALID_ARGUMENT"
  | "WP_ENCODE"
  | "WP_CLOSED"
  | "WP_CONFIG"
  | "WP_TASK_FAILED"
  | "WP_RANK_FAILED"
  | "WP_ABORTED"
  | "WP_STOPPED"
  | "WP_BOOTSTRAP";

/** Base class of every error workpool raises. */
export class WorkpoolError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = "WorkpoolError";
  }
}

/** A call got an argument it cannot use: the message names the call and the value. */
export class InvalidArgumentError extends WorkpoolError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("WP_INVALID_ARGUMENT", message, options);
    this.name = "InvalidArgumentError";
  }
}

/**
 * Data given to `send` (or a collective) cannot be sent as it is: it holds a function or a symbol, or is
 * circular (the message names the call and the path: `send: data.handlers[2] is a function, which cannot be
 * sent`), or msgpackr cannot encode it otherwise. Nothing was sent.
 */
export class EncodeError extends WorkpoolError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("WP_ENCODE", message, options);
    this.name = "EncodeError";
  }
}

/** The world (or pool) was closed before or while the call ran. */
export class ClosedError extends WorkpoolError {
  constructor(message: string) {
    super("WP_CLOSED", message);
    this.name = "ClosedError";
  }
}

/** A pool configuration (from code or from `--pool SPEC`) is invalid. */
export class ConfigError extends WorkpoolError {
  constructor(message: string) {
    super("WP_CONFIG", message);
    this.name = "ConfigError";
  }
}

/**
 * A task handler threw; `rank` ran it, `task` is the task, `cause` the original error. In a pool with `retries`,
 * also a task that was running on `retries` workers that died (it kills its worker): `rank` is the last of them,
 * `cause` the RankFailedError of its death.
 */
export class TaskError extends WorkpoolError {
  readonly rank: number;
  readonly task: unknown;
  constructor(rank: number, task: unknown, message: string, options?: { cause?: unknown }) {
    super("WP_TASK_FAILED", message, options);
    this.name = "TaskError";
    this.rank = rank;
    this.task = task;
  }
}

/**
 * A rank of the job can no longer take part; `rank` names it, `cause` says why. On that rank itself, when its
 * receive loop fails (a frame that does not decode, a socket error), every pending and later `recv`,
 * collective and `send` rejects with one naming the call, the rank and the cause. On the other ranks, a pool
 * run that failed on that rank for a reason other than a task's error or an abort rejects with one naming it.
 *
 * In a job that survives a rank's death (a centralized pool with `retries`; see the comment at the top of this
 * file), the survivors' calls that depend on the dead rank reject with one: `rank` is its rank in the
 * communicator called, and the message names the call and how it died. A worker's death makes a run of the pool
 * with `retries` reject with one only when it was the last worker (`every worker of the pool died ...`).
 */
export class RankFailedError extends WorkpoolError {
  readonly rank: number;
  constructor(rank: number, message: string, options?: { cause?: unknown }) {
    super("WP_RANK_FAILED", message, options);
    this.name = "RankFailedError";
    this.rank = rank;
  }
}

/**
 * A blocking call was cancelled through its AbortSignal on this rank; `cause` is the signal's reason. Its
 * subclass PeerAbortedError is another rank's abort of a run this rank takes part in: `instanceof AbortError`
 * (or `code === "WP_ABORTED"`) catches every abort, `instanceof PeerAbortedError` only the others'.
 */
export class AbortError extends WorkpoolError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("WP_ABORTED", message, options);
    this.name = "AbortError";
  }
}

/**
 * Another rank aborted a pool run this rank takes part in (its `run` signal aborted): `rank` names it, the
 * message is that rank's ("run aborted on rank 2"), `cause` is its signal's reason, rebuilt here as an Error
 * with the reason's name and message. An AbortError, with the same code.
 */
export class PeerAbortedError extends AbortError {
  readonly rank: number;
  constructor(rank: number, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PeerAbortedError";
    this.rank = rank;
  }
}

/**
 * The reason of a handler's `ctx.signal` when a task ended the run on purpose with `ctx.stop` (the run itself
 * resolves, with `stopped: true`): `fetch`, timers and streams given the signal reject with it.
 */
export class StoppedError extends WorkpoolError {
  constructor(message: string) {
    super("WP_STOPPED", message);
    this.name = "StoppedError";
  }
}

/**
 * The rank could not join its job: a bad environment, a rendezvous it cannot connect to within
 * WORKPOOL_CONNECT_TIMEOUT_MS (default 10 s; the message names its address), or ranks that never all joined.
 */
export class BootstrapError extends WorkpoolError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("WP_BOOTSTRAP", message, options);
    this.name = "BootstrapError";
  }
}

/** Short, printable rendering of a value for error messages. */
export function describe(value: unknown): string {
  if (typeof value === "string") return JSON.stringify(value.length > 60 ? `${value.slice(0, 57)}...` : value);
  if (typeof value === "bigint") return `${value}n`;
  if (typeof value === "function") return `function ${value.name || "(anonymous)"}`;
  if (typeof value === "symbol") return value.toString();
  if (value === null || typeof value !== "object") return String(value);
  try {
    const s = JSON.stringify(value);
    if (s !== undefined) return s.length > 60 ? `${s.slice(0, 57)}...` : s;
  } catch {
    /* fall through: circular or not serialisable */
  }
  return Object.prototype.toString.call(value);
}
