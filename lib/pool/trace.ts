import { report } from "../control/report.ts";

/** Back-to-back tasks closer than this are drawn as one span (with a task count), so tiny tasks stay cheap. */
const COALESCE_MS = 0.05;

/** One event of the Chrome Trace Event Format (times in microseconds since the epoch). */
export interface TraceEvent {
  name: string;
  ph: "X" | "i" | "s" | "f" | "M";
  ts: number;
  pid: number;
  tid: number;
  dur?: number;
  id?: string;
  bp?: "e";
  s?: "t" | "p" | "g";
  cat?: string;
  args?: Record<string, unknown>;
}

const epochUs = (t: number) => Math.round((performance.timeOrigin + t) * 1000);

/**
 * Records one rank's part of one pool run for `--trace`: busy spans (runs of tasks), idle spans between
 * them, flow events for messages that move work, and instants for termination tokens. Sent to the launcher at
 * the end of the run, as JSON lines over the rank's control channel (so a rank on another host traces too); the
 * launcher merges the ranks into one trace file.
 */
export class TraceRecorder {
  private readonly events: TraceEvent[] = [];
  private spanStart = -1;
  private spanEnd = 0;
  private spanTasks = 0;
  private flowSeq = 0;

  constructor(
    private readonly rank: number,
    private readonly pool: string,
    private readonly idleName: string,
    private lastEnd: number,
  ) {}

  /** A task ran from t0 to t1 (performance.now() ms). */
  task(t0: number, t1: number): void {
    this.tasks(t0, t1, 1);
  }

  /** `n` tasks ran back to back from t0 to t1 (sync tasks are timed a stride at a time: executor.ts). */
  tasks(t0: number, t1: number, n: number): void {
    if (this.spanTasks > 0 && t0 - this.spanEnd < COALESCE_MS) {
      this.spanEnd = t1;
      this.spanTasks += n;
      return;
    }
    this.closeSpan(t0);
    this.spanStart = t0;
    this.spanEnd = t1;
    this.spanTasks = n;
  }

  private closeSpan(next: number): void {
    if (this.spanTasks > 0) {
      this.push("X", this.spanTasks === 1 ? "task" : "tasks", this.spanStart, this.spanEnd - this.spanStart, {
        tasks: this.spanTasks,
      });
      this.lastEnd = this.spanEnd;
      this.spanTasks = 0;
    }
    if (next - this.lastEnd > COALESCE_MS) this.push("X", this.idleName, this.lastEnd, next - this.lastEnd);
    this.lastEnd = next;
  }

  /** A message that moves work leaves this rank; returns the flow id to carry in the message. */
  flowOut(name: string, args?: Record<string, unknown>): string {
    const id = `${this.pool}.${this.rank}.${this.flowSeq++}`;
    const t = performance.now();
    this.push("X", name, t, 0.001, args);
    this.events.push({ name, ph: "s", ts: epochUs(t), pid: this.rank, tid: 0, id, cat: "flow" });
    return id;
  }

  /** The message with flow `id` arrived here. */
  flowIn(name: string, id: string, args?: Record<string, unknown>): void {
    const t = performance.now();
    this.push("X", name, t, 0.001, args);
    this.events.push({ name, ph: "f", bp: "e", ts: epochUs(t), pid: this.rank, tid: 0, id, cat: "flow" });
  }

  instant(name: string, args?: Record<string, unknown>): void {
    this.events.push({ name, ph: "i", s: "t", ts: epochUs(performance.now()), pid: this.rank, tid: 0, args });
  }

  private push(ph: "X", name: string, t: number, durMs: number, args?: Record<string, unknown>): void {
    const e: TraceEvent = {
      name,
      ph,
      ts: epochUs(t),
      dur: Math.max(1, Math.round(durMs * 1000)),
      pid: this.rank,
      tid: 0,
    };
    if (args) e.args = args;
    this.events.push(e);
  }

  /** Ends the run at `t` and sends this rank's events to the launcher. */
  finish(t: number): void {
    this.closeSpan(t);
    const lines = this.events.map((e) => JSON.stringify(e)).join("\n");
    if (lines) report({ t: "trace", lines: `${lines}\n` });
    this.events.length = 0;
  }
}
