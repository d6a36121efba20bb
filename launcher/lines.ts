import type { Readable, Writable } from "node:stream";

/** A line longer than this (characters) is passed on in pieces, each ending with CONTINUED. */
export const MAX_LINE = 1 << 20;
export const CONTINUED = " [workpool: line continues]";

/**
 * Copies a rank's output stream to `out` whole lines at a time, each behind `prefix`, so lines from
 * different ranks never mix within a line. A last line without a newline is completed at end of stream.
 * `onLine` sees the last non-empty line of each chunk (without prefix), for failure summaries, or every
 * line when `everyLine` is set (the report channel). A rank that prints a huge line without a newline is
 * passed on in pieces of MAX_LINE characters, so the launcher never holds more than one piece of it.
 */
export function pipeLines(
  input: Readable,
  out: Writable,
  prefix: string,
  onLine?: (line: string) => void,
  everyLine = false,
): Promise<void> {
  let rest = "";
  input.setEncoding("utf8");
  const emit = (text: string) => {
    if (onLine && everyLine) {
      for (const l of text.split("\n")) onLine(l);
    } else if (onLine) {
      const lines = text.split("\n");
      for (let i = lines.length - 1; i >= 0; i--) {
        const l = lines[i] as string;
        if (l.trim() !== "") {
          onLine(l);
          break;
        }
      }
    }
    if (prefix === "") out.write(`${text}\n`);
    else out.write(`${prefix}${text.replaceAll("\n", `\n${prefix}`)}\n`);
  };
  input.on("data", (chunk: string) => {
    const cut = chunk.lastIndexOf("\n");
    if (cut < 0) {
      rest += chunk;
      while (rest.length > MAX_LINE) {
        emit(`${rest.slice(0, MAX_LINE)}${CONTINUED}`);
        rest = rest.slice(MAX_LINE);
      }
      return;
    }
    const text = rest + chunk.slice(0, cut);
    rest = chunk.slice(cut + 1);
    emit(text);
  });
  return new Promise((resolve) => {
    input.on("close", () => {
      if (rest !== "") emit(rest);
      rest = "";
      resolve();
    });
  });
}
