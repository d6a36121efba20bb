/**
 * Every failure workpool reports is one of these classes, so code can tell "bad input" from "a task threw"
 * from "a rank died" with `instanceof` or by the stable `code`.
 */

export type ErrorCode =
  | "WP_INVALID_ARGUMENT"
  | "WP_ENCODE"
  | "WP_CLOSED"
  | "WP_CONFIG"
  | "WP_TASK_FAILED"
  | "WP_RANK_FAILED"
  | "WP_ABORTED"
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

/** Data given to `send` (or a collective) could not be encoded by msgpackr. */
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

/** A task handler threw; `rank` ran it, `task` is the task, `cause` the original error. */
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

/** Another rank of the job failed; `rank` names it. */
export class RankFailedError extends WorkpoolError {
  readonly rank: number;
  constructor(rank: number, message: string, options?: { cause?: unknown }) {
    super("WP_RANK_FAILED", message, options);
    this.name = "RankFailedError";
    this.rank = rank;
  }
}

/** A blocking call was cancelled through its AbortSignal; `cause` is the signal's reason. */
export class AbortError extends WorkpoolError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("WP_ABORTED", message, options);
    this.name = "AbortError";
  }
}

/** The rank could not join its job (bad environment, rendezvous failed). */
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
