import { badInputLine, InputError } from "./errors.ts";

/**
 * What an app option takes: a value (string), nothing (a switch), or a list: every argument up to the next
 * `--option` (`--pgm a.pgm b.pgm`); a repeated list option appends.
 */
export type OptionSpec = Record<string, "value" | "switch" | "list">;

export type ParsedArgs<S extends OptionSpec> = {
  [K in keyof S]?: S[K] extends "value" ? string : S[K] extends "list" ? string[] : boolean;
};

/**
 * Parses `--name value`, `--name=value`, `--switch` and `--list v1 v2 ...` options of an app. Unknown options,
 * missing values and stray arguments are an InputError naming the option, so the app can print one clear line.
 */
export function parseArgs<S extends OptionSpec>(app: string, argv: readonly string[], spec: S): ParsedArgs<S> {
  const out: Record<string, string | boolean | string[]> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith("--")) throw new InputError(`${app}: unexpected argument ${JSON.stringify(arg)}`);
    const eq = arg.indexOf("=");
    const name = arg.slice(2, eq > 0 ? eq : undefined);
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined;
    if (kind === undefined) {
      const known = Object.keys(spec).map((k) => `--${k}`);
      throw new InputError(`${app}: unknown option --${name} (known: ${known.join(", ")})`);
    }
    if (kind === "switch") {
      if (eq > 0) throw new InputError(`${app}: option --${name} takes no value`);
      out[name] = true;
      continue;
    }
    if (kind === "list") {
      const values = (out[name] as string[] | undefined) ?? [];
      if (eq > 0) values.push(arg.slice(eq + 1));
      while (i + 1 < argv.length && !(argv[i + 1] as string).startsWith("--")) values.push(argv[++i] as string);
      if (values.length === 0) throw new InputError(`${app}: option --${name} needs at least one value`);
      out[name] = values;
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
 * Bad input found while loading, when ranks may find it at different times, goes through `agreeOnInput` instead.
 */
export async function runApp(app: string, rank: () => number, main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (e) {
    const line = badInputLine(app, e);
    if (line === undefined) throw e;
    if (rank() === 0) process.stderr.write(`${line}\n`);
    process.exit(2);
  }
}

/** Whether an app's arguments ask for its usage (`--help` or `-h`). */
export function wantsHelp(argv: readonly string[] = process.argv.slice(2)): boolean {
  return argv.includes("--help") || argv.includes("-h");
}

/**
 * Answers `--help` (or `-h`) among an app's arguments, before they are parsed: rank 0 prints `usage` on stdout,
 * every rank closes its world and exits 0. Otherwise returns at once.
 */
export async function answerHelp(
  world: { readonly rank: number; close(): Promise<void> },
  usage: string,
  argv: readonly string[] = process.argv.slice(2),
): Promise<void> {
  if (!wantsHelp(argv)) return;
  if (world.rank === 0) process.stdout.write(usage.endsWith("\n") ? usage : `${usage}\n`);
  await world.close();
  process.exit(0);
}
