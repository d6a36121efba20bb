import { readFileSync, readdirSync, writeFileSync } from "node:fs";
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
