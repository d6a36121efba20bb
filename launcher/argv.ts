import { UsageError } from "./usage-error.ts";

/**
 * Reads a subcommand's options up to its app argument: `--flag value`, `--flag=value`, `-f value`, switches,
 * and `--` to end the options. Every bad value is a UsageError naming the option.
 */
/** The longest delay a Node timer takes. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The shortest duration a seconds option takes unless it says otherwise: less than node needs to start a rank,
 * so a job could not even begin (`--timeout 0.0001` ended every job before its first line).
 */
export const MIN_SECONDS = 0.1;

export class OptionReader {
  private i = -1;
  private inline: string | undefined;

  constructor(private readonly argv: readonly string[]) {}

  /** The next option's flag, or undefined where the options end (the app argument, or after `--`). */
  next(): string | undefined {
    const arg = this.argv[++this.i];
    if (arg === undefined) return undefined;
    if (arg === "--") {
      this.i++;
      return undefined;
    }
    if (!arg.startsWith("-") || arg === "-") return undefined;
    const eq = arg.startsWith("--") ? arg.indexOf("=") : -1;
    this.inline = eq > 0 ? arg.slice(eq + 1) : undefined;
    return eq > 0 ? arg.slice(0, eq) : arg;
  }

  /** The current option's value (inline after `=`, or the next argument). */
  value(flag: string): string {
    if (this.inline !== undefined) return this.inline;
    const v = this.argv[++this.i];
    if (v === undefined) throw new UsageError(`option ${flag} needs a value`);
    return v;
  }

  /** The current option's inline value (after `=`), if it has one: for options whose value is optional. */
  inlineValue(): string | undefined {
    return this.inline;
  }

  /** A whole number from min to max. */
  int(flag: string, min: number, max: number): number {
    const raw = this.value(flag);
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      throw new UsageError(`option ${flag} must be a whole number from ${min} to ${max}; got ${JSON.stringify(raw)}`);
    }
    return Number(raw);
  }

  /** A positive number. */
  positive(flag: string): number {
    return positiveOf(flag, this.value(flag));
  }

  /**
   * A duration in seconds: at least `min`, and short enough for a Node timer (2^31 - 1 ms, about 24.8 days; a
   * longer one would fire at once, with only a warning).
   */
  seconds(flag: string, min = MIN_SECONDS): number {
    return secondsOf(flag, this.value(flag), min, "");
  }

  /** A duration as `seconds`, or 0 for none (`what` names what 0 turns off, for the message). */
  secondsOrNone(flag: string, what: string, min = MIN_SECONDS): number {
    const raw = this.value(flag);
    return raw.trim() === "0" ? 0 : secondsOf(flag, raw, min, `0 (${what}) or `);
  }

  /** The app argument (required) and everything after it, unchanged. */
  app(command: string): { app: string; args: string[] } {
    const app = this.argv[this.i];
    if (app === undefined) throw new UsageError(`missing <app> (see workpool ${command} --help)`);
    return { app, args: this.argv.slice(this.i + 1) };
  }

  /** The arguments after the options (possibly none). */
  rest(): string[] {
    return this.argv.slice(this.i);
  }

  unknown(flag: string, command: string): never {
    const arg = this.inline !== undefined ? `${flag}=${this.inline}` : flag;
    throw new UsageError(`unknown option ${JSON.stringify(arg)} (see workpool ${command} --help)`);
  }
}

function positiveOf(flag: string, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || n <= 0) {
    throw new UsageError(`option ${flag} must be a positive number; got ${JSON.stringify(raw)}`);
  }
  return n;
}

/** A number of seconds from `min` to a Node timer's longest; `zero` says what else is taken, for the message. */
function secondsOf(flag: string, raw: string, min: number, zero: string): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || n < min || n * 1000 > MAX_TIMER_MS) {
    const max = Math.floor(MAX_TIMER_MS / 1000);
    throw new UsageError(
      `option ${flag} must be ${zero}a number of seconds from ${min} to ${max} (about 24.8 days); got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}
