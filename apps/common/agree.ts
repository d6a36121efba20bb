/**
 * Loading input on every rank with one outcome for all. When one rank finds bad input and exits at once, the
 * launcher stops the others, possibly before rank 0 has printed its line; and a rank that reads only its part
 * of a file may find a problem the others do not see. So every rank loads, then the ranks agree.
 */
import type { World } from "workpool";
import { badInputLine } from "./errors.ts";

/**
 * Runs `load` (parse the arguments, read and check the input) on every rank, then agrees on the outcome; a
 * collective, so call it on every rank at the same point. When no rank found bad input, resolves to this rank's
 * value. Otherwise rank 0 prints the line of the lowest rank that found it (`badInputLine`), and after a
 * barrier (so the launcher stops no rank before that line is out) every rank closes its world and exits with
 * status 2. Any other error propagates at once, as a rank failure.
 */
export async function agreeOnInput<T>(app: string, world: World, load: () => Promise<T> | T): Promise<T> {
  let value: T | undefined;
  let line: string | null = null;
  try {
    value = await load();
  } catch (e) {
    line = badInputLine(app, e) ?? null;
    if (line === null) throw e;
  }
  const lines = await world.allgather(line);
  const first = lines.find((l) => l !== null);
  if (first === undefined || first === null) return value as T;
  if (world.rank === 0) process.stderr.write(`${first}\n`);
  await world.barrier();
  await world.close();
  process.exit(2);
}
