/**
 * The control channel between a rank and its launcher: one stream connection that the rank opens to the
 * address in WORKPOOL_CONTROL, carrying one JSON object a line. A local rank reaches a Unix socket in the job
 * folder (`ipc://PATH`); a rank on another host reaches TCP (`tcp://HOST:PORT`), so no inherited descriptor is
 * needed.
 *
 * Rank to launcher: first a hello, `{"t":"hello","rank":R,"token":T}` with T from WORKPOOL_TOKEN (the launcher
 * drops a connection whose token is not the job's, so another process cannot speak for a rank), then reports:
 * an uncaught error (the rank's last words), statistics, progress, trace events, live samples, what a pool
 * that survives its workers' deaths asks and re-deals, a rank's leaving and shrinking; and `{"t":"beat"}` right
 * after the hello (before the app is evaluated: sent from the preload) and then every WORKPOOL_HEARTBEAT_MS ms
 * (from an unref'd timer on the rank's main thread: a rank that is stopped, or blocked in one synchronous
 * stretch, misses its beats, and the launcher names it).
 * Launcher to rank: `{"t":"refused","reason"}` before it closes a connection it does not accept, and on an
 * accepted one the notices of deaths the job survives, of leavers and of shrinks, all of them in the same
 * order on every rank, those from before the rank connected first (handed to deaths.ts), and `{"t":"live"}`
 * once someone watches the job (`workpool top`): from then on the rank sends live samples (live.ts).
 * records.ts has every record, and the checks a reader makes.
 *
 * The connection is also the rank's lifeline: once it is up, its end means the launcher is gone (it exited or
 * was killed, even by SIGKILL) and the rank exits at once, with status 129.
 */
import { writeSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { BootstrapError } from "../errors.ts";
import { ENV, envMs } from "../comm/env.ts";
import { deliverRankDeath, deliverRankLeft, deliverShrunk } from "./deaths.ts";
import { startLive } from "./live.ts";
import { type HelloRecord, type LauncherRecord, type RankRecord, readLauncherRecord } from "./records.ts";

/** How long a rank may take to connect to the launcher before it gives up with a message naming the address. */
export const CONTROL_CONNECT_TIMEOUT_MS = 5000;

/**
 * How long a dying rank keeps retrying a synchronous write the socket takes nothing of (a full buffer that the
 * launcher does not read); each write that gets through starts it again.
 */
const SYNC_WRITE_MS = 5000;

/** How often a report the socket could not take yet is tried again. */
const BACKLOG_RETRY_MS = 5;

/** Status of a rank whose launcher is gone. */
const LAUNCHER_GONE = 129;

export type ControlAddress = { readonly path: string } | { readonly host: string; readonly port: number };

/** `ipc://PATH` or `tcp://HOST:PORT` (an IPv6 host in brackets); port 0 only to listen (any free port). */
export function parseControlAddress(address: string): ControlAddress {
  if (address.startsWith("ipc://") && address.length > "ipc://".length) return { path: address.slice(6) };
  const m = /^tcp:\/\/(\[[0-9a-fA-F:.]+\]|[^\s:/[\]]+):(\d{1,5})$/.exec(address);
  const port = Number(m?.[2]);
  if (m && port <= 65535) return { host: (m[1] as string).replace(/^\[(.*)\]$/, "$1"), port };
  throw new BootstrapError(
    `environment variable ${ENV.control} must be ipc://PATH or tcp://HOST:PORT; got ${JSON.stringify(address)}`,
  );
}

function line(record: HelloRecord | RankRecord): string {
  return `${JSON.stringify(record)}\n`;
}

/**
 * The rank's end of the control channel. It connects in the background, so the rank never waits for it: what
 * is sent before the connection is up waits in order behind the hello. The socket keeps the process alive only
 * while connecting or while a report is still on its way, never otherwise.
 */
export class ControlChannel {
  /**
   * Resolves once a synchronous write (`sendSync`) can reach the launcher: at once for a Unix socket, which is
   * connected in the kernel by the time the constructor returns, and once connected for TCP (Node makes the TCP
   * socket a tick later, and connects it a round trip after). Never rejects: a rank that cannot connect exits.
   */
  readonly ready: Promise<void>;
  private readonly socket: Socket;
  /** Lines waiting for the connection, the hello first; undefined once handed on. */
  private pending: string[] | undefined;
  private connected = false;
  /** Bytes the connected socket could not take yet, in order (see `write`). */
  private backlog: Buffer[] = [];
  /** The timer that tries `backlog` again; it keeps the process alive while set. */
  private retry: NodeJS.Timeout | undefined;
  /** Lines read from the launcher (each a record), for the deadlock check (lib/comm/stall.ts). */
  heard = 0;
  private readonly flushed = () => {
    if (this.connected && this.socket.writableLength === 0) this.socket.unref();
  };

  constructor(
    private readonly address: string,
    private readonly rank: number,
    token: string,
    heartbeatMs = 0,
  ) {
    const target = parseControlAddress(address);
    // The first beat goes with the hello: the launcher's clock for this rank's heartbeats starts before the app
    // is evaluated, so an app that blocks at once (a busy loop right after connect()) is found silent and named.
    this.pending = [line({ t: "hello", rank, token }), ...(heartbeatMs > 0 ? [line({ t: "beat" })] : [])];
    this.socket = "path" in target ? connect(target.path) : connect(target.port, target.host);
    // A Unix socket is connected in the kernel once connect() returns: the hello (and first beat) are written
    // now, synchronously, not on the connect event, which an app that blocks before its first await never lets
    // fire. Over TCP they go once connected (the preload waits for that before the app starts).
    if ("path" in target) this.flushSync();
    this.ready = "path" in target ? Promise.resolve() : new Promise((resolve) => this.socket.once("connect", resolve));
    const timer = setTimeout(
      () => this.fail(`no connection within ${CONTROL_CONNECT_TIMEOUT_MS / 1000} s`),
      CONTROL_CONNECT_TIMEOUT_MS,
    );
    timer.unref();
    this.socket.once("connect", () => {
      clearTimeout(timer);
      this.connected = true;
      if (this.pending) this.write(this.pending.join(""));
      this.pending = undefined;
      this.flushed();
    });
    let rest = "";
    this.socket.setEncoding("utf8");
    this.socket.on("data", (chunk: string) => {
      const lines = (rest + chunk).split("\n");
      rest = lines.pop() ?? "";
      for (const l of lines) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(l);
        } catch {
          continue;
        }
        this.heard++;
        const record = readLauncherRecord(parsed);
        if (record) this.take(record);
      }
    });
    const gone = () => {
      process.exit(LAUNCHER_GONE);
    };
    this.socket.on("end", gone);
    this.socket.on("close", gone);
    this.socket.on("error", (e) => (this.connected ? gone() : this.fail(e.message)));
    if (heartbeatMs > 0) {
      const beat = setInterval(() => this.send({ t: "beat" }), heartbeatMs);
      beat.unref();
    }
    // Lines not yet handed to the socket go out before the process ends (it may end before connecting).
    process.on("exit", () => this.flushSync());
    // A Unix socket is connected in the kernel already: the hello goes out now, before the app's code can keep
    // the event loop from turning (the launcher drops a connection that says no hello within a few seconds).
    if ("path" in target) this.flushSync();
  }

  /** Acts on a record from the launcher. */
  private take(record: LauncherRecord): void {
    switch (record.t) {
      case "refused":
        return this.fail(`it refused this rank: ${record.reason}`);
      case "dead":
        return deliverRankDeath(record.rank, record.why);
      case "live":
        return startLive((sample) => this.send(sample));
      case "left":
        return deliverRankLeft(record.rank, record.p);
      case "shrunk":
        return deliverShrunk(record.n, record.dead, record.b);
      default: {
        // Every kind has its case: one added to LauncherRecord and not here fails to compile.
        const unhandled: never = record;
        return unhandled;
      }
    }
  }

  /** Sends one record; it waits in order while the connection is not up yet. */
  send(record: RankRecord): void {
    if (this.pending) this.pending.push(line(record));
    else if (!this.socket.destroyed) this.write(line(record));
  }

  /**
   * Writes one record at once, synchronously, after everything sent before: for the last words of a process
   * that is about to die. Reaches the launcher once `ready` has resolved; before that (a TCP connection not
   * yet made) the record goes the asynchronous way and may be lost with the process.
   */
  sendSync(record: RankRecord): boolean {
    // Part of a line may already be out when the socket still holds data: end it (the launcher skips it).
    return this.flushSync(line(record), this.socket.writableLength > 0 ? "\n" : "");
  }

  /**
   * Writes what is pending (or waiting in `backlog`), then `text`; true if it all reached the socket
   * synchronously. It keeps trying while the socket takes some of it at least every SYNC_WRITE_MS.
   */
  private flushSync(text = "", separator = ""): boolean {
    let data = separator + text;
    if (this.pending) data = this.pending.join("") + text;
    const waiting = this.backlog;
    this.backlog = [];
    if (data === "" && waiting.length === 0) return true;
    this.pending = undefined;
    const fd = this.fd();
    if (fd === undefined) {
      if (!this.socket.destroyed) this.socket.write(Buffer.concat([...waiting, Buffer.from(data)]));
      return false;
    }
    // What waits is the rest of lines already begun: it goes first, and no separator is needed.
    const bytes = Buffer.concat([...waiting, Buffer.from(waiting.length > 0 ? text : data)]);
    let deadline = Date.now() + SYNC_WRITE_MS;
    for (let off = 0; off < bytes.length;) {
      try {
        off += writeSync(fd, bytes, off);
        deadline = Date.now() + SYNC_WRITE_MS;
      } catch (e) {
        // EAGAIN: the socket buffer is full, or a TCP connection is still being made; anything else: gone.
        if ((e as NodeJS.ErrnoException).code !== "EAGAIN" || Date.now() > deadline) return false;
      }
    }
    return true;
  }

  /** The socket's descriptor, once it has one. */
  private fd(): number | undefined {
    const fd = (this.socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    return fd === undefined || fd < 0 ? undefined : fd;
  }

  /**
   * Writes to the connected socket's descriptor at once, not through Node's write queue: a process that ends
   * with `process.exit()` right after a large report (a run's trace) would lose what that queue still held, and
   * every record behind it, its statistics too; what waits in `backlog` instead is written at exit
   * (`flushSync`). What the socket cannot take yet waits in `backlog`, tried again every BACKLOG_RETRY_MS on a
   * timer that keeps the process alive meanwhile, as a report on its way should.
   */
  private write(data: string): void {
    if (this.fd() === undefined) {
      this.socket.write(data, this.flushed);
      if (this.socket.writableLength > 0) this.socket.ref();
    } else this.writeBytes(Buffer.from(data));
  }

  private writeBytes(bytes: Buffer): void {
    const fd = this.fd();
    if (fd === undefined || this.socket.destroyed) return;
    if (this.backlog.length > 0) {
      this.backlog.push(bytes);
      return;
    }
    let off = 0;
    try {
      while (off < bytes.length) off += writeSync(fd, bytes, off);
      return;
    } catch (e) {
      // Anything but a full socket: the launcher is gone, and the lifeline ends this process.
      if ((e as NodeJS.ErrnoException).code !== "EAGAIN") return;
    }
    this.backlog.push(bytes.subarray(off));
    this.retry ??= setTimeout(() => {
      this.retry = undefined;
      const waiting = Buffer.concat(this.backlog);
      this.backlog = [];
      this.writeBytes(waiting);
    }, BACKLOG_RETRY_MS);
  }

  private fail(why: string): never {
    process.stderr.write(`workpool: rank ${this.rank} cannot reach the launcher at ${this.address}: ${why}\n`);
    process.exit(1);
  }
}

/**
 * Opens the control channel the launcher asked for in `env` (WORKPOOL_CONTROL, WORKPOOL_TOKEN, WORKPOOL_RANK), or
 * returns undefined without a launcher. Removes the address and token from `env`, so that processes the app
 * starts do not connect as this rank.
 */
export function openControlChannel(env: NodeJS.ProcessEnv = process.env): ControlChannel | undefined {
  const address = env[ENV.control];
  if (!address) return undefined;
  const token = env[ENV.token] ?? "";
  const rank = Number(env[ENV.rank]);
  if (!Number.isInteger(rank) || rank < 0) {
    throw new BootstrapError(
      `environment variable ${ENV.rank} must be a rank number when ${ENV.control} is set; got ${JSON.stringify(env[ENV.rank])}`,
    );
  }
  const heartbeatMs = envMs(ENV.heartbeatMs, 0, true, env);
  delete env[ENV.control];
  delete env[ENV.token];
  return new ControlChannel(address, rank, token, heartbeatMs);
}
