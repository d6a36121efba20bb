import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { TS_LOADER } from "../launcher/loader.ts";
import { formatJobKey, type JobKey, makeJobKey } from "../lib/internal.ts";
import { type Child, Controller, fmt, formatTable, type Suite, start, WORKPOOL_BIN } from "./harness.ts";
import type { CommCommand, PingResult, StreamResult } from "./programs/comm-plan.ts";

/**
 * The comm suite: workpool's point-to-point messages between two ranks, against bare zeromq.js sockets
 * between two plain node processes, measured in the same run on the same machine. Both pairs stay up for the
 * whole run and the bench alternates them phase by phase (which one goes first alternates too), so a change
 * in machine load hits both alike. Only the ratios carry from one machine to another; the targets are ratios.
 */

// Many short rounds rather than a few long ones: with the two systems alternating, a burst of other work on
// the machine then lands on both, and the medians shrug it off.
const PING = { bytes: 8, warmup: 100, iterations: 2_000 } as const;
const BIG = { bytes: 64 * 1024, count: 1_500 } as const;
const SMALL = { bytes: 64, count: 60_000 } as const;
/** Measured rounds, after one warm-up round whose figures are dropped. */
const ROUNDS = 10;
/** For the whole suite; it is meant to finish in well under a minute. */
const TIMEOUT_MS = 120_000;

const program = (name: string) => fileURLToPath(new URL(`./programs/${name}`, import.meta.url));

export interface System {
  readonly name: string;
  readonly controller: Controller;
  readonly children: Child[];
  /** Round trip times (µs), 64 KiB throughput (MB/s) and 64 B message rate (msg/s), one entry per sample. */
  readonly rtt: number[];
  readonly big: number[];
  readonly small: number[];
  /** CPU µs of both processes per round trip, per 64 KiB message and per 64 B message, one entry per round. */
  readonly cpu: { readonly rtt: number[]; readonly big: number[]; readonly small: number[] };
}

const newSystem = (name: string, controller: Controller, children: Child[]): System => ({
  name,
  controller,
  children,
  rtt: [],
  big: [],
  small: [],
  cpu: { rtt: [], big: [], small: [] },
});

/** Two ranks of `workpool launch -n 2` (plus `launchArgs`, e.g. hosts) running comm-ranks.ts. */
export async function startWorkpool(dir: string, launchArgs: readonly string[] = []): Promise<System> {
  const controller = await Controller.bind(`ipc://${dir}/control-workpool`);
  const child = start(
    `workpool launch -n 2 ${launchArgs.join(" ")} comm-ranks.ts`,
    process.execPath,
    [WORKPOOL_BIN, "launch", "-n", "2", ...launchArgs, "--no-prefix", program("comm-ranks.ts"), controller.endpoint],
    { timeoutMs: TIMEOUT_MS },
  );
  return newSystem("workpool", controller, [child]);
}

/**
 * Two plain node processes, started like ranks (same loader) but joined only by their own sockets, bound at
 * `endpoints` (default: ipc in `dir`); `via(rank)` is a command prefix that starts rank `rank` (an agent). With
 * `key`, their sockets use CURVE with it (raw-zmq.ts), as a workpool job's do by default.
 */
export async function startRaw(
  dir: string,
  endpoints: readonly string[] = [`ipc://${dir}/raw0`, `ipc://${dir}/raw1`],
  via: (rank: number) => readonly string[] = () => [],
  key?: JobKey,
): Promise<System> {
  const env = key === undefined ? undefined : { ...process.env, RAW_ZMQ_KEY: formatJobKey(key) };
  const controller = await Controller.bind(`ipc://${dir}/control-raw`);
  const children = [0, 1].map((rank) => {
    const [command, ...prefix] = [...via(rank), process.execPath] as unknown as [string, ...string[]];
    return start(
      `raw-zmq.ts rank ${rank}`,
      command,
      [
        ...prefix,
        "--import",
        TS_LOADER,
        program("raw-zmq.ts"),
        String(rank),
        endpoints[rank] as string,
        endpoints[1 - rank] as string,
        ...(rank === 0 ? [controller.endpoint] : []),
      ],
      { timeoutMs: TIMEOUT_MS, env },
    );
  });
  return newSystem("raw zeromq", controller, children);
}

async function runPhase(s: System, command: CommCommand, record: boolean): Promise<void> {
  const result = await s.controller.command(command);
  if (!record) return;
  if (command.op === "ping") {
    const { samplesUs, cpuUs } = result as PingResult;
    s.rtt.push(...samplesUs);
    s.cpu.rtt.push(cpuUs / (command.warmup + command.iterations));
  } else if (command.op === "stream") {
    const { seconds, cpuUs } = result as StreamResult;
    if (command.bytes === BIG.bytes) {
      s.big.push((BIG.bytes * BIG.count) / seconds / 1e6);
      s.cpu.big.push(cpuUs / BIG.count);
    } else {
      s.small.push(SMALL.count / seconds);
      s.cpu.small.push(cpuUs / SMALL.count);
    }
  }
}

function quantile(values: readonly number[], q: number): number {
  const s = [...values].sort((a, b) => a - b);
  const at = (s.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return (s[lo] as number) + ((s[hi] as number) - (s[lo] as number)) * (at - lo);
}
const median = (values: readonly number[]) => quantile(values, 0.5);

interface Figure {
  readonly name: string;
  readonly workpool: number;
  readonly raw: number;
  /** Pass when workpool/raw is at most `max`, or at least `min`. */
  readonly max?: number;
  readonly min?: number;
}

/** The targets, as ratios workpool / raw: a round trip at most `rtt` times, streams at least `big`/`small` times. */
export interface CommTargets {
  readonly rtt: number;
  readonly big: number;
  readonly small: number;
}

/** The comm suite's own targets (ipc, one host). */
const IPC_TARGETS: CommTargets = { rtt: 1.2, big: 0.8, small: 3 };

function report(wp: System, raw: System, targets: CommTargets): { rows: string[][]; misses: number } {
  const figures: Figure[] = [
    { name: `round trip ${PING.bytes} B, median µs`, workpool: median(wp.rtt), raw: median(raw.rtt), max: targets.rtt },
    {
      name: `stream ${BIG.bytes / 1024} KiB msgs, MB/s`,
      workpool: median(wp.big),
      raw: median(raw.big),
      min: targets.big,
    },
    {
      name: `stream ${SMALL.bytes} B msgs, msg/s`,
      workpool: median(wp.small),
      raw: median(raw.small),
      min: targets.small,
    },
  ];
  const rows: string[][] = [["figure", "workpool", "raw zeromq", "ratio", "target", "result"]];
  let misses = 0;
  for (const f of figures) {
    const ratio = f.workpool / f.raw;
    const pass = f.max !== undefined ? ratio <= f.max : ratio >= (f.min ?? 0);
    if (!pass) misses++;
    rows.push([
      f.name,
      fmt(f.workpool),
      fmt(f.raw),
      `${ratio.toFixed(2)}x`,
      f.max !== undefined ? `<= ${f.max}x` : `>= ${f.min}x`,
      pass ? "pass" : "MISS",
    ]);
  }
  return { rows, misses };
}

const range = (values: readonly number[]) => `${fmt(Math.min(...values))}..${fmt(Math.max(...values))}`;

export const suite: Suite = {
  name: "comm",
  description: "point-to-point messages between 2 ranks: workpool against bare zeromq.js",
  async run() {
    process.stdout.write(
      "# 2 processes, ipc transport. Every figure is also measured on bare zeromq.js (2 plain node processes,\n" +
        "# PUSH/PULL, one frame per message, each send awaited, CURVE with one key as a workpool job's sockets\n" +
        "# by default) in this same run, phases alternating, and the targets are ratios against that baseline.\n" +
        `# ${ROUNDS} rounds after a warm-up round; each round: ${PING.iterations} timed round trips, ` +
        `${BIG.count} x ${BIG.bytes / 1024} KiB, ${SMALL.count} x ${SMALL.bytes} B;\n` +
        "# streams are timed from the first send to the receiver's ack, and reported as medians over rounds.\n",
    );
    const dir = mkdtempSync(join(tmpdir(), "wp-bench-"));
    try {
      // Encrypted on both sides: the raw pair without CURVE streamed 64 KiB messages at 2.8 times workpool's
      // rate, and that was CURVE's cost, not the framework's.
      const key = makeJobKey();
      return await measure(
        () => startRaw(dir, undefined, undefined, key),
        () => startWorkpool(dir),
        IPC_TARGETS,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

/**
 * Starts both systems (the raw pair, then workpool's), runs ROUNDS rounds of every phase on them alternately,
 * stops them, and prints the figures against `targets` and the CPU table.
 */
export async function measure(
  startRawPair: () => Promise<System>,
  startWorkpoolPair: () => Promise<System>,
  targets: CommTargets,
): Promise<{ targets: number; misses: number }> {
  const systems: System[] = [];
  try {
    systems.push(await startRawPair(), await startWorkpoolPair());
    await Promise.all(systems.map((s) => s.controller.ready(s.children[0] as Child)));
    const phases: CommCommand[] = [
      { op: "ping", ...PING },
      { op: "stream", ...BIG },
      { op: "stream", ...SMALL },
    ];
    for (let round = 0; round <= ROUNDS; round++) {
      const order = round % 2 === 0 ? systems : [...systems].reverse();
      for (const phase of phases) for (const s of order) await runPhase(s, phase, round > 0);
    }
    for (const s of systems) await s.controller.command({ op: "quit" });
    await Promise.all(systems.flatMap((s) => s.children.map((c) => c.exited)));
  } finally {
    for (const s of systems) {
      s.controller.close();
      for (const c of s.children) c.kill();
    }
  }
  const [raw, wp] = systems as [System, System];
  const { rows, misses } = report(wp, raw, targets);
  process.stdout.write(`${formatTable(rows)}\n`);
  process.stdout.write(
    `# round trip p99 µs: workpool ${fmt(quantile(wp.rtt, 0.99))}, raw ${fmt(quantile(raw.rtt, 0.99))}; ` +
      `spread over rounds: 64 KiB MB/s workpool ${range(wp.big)}, raw ${range(raw.big)}; ` +
      `64 B msg/s workpool ${range(wp.small)}, raw ${range(raw.small)}\n`,
  );
  const cpuRows = [
    ["CPU time of both processes, µs", "workpool", "raw zeromq", "ratio"],
    ...(
      [
        ["per round trip", median(wp.cpu.rtt), median(raw.cpu.rtt)],
        [`per ${BIG.bytes / 1024} KiB message`, median(wp.cpu.big), median(raw.cpu.big)],
        [`per ${SMALL.bytes} B message`, median(wp.cpu.small), median(raw.cpu.small)],
      ] as const
    ).map(([name, w, r]) => [name, fmt(w), fmt(r), `${(w / r).toFixed(2)}x`]),
  ];
  process.stdout.write(`\n${formatTable(cpuRows)}\n`);
  return { targets: rows.length - 1, misses };
}
