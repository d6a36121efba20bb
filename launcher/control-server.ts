import { timingSafeEqual } from "node:crypto";
import { writeSync } from "node:fs";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { type LauncherRecord, parseControlAddress, tcpEndpoint, type UncheckedRecord } from "../lib/internal-start.ts";

export interface ControlServerOptions {
  /** `ipc://PATH` or `tcp://HOST:PORT` (port 0: any free port). */
  readonly address: string;
  /** The number of ranks: a hello must name one of 0..size-1. */
  readonly size: number;
  /** The job's secret; a connection whose hello does not carry it is refused. */
  readonly token: string;
  /**
   * Called for every report, in the order each rank sent them: a JSON object, not checked yet (the records are
   * lib/control/records.ts's; record-dispatch.ts reads them).
   */
  readonly onRecord: (rank: number, record: UncheckedRecord) => void;
  /**
   * How long a connection may stay without saying hello before it is dropped, in ms.
   * @default DEFAULT_HELLO_DEADLINE_MS
   */
  readonly helloDeadlineMs?: number;
  /**
   * How many connections that have not said hello are held at once; past that, the oldest is dropped.
   * @default DEFAULT_MAX_STRANGERS
   */
  readonly maxStrangers?: number;
  /**
   * Called when a watcher (`{"t":"watch","token"}`: `workpool top`) is accepted; without it, watchers are
   * refused. Watchers get only what `toWatchers` writes.
   */
  readonly onWatch?: () => void;
}

/** Watchers held at once; past that, a new one is refused. */
export const MAX_WATCHERS = 8;
/** A watcher that has this many bytes not yet read gets no more updates until it has read them. */
const WATCHER_BACKLOG = 1 << 20;

/**
 * How long a connection may stay without saying hello. A rank writes its hello as soon as it is connected, so
 * this only has to cover the launcher's own event loop being busy (the deadline is checked once what was
 * already received has been read, see `accept`).
 */
export const DEFAULT_HELLO_DEADLINE_MS = 5000;
/**
 * How many connections without a hello are held at once. A rank's hello follows its connection at once, so the
 * newest stranger is the one most likely to be a rank: the oldest is dropped to make room, as OpenSSH drops
 * unauthenticated connections past MaxStartups. This bounds what peers without the token can make the launcher
 * hold: at most this many descriptors, each with at most MAX_HELLO bytes of input, for at most the deadline.
 */
export const DEFAULT_MAX_STRANGERS = 64;

/** How long `close` reads connections of ranks whose processes (or agents) have exited, at most. */
const CLOSE_GRACE_MS = 5000;

/** How often a connection whose socket was full is tried again (see `ControlServer#send`). */
const BACKLOG_RETRY_MS = 20;

/** The longest first line taken from a connection that has not said hello. */
const MAX_HELLO = 4096;

/**
 * The launcher's end of the ranks' control channels: it listens, takes each connection's first line as a hello
 * (`{"t":"hello","rank","token"}`), refuses a connection with a wrong token or rank, and passes every later
 * line of an accepted one to `onRecord` as that rank's report. It writes to accepted connections only what
 * `broadcast` is given.
 */
export class ControlServer {
  /** Connections whose hello was accepted. */
  private readonly ranks = new Map<Socket, number>();
  /** Connections that have not said hello (or were refused and have not closed yet), oldest first. */
  private readonly strangers = new Set<Socket>();
  /** Connections dropped because they did not say hello in time, or to make room for newer ones. */
  private droppedStrangers = 0;
  /** What a connection is still to be sent, when its socket could not take it all at once (see `send`). */
  private readonly backlog = new Map<Socket, Buffer>();
  /** The records broadcast to each rank so far (a rank in `skip` is not counted): see `toldTo`. */
  private readonly told: number[];
  /** Every line broadcast so far, in order: a connection accepted later is sent them all first. */
  private readonly broadcasts: string[] = [];
  private readonly token: Buffer;
  /** Connections of watchers (`workpool top`), which are sent the job's live state. */
  private readonly watchers = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** The address ranks connect to (a TCP port 0 replaced by the one chosen). */
    readonly address: string,
    private readonly opts: ControlServerOptions,
  ) {
    this.token = Buffer.from(opts.token);
    this.told = new Array<number>(opts.size).fill(0);
    server.on("connection", (socket) => this.accept(socket));
    // A failed accept (out of descriptors) loses that rank's reports, not the job.
    server.on("error", (e) => process.emitWarning(`workpool: control server at ${address}: ${e.message}`));
  }

  static async listen(opts: ControlServerOptions): Promise<ControlServer> {
    const target = parseControlAddress(opts.address);
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      if ("path" in target) server.listen(target.path, resolve);
      else server.listen(target.port, target.host, resolve);
    });
    const address = "path" in target ? opts.address : tcpEndpoint(target.host, (server.address() as AddressInfo).port);
    return new ControlServer(server, address, opts);
  }

  /**
   * Writes `record` to every rank whose hello has been accepted, and to every rank accepted later, right after
   * its hello, behind the records broadcast before it: every rank gets the same records in the same order, none
   * missed by starting late. A connection that has closed (its rank is gone) is skipped, and so is one of a
   * rank in `skip`: a rank about to exit may not read what is written to it, and a socket closed with unread
   * data resets the connection, which throws away what that rank wrote last and was not read here yet.
   */
  broadcast(record: LauncherRecord, skip?: ReadonlySet<number>): void {
    const text = `${JSON.stringify(record)}\n`;
    this.broadcasts.push(text);
    for (let r = 0; r < this.opts.size; r++) if (!skip?.has(r)) this.told[r]!++;
    for (const [socket, rank] of this.ranks) if (!skip?.has(rank)) this.send(socket, Buffer.from(text));
  }

  /** How many records `broadcast` addressed to `rank` so far: a rank that read fewer has more to read. */
  toldTo(rank: number): number {
    return this.told[rank] ?? 0;
  }

  /**
   * Writes `data` to a rank's connection without ever ending it. A rank may exit at any moment, its last
   * records still unread here: Node destroys a socket whose write fails (EPIPE once the rank has exited), and
   * with it whatever the kernel still held for us to read (a rank's stats and trace lost under load, a wrong
   * `tasks` count in compare). So the write goes straight to the descriptor: a rank gone only fails that write,
   * and its connection is read to its end as any other. What the socket cannot take yet (a rank that reads
   * nothing for a while) waits in `backlog` and is tried again every BACKLOG_RETRY_MS.
   */
  private send(socket: Socket, data: Buffer): void {
    if (socket.closed) return;
    const waiting = this.backlog.get(socket);
    if (waiting) {
      this.backlog.set(socket, Buffer.concat([waiting, data]));
      return;
    }
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    let off = 0;
    try {
      if (fd === undefined || fd < 0) throw Object.assign(new Error("no descriptor yet"), { code: "EAGAIN" });
      while (off < data.length) off += writeSync(fd, data, off);
      return;
    } catch (e) {
      // EPIPE, ECONNRESET: the rank is gone, and needs nothing more.
      if ((e as NodeJS.ErrnoException).code !== "EAGAIN") return;
    }
    this.backlog.set(socket, data.subarray(off));
    const retry = setTimeout(() => {
      const rest = this.backlog.get(socket);
      this.backlog.delete(socket);
      if (rest) this.send(socket, rest);
    }, BACKLOG_RETRY_MS);
    retry.unref();
  }

  /**
   * Resolves once what ranks had written when it was called has been read and passed to `onRecord`: it is in
   * the kernel, so three turns of the event loop (each lets the loop poll for I/O at least once after the one
   * before) accept a connection not yet accepted, read its hello, and read what follows.
   */
  async caughtUp(): Promise<void> {
    for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
  }

  /**
   * Call once every rank has exited: reads what they wrote (a rank that died at once may have connected before
   * the launcher got to accept it), then stops listening. Connections that still have not said hello are
   * dropped. The connections of `gone` ranks are dropped too: declared dead, they may be cut off rather than
   * ended (a host that lost its network sends no FIN, and TCP would retry for 15 minutes). The others end on
   * their own (their processes are gone) and are read to the end, for at most CLOSE_GRACE_MS: an agent that
   * exited does not prove its rank did, when its host went away.
   */
  async close(gone: ReadonlySet<number> = new Set()): Promise<void> {
    await this.caughtUp();
    this.server.close();
    for (const socket of this.strangers) socket.destroy();
    const open = [...this.ranks].filter(([socket, rank]) => {
      if (gone.has(rank)) socket.destroy();
      return !socket.closed && !gone.has(rank);
    });
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, CLOSE_GRACE_MS);
    });
    await Promise.race([
      Promise.all(open.map(([socket]) => new Promise((resolve) => socket.once("close", resolve)))),
      grace,
    ]);
    clearTimeout(timer);
    for (const [socket] of open) socket.destroy();
  }

  /**
   * Writes `line` to every watcher that has read what it was sent before; a watcher that reads slowly misses
   * updates instead of making the launcher queue them.
   */
  toWatchers(line: string): void {
    for (const socket of this.watchers) {
      if (!socket.closed && socket.writableLength < WATCHER_BACKLOG) socket.write(line);
    }
  }

  /**
   * Ends the watchers' connections, after what was written to them (`close` leaves them open, so that they can
   * be sent the job's final state once its status is known).
   */
  endWatchers(): void {
    for (const socket of this.watchers) socket.end();
  }

  /** How many watchers are attached. */
  get watching(): number {
    return this.watchers.size;
  }

  /** How many connections were dropped without a hello (too slow to say it, or too many at once). */
  get dropped(): number {
    return this.droppedStrangers;
  }

  /** How many connections are held that have not said hello. */
  get waiting(): number {
    return this.strangers.size;
  }

  private accept(socket: Socket): void {
    const max = this.opts.maxStrangers ?? DEFAULT_MAX_STRANGERS;
    for (const oldest of this.strangers) {
      if (this.strangers.size < max) break;
      this.drop(oldest);
    }
    this.strangers.add(socket);
    let rank: number | undefined;
    // At the deadline, first let the event loop read what has arrived (a busy launcher may reach the timer before
    // the hello that came in time): the check runs after the next poll for I/O.
    const deadline = setTimeout(
      () => setImmediate(() => rank === undefined && this.drop(socket)),
      this.opts.helloDeadlineMs ?? DEFAULT_HELLO_DEADLINE_MS,
    );
    deadline.unref();
    let refused = false;
    /** The start of a line not ended yet, in pieces: a megabyte trace line is joined once, not per chunk. */
    let rest: string[] = [];
    let restLength = 0;
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      if (refused) return;
      if (!chunk.includes("\n")) {
        rest.push(chunk);
        restLength += chunk.length;
        if (rank === undefined && restLength > MAX_HELLO) {
          refused = true;
          socket.destroy();
        }
        return;
      }
      const lines = (rest.join("") + chunk).split("\n");
      const last = lines.pop() ?? "";
      rest = last === "" ? [] : [last];
      restLength = last.length;
      for (const line of lines) {
        if (rank !== undefined) {
          this.record(rank, line);
          continue;
        }
        const watch = this.opts.onWatch ? this.watchHello(line) : undefined;
        if (watch !== undefined) {
          clearTimeout(deadline);
          this.strangers.delete(socket);
          const no =
            watch !== true ? watch : this.watchers.size >= MAX_WATCHERS ? `${MAX_WATCHERS} watchers already` : "";
          if (no !== "") {
            refused = true;
            socket.end(refusal(no));
            return;
          }
          this.watchers.add(socket);
          // A watcher only reads: what it writes from now on is ignored.
          refused = true;
          this.opts.onWatch?.();
          return;
        }
        const why = this.hello(line);
        if (typeof why === "string") {
          refused = true;
          socket.end(refusal(why));
          return;
        }
        rank = why;
        clearTimeout(deadline);
        this.strangers.delete(socket);
        this.ranks.set(socket, rank);
        if (this.broadcasts.length > 0) this.send(socket, Buffer.from(this.broadcasts.join("")));
      }
      if (rank === undefined && restLength > MAX_HELLO) {
        refused = true;
        socket.destroy();
      }
    });
    // A rank killed while writing resets its connection: nothing more to read.
    socket.on("error", () => {});
    socket.on("close", () => {
      clearTimeout(deadline);
      this.strangers.delete(socket);
      this.ranks.delete(socket);
      this.backlog.delete(socket);
      this.watchers.delete(socket);
    });
  }

  /** Drops a connection that has not said hello. */
  private drop(socket: Socket): void {
    if (!this.strangers.delete(socket)) return;
    this.droppedStrangers++;
    socket.destroy();
  }

  /** For a watcher's hello: true if it carries the job's token, else why it is refused; undefined for any other line. */
  private watchHello(line: string): true | string | undefined {
    let hello: { t?: unknown; token?: unknown } | null;
    try {
      hello = JSON.parse(line);
    } catch {
      return undefined;
    }
    if (hello?.t !== "watch") return undefined;
    const token = Buffer.from(typeof hello.token === "string" ? hello.token : "");
    return token.length === this.token.length && timingSafeEqual(token, this.token) ? true : "wrong secret";
  }

  /** The rank a hello line names, or why it is refused. */
  private hello(line: string): number | string {
    let hello: { t?: unknown; rank?: unknown; token?: unknown } | null;
    try {
      hello = JSON.parse(line);
    } catch {
      hello = null;
    }
    if (hello?.t !== "hello") return "the first line must be a hello";
    const token = Buffer.from(typeof hello.token === "string" ? hello.token : "");
    if (token.length !== this.token.length || !timingSafeEqual(token, this.token)) return "wrong token";
    const { rank } = hello;
    if (typeof rank !== "number" || !Number.isInteger(rank) || rank < 0 || rank >= this.opts.size) {
      return `rank ${JSON.stringify(rank)} is not in 0..${this.opts.size - 1}`;
    }
    return rank;
  }

  private record(rank: number, line: string): void {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      return;
    }
    if (record === null || typeof record !== "object") return;
    // A report that cannot be handled (its file cannot be written) is lost, never the job or the connection.
    try {
      this.opts.onRecord(rank, record as UncheckedRecord);
    } catch (e) {
      const kind = JSON.stringify((record as UncheckedRecord).t);
      process.stderr.write(`workpool: warning: rank ${rank}'s ${kind} report was lost: ${(e as Error).message}\n`);
    }
  }
}

/** The line that tells a connection why it is not accepted, before it is closed. */
function refusal(reason: string): string {
  const record: LauncherRecord = { t: "refused", reason };
  return `${JSON.stringify(record)}\n`;
}
