import type { PoolConfig, PoolStats } from "../lib/index.ts";
import { formatTable } from "./table.ts";

/** A pool statistics record as ranks report it over the control channel (lib/pool/pool.ts). */
export interface StatsRecord {
  readonly rank: number;
  readonly pool: string;
  readonly run: number;
  readonly config: PoolConfig;
  readonly stats: PoolStats;
}

function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}

/** One table per pool run: a row per rank and a total row; mode-specific counters as extra columns. */
export function formatStats(records: readonly StatsRecord[]): string {
  const groups = new Map<string, StatsRecord[]>();
  for (const r of records) {
    const key = `${r.pool} run ${r.run}`;
    const g = groups.get(key) ?? [];
    g.push(r);
    groups.set(key, g);
  }
  const out: string[] = [];
  for (const [key, group] of groups) {
    group.sort((a, b) => a.rank - b.rank);
    const counters = [...new Set(group.flatMap((r) => Object.keys(r.stats.counters)))].sort();
    const head = ["rank", "tasks", "put", "busy ms", "idle ms", "wall ms", "msgs", "KiB", ...counters];
    const rows = [head];
    const total = new Array<number>(head.length - 1).fill(0);
    for (const r of group) {
      const s = r.stats;
      const values = [
        s.tasksExecuted,
        s.tasksPut,
        s.busyMs,
        s.idleMs,
        s.wallMs,
        s.messagesSent,
        s.bytesSent / 1024,
        ...counters.map((c) => s.counters[c] ?? 0),
      ];
      values.forEach((v, i) => (total[i] = (total[i] ?? 0) + v));
      rows.push([String(r.rank), ...values.map(fmt)]);
    }
    rows.push(["all", ...total.map(fmt)]);
    const mode = String(group[0]?.config.mode ?? "");
    out.push(`workpool: ${key} (${mode}) statistics\n${formatTable(rows)}`);
  }
  return out.join("\n\n");
}
