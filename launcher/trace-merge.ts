import { appendFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/**
 * Merges the ranks' trace parts (`rank-<r>.jsonl`, written by lib/pool/trace.ts) into one Chrome Trace Event
 * Format file with one track per rank, which Perfetto and chrome://tracing open.
 */
export function mergeTrace(dir: string, np: number, file: string): number {
  const events: unknown[] = [];
  for (let r = 0; r < np; r++) {
    events.push({ name: "process_name", ph: "M", pid: r, tid: 0, args: { name: `rank ${r}` } });
    events.push({ name: "process_sort_index", ph: "M", pid: r, tid: 0, args: { sort_index: r } });
    events.push({ name: "thread_name", ph: "M", pid: r, tid: 0, args: { name: "pool" } });
  }
  let count = 0;
  // A folder that cannot be read (the launcher could not write it) gives a trace of the ranks' tracks only.
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    /* no parts */
  }
  for (const name of names) {
    if (!/^rank-\d+\.jsonl$/.test(name)) continue;
    for (const line of readFileSync(join(dir, name), "utf8").split("\n")) {
      if (line === "") continue;
      events.push(JSON.parse(line));
      count++;
    }
  }
  writeFileSync(file, JSON.stringify({ traceEvents: events, displayTimeUnit: "ms" }));
  return count;
}

/**
 * A job's trace (`--trace`): the ranks' trace events, written to their parts in the job folder as they come,
 * merged into the trace file at the end. A failed write loses those events, never the job: the first is a
 * warning, the count comes at the end.
 */
export class TraceParts {
  /** Trace events that could not be written to the job folder (EMFILE, a full disk): the trace lacks them. */
  private lost: { events: number; ranks: Set<number> } | undefined;

  /**
   * Makes the folder `dir` for the parts; `file` is the trace to write at the end, `write` where warnings go
   * while the job runs.
   */
  constructor(
    readonly dir: string,
    private readonly file: string,
    private readonly write: (text: string) => void,
  ) {
    mkdirSync(dir);
  }

  /** Rank `rank`'s trace events, JSON lines (a trace record). */
  append(rank: number, lines: string): void {
    try {
      appendFileSync(join(this.dir, `rank-${rank}.jsonl`), lines);
    } catch (e) {
      if (!this.lost) {
        this.lost = { events: 0, ranks: new Set() };
        this.write(
          `workpool: warning: could not write rank ${rank}'s trace events to the job folder ` +
            `(${(e as Error).message}); the job goes on, the trace ${this.file} will lack them\n`,
        );
      }
      this.lost.events += lines.split("\n").filter((l) => l !== "").length;
      this.lost.ranks.add(rank);
    }
  }

  /**
   * Once every rank has exited: merges the parts of `np` ranks into the trace and says where it went, with how
   * many events (a user otherwise has only the option they gave to find it); what fails is a warning on stderr.
   */
  finish(np: number): void {
    try {
      const merged = mergeTrace(this.dir, np, this.file);
      process.stderr.write(
        `workpool: trace of ${np} rank${np === 1 ? "" : "s"} written to ${this.file} (${merged} events; ` +
          "open it in https://ui.perfetto.dev or chrome://tracing)\n",
      );
      if (this.lost) {
        const { events, ranks } = this.lost;
        const which = [...ranks].sort((a, b) => a - b).join(", ");
        process.stderr.write(
          `workpool: warning: trace ${this.file} lacks ${events} events of rank${ranks.size === 1 ? "" : "s"} ${which} that could not be written\n`,
        );
      }
    } catch (e) {
      process.stderr.write(`workpool: warning: could not write trace ${this.file}: ${(e as Error).message}\n`);
    }
  }
}
