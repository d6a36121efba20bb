import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { LiveJob } from "./state.ts";

/** The most trace events read from the ranks' parts for one download (a longer trace is cut, and says so). */
const MAX_EVENTS = 2_000_000;

/**
 * The trace so far, in Chrome Trace Event Format (Perfetto, chrome://tracing): one track per rank with its busy
 * and waiting fractions per dashboard column (counter events, from the live samples: always there), and, for a
 * job run with `--trace`, the pool runs' events that the ranks have sent so far (a rank sends a run's events
 * when the run ends, so a run under way is not in them yet; once the job has ended, the events of its trace file).
 */
export function traceSoFar(
  live: LiveJob,
  np: number,
  traceDir: string | undefined,
  traceFile: string | undefined,
): object {
  const events: unknown[] = [];
  for (let r = 0; r < np; r++) {
    events.push({ name: "process_name", ph: "M", pid: r, tid: 0, args: { name: `rank ${r}` } });
    events.push({ name: "process_sort_index", ph: "M", pid: r, tid: 0, args: { sort_index: r } });
  }
  const s = live.snapshot();
  for (const rank of s.ranks) {
    rank.bins.forEach((b, i) => {
      if (!b || b[3] === 0) return;
      const ts = (s.job.startedAt + (s.binsFrom + i) * s.binMs) * 1000;
      const args = { busy: b[0] / b[3], waiting: b[1] / b[3] };
      events.push({ name: "live (fraction of time)", ph: "C", ts, pid: rank.rank, tid: 0, args });
    });
  }
  let cut = false;
  const pools = traceDir !== undefined;
  // Once the job has ended, its parts are merged into the --trace file (and the job folder is gone).
  if (live.over && traceFile !== undefined) {
    try {
      const merged = JSON.parse(readFileSync(traceFile, "utf8")) as { traceEvents?: unknown[] };
      for (const e of merged.traceEvents ?? []) {
        if ((e as { ph?: string }).ph !== "M") events.push(e);
      }
      traceDir = undefined;
    } catch {
      /* not written (yet): the parts, if still there */
    }
  }
  if (traceDir !== undefined) {
    let names: string[] = [];
    try {
      names = readdirSync(traceDir).filter((n) => /^rank-\d+\.jsonl$/.test(n));
    } catch {
      /* no parts yet */
    }
    for (const name of names) {
      let text = "";
      try {
        text = readFileSync(join(traceDir, name), "utf8");
      } catch {
        continue;
      }
      for (const line of text.split("\n")) {
        if (line === "") continue;
        if (events.length >= MAX_EVENTS) {
          cut = true;
          break;
        }
        try {
          events.push(JSON.parse(line));
        } catch {
          /* a line being written */
        }
      }
    }
  }
  const metadata = { source: "workpool dashboard", pools, cut };
  return { traceEvents: events, displayTimeUnit: "ms", metadata };
}
