import { spawn } from "node:child_process";
import { constants, cpus, loadavg, totalmem } from "node:os";
import { fileURLToPath } from "node:url";
import type { Readable } from "node:stream";
import * as zmq from "zeromq";

/**
 * What every benchmark suite shares: the suite interface the dispatcher (`bench/index.ts`) runs, the machine
 * header, table printing, starting the processes a suite measures and driving them over a control channel.
 */

/** One benchmark suite: a file `bench/<name>.ts` exporting `suite`, registered by one line in `bench/index.ts`. */
export interface Suite {
  readonly name: string;
  /** One line for `npm run bench -- --help`. */
  readonly description: string;
  /** The options the suite takes after its name (`npm run bench -- <suite> [options]`), one line each; none if absent. */
  readonly options?: readonly string[];
  /**
   * Runs the suite with the options given after its name, prints its own table, and reports how many targets
   * it missed. Bad options throw a `BenchUsageError`.
   */
  run(args: readonly string[]): Promise<SuiteReport>;
  /** Checks the options without running anything (throws a `BenchUsageError`). */
  check?(args: readonly string[]): void;
}

/** A bad option for a suite: the dispatcher prints the message and exits with status 2 before anything runs. */
export class BenchUsageError extends Error {}

export interface SuiteReport {
  readonly targets: number;
  readonly misses: number;
}

/** Counts a suite's targets and misses: `verdict(ok)` is the table's "pass" or "MISS"; `report()` the total. */
export function scorecard(): { verdict(ok: boolean): "pass" | "MISS"; report(): SuiteReport } {
  let targets = 0;
  let misses = 0;
  return {
    verdict(ok) {
      targets++;
      if (!ok) misses++;
      return ok ? "pass" : "MISS";
    },
    report: () => ({ targets, misses }),
  };
}

/** Folder of the repository (the bench runs from any working directory). */
export const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The workpool command, as a user runs it. */
export const WORKPOOL_BIN = fileURLToPath(new URL("../bin/workpool.js", import.meta.url));

export function machineFacts(): string[] {
  const cpu = cpus();
  const model = cpu[0]?.model.trim() ?? "unknown cpu";
  return [
    `machine: ${cpu.length} cores (${model}), ${(totalmem() / 2 ** 30).toFixed(1)} GiB RAM, ${process.platform}/${process.arch}`,
    `node ${process.version}; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")} at start (other work on the machine makes every figure noisier)`,
  ];
}

/** Formats rows as an aligned text table; the first row is the header. Numbers should be preformatted. */
export function formatTable(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  const [head, ...body] = rows;
  if (!head) return "";
  const rule = widths.map((w) => "-".repeat(w)).join("  ");
  return [line(head), rule, ...body.map(line)].join("\n");
}

/** The median of `xs` (the mean of the middle two when their number is even; NaN when empty): compare's. */
export { median } from "../launcher/compare/rows.ts";

/** Formats a number with about three significant digits and thousands separators. */
export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : 2;
  return n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

export interface StartOptions {
  /** Kill the process group and fail after this long. */
  readonly timeoutMs: number;
  readonly env?: NodeJS.ProcessEnv;
}

export interface Child {
  /** What the process is, for messages. */
  readonly label: string;
  /** Resolves with everything it wrote to stdout once it exits 0; rejects with the tail of stderr otherwise. */
  readonly exited: Promise<string>;
  /** Kills its whole process group. */
  kill(): void;
  /** Its stderr, as text (for a suite that reads a line while the process runs). */
  readonly stderr: Readable;
}

/** Kills of the process groups still running, for when the bench itself exits or is interrupted. */
const live = new Set<() => void>();
let trapped = false;

function trapExits(): void {
  if (trapped) return;
  trapped = true;
  const killAll = () => {
    for (const kill of live) kill();
  };
  process.on("exit", killAll);
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.once(signal, () => {
      killAll();
      process.exit(128 + (constants.signals[signal] ?? 1));
    });
  }
}

/** Starts one process in its own process group; on timeout, or when the bench exits, the group is killed. */
export function start(label: string, command: string, args: readonly string[], opts: StartOptions): Child {
  const child = spawn(command, args, {
    cwd: ROOT,
    env: opts.env ?? process.env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  const kill = () => killGroup(child.pid, "SIGKILL");
  let out = "";
  let err = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => (out += s));
  child.stderr.setEncoding("utf8").on("data", (s: string) => (err += s));
  const exited = new Promise<string>((resolve, reject) => {
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    live.add(kill);
    trapExits();
    const done = () => {
      clearTimeout(timer);
      live.delete(kill);
    };
    child.on("error", (e) => {
      done();
      reject(new Error(`${label}: ${e.message}`));
    });
    child.on("close", (code, signal) => {
      done();
      if (timedOut) reject(new Error(`${label}: timed out after ${opts.timeoutMs} ms\n${tail(err)}`));
      else if (code !== 0) reject(new Error(`${label}: exit ${code ?? signal}\n${tail(err)}`));
      else resolve(out);
    });
  });
  // A failure is reported by whoever awaits `exited`; until then it must not count as unhandled.
  exited.catch(() => {});
  return { label, exited, kill, stderr: child.stderr };
}

/** Runs one process to its end and resolves with every stdout line that parses as a JSON object. */
export async function runJsonLines(command: string, args: readonly string[], opts: StartOptions): Promise<unknown[]> {
  const label = [command, ...args].map((a) => a.replace(ROOT, "")).join(" ");
  const out = await start(label, command, args, opts).exited;
  const values: unknown[] = [];
  for (const line of out.split("\n")) {
    if (!line.startsWith("{")) continue;
    try {
      values.push(JSON.parse(line));
    } catch {
      /* not a result line */
    }
  }
  return values;
}

/**
 * The bench side of a control channel (see programs/control.ts): a PAIR socket the measured program's rank 0
 * connects to. `command` sends one command and waits for its answer, or for the program to fail.
 */
export class Controller {
  readonly endpoint: string;
  private readonly socket: zmq.Pair;
  private child: Child | undefined;

  private constructor(socket: zmq.Pair, endpoint: string) {
    this.socket = socket;
    this.endpoint = endpoint;
  }

  static async bind(endpoint: string): Promise<Controller> {
    const socket = new zmq.Pair({ linger: 0 });
    await socket.bind(endpoint);
    return new Controller(socket, endpoint);
  }

  /** Waits for the program's first word (it has started and joined its peers). */
  async ready(child: Child): Promise<void> {
    this.child = child;
    await this.answer();
  }

  /** Sends `command` and waits for the answer; rejects if the program exits first (a PAIR send to a peer that is gone waits for ever, so the send is in the race too). */
  command(command: { op: string }): Promise<unknown> {
    return this.answer(this.socket.send(JSON.stringify(command)));
  }

  private answer(sent: Promise<void> = Promise.resolve()): Promise<unknown> {
    const child = this.child;
    if (!child) throw new Error("Controller: no program attached");
    const failed = child.exited.then(() => {
      throw new Error(`${child.label}: exited without answering`);
    });
    const answered = sent.then(() => this.socket.receive()).then(([m]) => JSON.parse(String(m)) as unknown);
    return Promise.race([answered, failed]);
  }

  close(): void {
    this.socket.close();
  }
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

function tail(text: string, lines = 15): string {
  return text.trimEnd().split("\n").slice(-lines).join("\n");
}
