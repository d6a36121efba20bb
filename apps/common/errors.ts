/**
 * The apps' one error kind: bad input (a malformed file, an invalid option or spec). Library failures keep
 * their own classes (`workpool`'s errors); these modules do not depend on the pool.
 */
export class InputError extends Error {
  readonly code = "APP_BAD_INPUT";
  /** File the problem was found in, when it came from a file. */
  readonly file: string | undefined;
  /** 1-based line number in `file`, when the format is line based. */
  readonly line: number | undefined;

  constructor(message: string, where?: { file?: string; line?: number; cause?: unknown }) {
    super(message, where?.cause === undefined ? undefined : { cause: where.cause });
    this.name = "InputError";
    this.file = where?.file;
    this.line = where?.line;
  }
}

/**
 * The one line an app prints for bad input: an InputError's message, or "cannot read FILE: ..." for a file
 * system error, prefixed with `app: ` unless it starts with it; undefined for any other error (a bug).
 */
export function badInputLine(app: string, e: unknown): string | undefined {
  const fsError = e as NodeJS.ErrnoException;
  const message =
    e instanceof InputError
      ? e.message
      : typeof fsError?.path === "string" && typeof fsError.code === "string"
        ? `cannot read ${fsError.path}: ${fsError.code === "ENOENT" ? "no such file" : fsError.code}`
        : undefined;
  if (message === undefined) return undefined;
  return message.startsWith(app) ? message : `${app}: ${message}`;
}
