// A flood of idle connections from another user: what a stranger without the job's secrets can do to a listening
// socket of a job (issue 27: 22,000 idle connections once exhausted the launcher's descriptors). The flood runs as
// its own process, under uid 65534 when the test runs as root, optionally inside a test host's namespace.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { createInterface } from "node:readline";

/** The uid and gid the flood runs as when the test runs as root (nobody). */
export const NOBODY = 65534;

/**
 * The flood, as plain JavaScript for `node -e`: argv[1] is a JSON list of `{to, count}`, `to` a target (`{path}` or
 * `{host, port}`), `count` how many connections to open to it (keep it under the listener's backlog, 100 for ZeroMQ: past a full
 * accept queue the kernel leaves connections half made, which the listener never sees). It opens them (a few hundred at a time), says nothing on any,
 * and prints one JSON line when every attempt has settled, `{"opened","failed","codes"}`, then `{"closed"}` each
 * time the number of connections the other end closed reaches a new hundred and when it reaches `opened`. It
 * ends when its standard input ends, closing what is left.
 */
const FLOOD = `
const net = require("node:net");
const targets = JSON.parse(process.argv[1]);
const sockets = [];
let opened = 0, failed = 0, settled = 0, closed = 0;
const codes = {};
const total = targets.reduce((n, t) => n + t.count, 0);
const say = (o) => process.stdout.write(JSON.stringify(o) + "\\n");
function one(target) {
  const s = net.connect(target);
  let up = false;
  s.on("connect", () => { up = true; opened++; settle(); });
  s.on("error", (e) => { if (!up) { failed++; codes[e.code] = (codes[e.code] || 0) + 1; settle(); } });
  s.on("close", () => {
    if (!up) return;
    closed++;
    if (closed % 100 === 0 || (settled === total && closed === opened)) say({ closed });
  });
  s.on("data", () => {});
  sockets.push(s);
}
function settle() {
  if (++settled === total) say({ opened, failed, codes });
}
let next = 0;
const list = targets.flatMap((t) => Array.from({ length: t.count }, () => t.to));
function batch() {
  for (let i = 0; i < 200 && next < list.length; i++) one(list[next++]);
  if (next < list.length) setImmediate(batch);
}
batch();
process.stdin.on("end", () => { for (const s of sockets) s.destroy(); process.exit(0); }).resume();
`;

export type FloodTarget = { readonly path: string } | { readonly host: string; readonly port: number };

export interface FloodReport {
  readonly opened: number;
  readonly failed: number;
  readonly codes: Record<string, number>;
}

/** A running flood: its first report, and a wait for the other end to have closed every connection it opened. */
export interface Flood {
  readonly child: ChildProcess;
  /** Resolves with the count once every connection attempt has settled (the idle connections are then held). */
  readonly settled: Promise<FloodReport>;
  /** Resolves once the other end has closed at least `n` of the opened connections. */
  closedAtLeast(n: number): Promise<void>;
  /** Ends the flood (closes what is left) and waits for its process to exit. */
  stop(): Promise<void>;
}

/**
 * Starts a flood of `count` idle connections to each target, as another user (uid 65534) when this process
 * is root, inside namespace `ns` when given (`ip netns exec`).
 */
export function flood(targets: readonly { to: FloodTarget; count: number }[], ns?: string): Flood {
  const args = ["-e", FLOOD, JSON.stringify(targets)];
  const asOther = process.getuid?.() === 0;
  const child =
    ns === undefined
      ? spawn(process.execPath, args, {
          stdio: ["pipe", "pipe", "inherit"],
          ...(asOther ? { uid: NOBODY, gid: NOBODY } : {}),
        })
      : spawn(
          "ip",
          [
            "netns",
            "exec",
            ns,
            ...(asOther ? ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups"] : []),
            process.execPath,
            ...args,
          ],
          { stdio: ["pipe", "pipe", "inherit"] },
        );
  const lines = createInterface({ input: child.stdout! });
  let closed = 0;
  const waiters: { n: number; resolve: () => void }[] = [];
  let report!: (r: FloodReport) => void;
  const settled = new Promise<FloodReport>((resolve) => (report = resolve));
  lines.on("line", (line) => {
    const msg = JSON.parse(line) as Partial<FloodReport> & { closed?: number };
    if (msg.closed !== undefined) {
      closed = msg.closed;
      for (const w of waiters.filter((w) => closed >= w.n)) w.resolve();
    } else report(msg as FloodReport);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  return {
    child,
    settled,
    closedAtLeast: (n) =>
      closed >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
    async stop() {
      child.stdin!.end();
      await exited;
    },
  };
}

/** How many descriptors process `pid` has open. */
export function openDescriptors(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}
