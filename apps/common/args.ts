import { InputError } from "./errors.ts";

/** What an app option takes: a value (string) or nothing (a switch). */
export type OptionSpec = Record<string, "value" | "switch">;

export type ParsedArgs<S extends OptionSpec> = {
  [K in keyof S]?: S[K] extends "value" ? string : boolean;
};

/**
 * Parses `--name value`, `--name=value` and `--switch` options of an app. Unknown options, missing values and
 * stray arguments are an InputError naming the option, so the app can print one clear line.
 */
export function parseArgs<S extends OptionSpec>(app: string, argv: readonly string[], spec: S): ParsedArgs<S> {
  const out: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith("--")) throw new InputError(`${app}: unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq > 0 ? eq : undefined);
    const kind = spec[name];
    if (kind === undefined) {
      const known = Object.keys(spec).map((k) => `--${k}`);
      throw new InputError(`${app}: unknown option --${name} (known: ${known.join(", ")})`);
    }
    if (kind === "switch") {
      if (eq > 0) throw new InputError(`${app}: option --${name} takes no value`);
      out[name] = true;
      continue;
    }
    const value = eq > 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || (eq < 0 && value.startsWith("--"))) {
      throw new InputError(`${app}: option --${name} needs a value`);
    }
    out[name] = value;
  }
  return out as ParsedArgs<S>;
}

/** A whole number option in [min, max]. */
export function intOption(
  app: string,
  name: string,
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!/^-?\d+$/.test(raw) || n < min || n > max) {
    throw new InputError(
      `${app}: option --${name} must be a whole number from ${min} to ${max}; got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

/**
 * Runs an app's main: bad input (an InputError, or a file that cannot be read) prints one line (`app: message`)
 * on rank 0 and exits with status 2 on every rank; anything else propagates (the launcher reports the rank).
 */
export async function runApp(app: string, rank: () => number, main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (e) {
    const fsError = e as NodeJS.ErrnoException;
    const message =
      e instanceof InputError
        ? e.message
        : typeof fsError?.path === "string" && typeof fsError.code === "string"
          ? `cannot read ${fsError.path}: ${fsError.code === "ENOENT" ? "no such file" : fsError.code}`
          : undefined;
    if (message === undefined) throw e;
    if (rank() === 0) process.stderr.write(`${message.startsWith(app) ? "" : `${app}: `}${message}\n`);
    process.exit(2);
  }
}
