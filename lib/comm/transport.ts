import type * as Zmq from "zeromq";
import { loadZmq, uninterrupted, uninterruptedAsync } from "./zmq.ts";
import { HEADER_BYTES } from "./codec.ts";
import { clientOptions, type JobKey, serverOptions } from "./job-key.ts";
import { ownSocket } from "./zmq-activity.ts";

/**
 * The wire: one PULL inbox per rank, and one PUSH socket per peer this rank sends to (connected lazily,
 * so a 1024-rank job opens only the connections it uses, but for the few that nearly every job uses, which
 * `connectAhead` opens as the job starts). One PUSH to one PULL is one ordered stream, which gives MPI's
 * non-overtaking rule between each pair of ranks.
 *
 * Small messages bound for the same rank are coalesced: a message goes out at once when nothing is in flight
 * to that rank; messages that arrive while a frame is in flight are copied into the next frame, which leaves
 * as soon as the one in flight is handed over. A lone message is never delayed, and a stream of small ones
 * costs one ZeroMQ send per batch. Frames are cut from slabs of SLAB_BYTES, so coalescing allocates one
 * buffer per slab, not one per message, and a backlog is a few large buffers rather than many small ones.
 *
 * A ZeroMQ message of one part is a frame (codec.ts `decodeFrame`). A message of SOLO_BYTES or more goes as two
 * parts, its header and its body (codec.ts `decodeSplit`): the receiver then gets the body as a buffer of its
 * own from ZeroMQ and can hand it to the app without copying it.
 *
 * Under CURVE a body larger than PIECE_BYTES travels in pieces of that size (the last up to TAIL_BYTES longer),
 * views of the encoded message (no copy here): the first ZeroMQ message is the header and the first piece, each
 * next one the sender's rank (4 bytes, u32 LE) and the next piece. CURVE encrypts each ZeroMQ message on its
 * own, with copies of it, so the sender's memory grows by a piece's copies, not by the whole message's (a 1 GiB
 * send peaked at 4 GiB: the data, its encoded copy, and CURVE's plaintext and ciphertext of the whole; now
 * 2 GiB). The receiver copies
 * each piece into one buffer of the body's length as it arrives, and drops it. One PUSH to one PULL keeps a
 * sender's messages in order, and its outbox queues a message's pieces one after the other, so the pieces of a
 * message from one rank arrive in order with nothing of that rank's between them (other ranks' messages may be).
 * Without CURVE (`--insecure`) nothing copies a body, and it goes whole.
 */

/** Messages at least this large go out on their own, split in header and body, and are never copied here. */
const SOLO_BYTES = 16 * 1024;
/** Under CURVE, a body larger than this goes in pieces of this size, each a ZeroMQ message of its own. */
const PIECE_BYTES = 1024 * 1024;
/**
 * A body's last piece takes up to this many bytes more rather than leave them a piece of their own. A typed array
 * of 1 MiB is a body of 1 MiB and a few bytes of encoding: it then goes whole, and the receiver keeps ZeroMQ's
 * part as the array (codec.ts `typedArray`), where two pieces would first be copied into a buffer of the body's
 * length (`npm run bench -- map`: 64 results of 1 MiB to rank 0).
 */
const TAIL_BYTES = 64 * 1024;
/** The first part of a ZeroMQ message that carries a next piece: the sender's rank. */
const SOURCE_BYTES = 4;
/** A coalesced frame stops growing at this size. */
const FRAME_BYTES = 256 * 1024;
/** Coalesced frames are cut from buffers of this size (a frame never spans two). */
const SLAB_BYTES = FRAME_BYTES;
/** Above this many queued bytes for one peer, `enqueue` hands back a promise that resolves once drained. */
const OUTBOX_HIGH_BYTES = 8 * 1024 * 1024;
/** After receiving this many bytes, the receive loop yields to the event loop. */
const YIELD_BYTES = 256 * 1024;
/** How long `close` keeps trying to deliver what is still queued (a peer that died must not hang us). */
const LINGER_MS = 30_000;

/**
 * What one ZeroMQ send carries: a frame, a large message split in header and body, or a piece of a large body
 * (its header and first piece, or the sender's rank and a next piece).
 */
type Outgoing = Buffer | [header: Buffer, body: Buffer];

/** A large message whose body is arriving in pieces: its header, and its body as far as it came. */
interface Arriving {
  readonly header: Buffer;
  readonly body: Buffer;
  filled: number;
}

interface Outbox {
  readonly socket: Zmq.Push;
  /** Frames ready to go, oldest first from `head`; all of them were queued before the open frame. */
  frames: (Outgoing | undefined)[];
  head: number;
  /** The open frame, still growing, is `slab[openStart, openEnd)`. */
  slab: Buffer | undefined;
  openStart: number;
  openEnd: number;
  /** Bytes queued for this peer and not yet handed to ZeroMQ. */
  bytes: number;
  /** A pump is running: a frame is being handed over or more are queued. */
  sending: boolean;
  drained: (() => void)[];
  /** The peer died (see `drop`): nothing more goes to it. */
  dropped: boolean;
}

export class Transport {
  readonly endpoint: string;
  private readonly inbox: Zmq.Pull;
  /** Socket options of this rank's connections to others: CURVE clients of the job's key, if it has one. */
  private readonly clientOptions: ReturnType<typeof clientOptions>;
  /** The largest piece of a large message's body: PIECE_BYTES under CURVE, else the body whole. */
  private readonly pieceBytes: number;
  /** Large messages arriving in pieces, by sender. */
  private readonly arriving = new Map<number, Arriving>();
  private readonly outboxes = new Map<number, Outbox>();
  /** Peers that died (see `drop`). */
  private readonly dropped = new Set<number>();
  private endpoints: readonly string[] = [];
  private sendError: Error | undefined;
  /** The outboxes with a send in flight (`pump`). */
  private readonly pumping = new Set<Outbox>();
  private closed = false;

  /** Whether `close` began: nothing more leaves or arrives. */
  get isClosed(): boolean {
    return this.closed;
  }

  private constructor(inbox: Zmq.Pull, endpoint: string, key: JobKey | undefined) {
    this.inbox = inbox;
    this.endpoint = endpoint;
    this.clientOptions = clientOptions(key);
    this.pieceBytes = key ? PIECE_BYTES : Number.POSITIVE_INFINITY;
  }

  /**
   * Binds this rank's inbox. `onFrame` gets every received frame in arrival order: `onFrame(frame)` for a
   * frame, `onFrame(header, body)` for a message that travelled split. Every connection, both ways, is
   * authenticated and encrypted with the job's `key` (job-key.ts); none without one (`--insecure`).
   */
  static async bind(
    address: string,
    key: JobKey | undefined,
    onFrame: (frame: Buffer, body?: Buffer) => void,
    onError: (e: Error) => void,
  ): Promise<Transport> {
    const inbox = new (loadZmq().Pull)({ receiveHighWaterMark: 0, linger: 0, ...serverOptions(key) });
    ownSocket(inbox);
    await uninterruptedAsync(() => inbox.bind(address));
    const t = new Transport(inbox, inbox.lastEndpoint ?? address, key);
    t.receiveLoop(onFrame, onError);
    return t;
  }

  setPeers(endpoints: readonly string[]): void {
    this.endpoints = endpoints;
  }

  /**
   * Opens the connections to `peers` now, rather than at the first message to each. A connection's CURVE
   * handshake takes both processes' ZeroMQ threads about 1 ms of CPU, and a round trip of theirs: made as a job
   * starts, while the app loads its input, it is not on the path of the job's first messages. (Lazily, rank 0's
   * first offers of work at 16 ranks on 2 cores reached the last rank 58 ms after they left.)
   */
  connectAhead(peers: Iterable<number>): void {
    for (const peer of peers) if (!this.dropped.has(peer)) this.outbox(peer);
  }

  private async receiveLoop(
    onFrame: (frame: Buffer, body?: Buffer) => void,
    onError: (e: Error) => void,
  ): Promise<void> {
    try {
      let sinceYield = 0;
      for (;;) {
        const parts = await this.inbox.receive();
        if (parts.length > 2) throw new Error(`received a message of ${parts.length} parts`);
        const [first, piece] = parts as [Buffer, Buffer?];
        sinceYield += first.length + (piece?.length ?? 0);
        const whole = piece === undefined ? undefined : this.assemble(first, piece);
        if (whole) onFrame(whole.header, whole.body);
        else if (piece === undefined) onFrame(first);
        // ZeroMQ hands over frames without a turn of the event loop while it has them, so a fast sender could
        // grow the queue of unreceived messages without bound. Yielding now and then lets the app take what
        // arrived first; a backlog then waits in ZeroMQ's buffers, not as JS objects that outlive young GC.
        if (sinceYield >= YIELD_BYTES) {
          sinceYield = 0;
          await new Promise<void>((resolve) => setImmediate(resolve));
        } else {
          // One microtask turn, so that the app's reaction to this frame (typically a reply, sent at once)
          // runs before the next receive, which may poll: in a ping-pong the reply leaves a few µs sooner.
          await Promise.resolve();
        }
      }
    } catch (e) {
      if (!this.closed) onError(e as Error);
    }
  }

  /**
   * Takes a message of two parts: a large message's header and body, whole (returned as they are), or one of
   * its pieces (see the file comment): the message once its last piece is in, else undefined.
   */
  private assemble(first: Buffer, piece: Buffer): { header: Buffer; body: Buffer } | undefined {
    let arriving: Arriving | undefined;
    if (first.length === SOURCE_BYTES) {
      const source = first.readUInt32LE(0);
      // What a peer that died had begun to send is dropped with it (the router drops its whole messages too).
      if (this.dropped.has(source)) return undefined;
      arriving = this.arriving.get(source);
      if (!arriving || arriving.filled + piece.length > arriving.body.length) {
        throw new Error(`corrupt message: a piece of ${piece.length} bytes from rank ${source} fits no message begun`);
      }
    } else {
      const length = first.length === HEADER_BYTES ? first.readUInt32LE(0) : piece.length;
      if (length <= piece.length) return { header: first, body: piece };
      if (this.dropped.has(first.readUInt32LE(4))) return undefined;
      // The first piece: the body's buffer is made once, its own (decodeSplit then hands it on without a copy).
      arriving = { header: first, body: Buffer.allocUnsafeSlow(length), filled: 0 };
      this.arriving.set(first.readUInt32LE(4), arriving);
    }
    arriving.body.set(piece, arriving.filled);
    arriving.filled += piece.length;
    if (arriving.filled < arriving.body.length) return undefined;
    this.arriving.delete(arriving.header.readUInt32LE(4));
    return arriving;
  }

  private outbox(dest: number): Outbox {
    let box = this.outboxes.get(dest);
    if (!box) {
      const endpoint = this.endpoints[dest];
      if (endpoint === undefined) throw new Error(`no endpoint for rank ${dest}`);
      const socket = new (loadZmq().Push)({
        sendHighWaterMark: 0,
        linger: LINGER_MS,
        immediate: false,
        ...this.clientOptions,
      });
      ownSocket(socket);
      uninterrupted(() => socket.connect(endpoint));
      box = {
        socket,
        frames: [],
        head: 0,
        slab: undefined,
        openStart: 0,
        openEnd: 0,
        bytes: 0,
        sending: false,
        drained: [],
        dropped: false,
      };
      this.outboxes.set(dest, box);
    }
    return box;
  }

  /**
   * Queues one message made by codec.ts `encodeMessage` for `dest`; it must not change afterwards (it may be
   * sent as it is). Returns undefined when the message is accepted, or a promise that resolves when the
   * outbox for `dest` has drained below its high-water mark (back-pressure). A message for a peer that was
   * dropped (`drop`) is discarded.
   */
  enqueue(dest: number, message: Buffer): Promise<void> | undefined {
    if (this.sendError) throw this.sendError;
    if (this.dropped.has(dest)) return undefined;
    const box = this.outbox(dest);
    if (message.length < SOLO_BYTES) {
      box.bytes += message.length;
      // Nothing in flight, so nothing queued either: the message leaves now, on its own.
      if (!box.sending) box.frames.push(message);
      else append(box, message);
    } else {
      seal(box);
      for (const piece of split(message, this.pieceBytes)) {
        box.bytes += piece[0].length + piece[1].length;
        box.frames.push(piece);
      }
    }
    if (!box.sending) void this.pump(box);
    if (box.bytes > OUTBOX_HIGH_BYTES) return new Promise((resolve) => box.drained.push(resolve));
    return undefined;
  }

  /** Hands frames to ZeroMQ one at a time, oldest first, until the outbox is empty. */
  private async pump(box: Outbox): Promise<void> {
    box.sending = true;
    this.pumping.add(box);
    try {
      for (;;) {
        let frame = box.frames[box.head];
        if (frame !== undefined) {
          box.frames[box.head++] = undefined;
          if (box.head === box.frames.length) {
            box.frames = [];
            box.head = 0;
          } else if (box.head >= 1024 && box.head * 2 >= box.frames.length) {
            box.frames = box.frames.slice(box.head);
            box.head = 0;
          }
        } else if (box.openEnd > box.openStart) {
          frame = (box.slab as Buffer).subarray(box.openStart, box.openEnd);
          box.openStart = box.openEnd;
        } else {
          break;
        }
        await box.socket.send(frame);
        if (box.dropped) return;
        box.bytes -= Array.isArray(frame) ? frame[0].length + frame[1].length : frame.length;
        if (box.drained.length > 0 && box.bytes <= OUTBOX_HIGH_BYTES / 2) {
          for (const resolve of box.drained.splice(0)) resolve();
        }
      }
    } catch (e) {
      // A socket that `drop` closed under a send is no failure of this rank's.
      if (!box.dropped) this.sendError = e as Error;
    } finally {
      box.sending = false;
      this.pumping.delete(box);
      if (this.sendError || !pending(box)) for (const resolve of box.drained.splice(0)) resolve();
    }
  }

  /**
   * True when a message waits here behind a send in flight to the same rank. It leaves only at this rank's next
   * microtask checkpoint (`pump` awaits ZeroMQ's promise, settled at once when ZeroMQ took the frame), so a
   * caller about to block its thread (a long synchronous task) lets the event loop turn first: a GIVE queued
   * behind a REQUEST to the same rank waited out a 20 s task.
   */
  get held(): boolean {
    for (const box of this.pumping) if (pending(box)) return true;
    return false;
  }

  /** Resolves once every queued message has been handed to ZeroMQ (or sending has failed). */
  async flush(): Promise<void> {
    for (const box of this.outboxes.values()) {
      while (!this.sendError && (box.sending || pending(box))) {
        if (!box.sending) void this.pump(box);
        await new Promise<void>((resolve) => box.drained.push(resolve));
      }
    }
  }

  /**
   * Peer `rank` died: closes the socket to it at once (linger 0) and discards what is queued for it, which
   * resolves every back-pressure promise `enqueue` gave for it; later messages for it are discarded. So neither
   * `flush` nor the process's exit waits on a peer that will never take anything. Idempotent.
   */
  drop(rank: number): void {
    if (this.dropped.has(rank)) return;
    this.dropped.add(rank);
    this.arriving.delete(rank);
    const box = this.outboxes.get(rank);
    if (!box) return;
    this.outboxes.delete(rank);
    box.dropped = true;
    box.frames = [];
    box.head = 0;
    box.slab = undefined;
    box.openStart = 0;
    box.openEnd = 0;
    box.bytes = 0;
    if (!this.closed) {
      box.socket.linger = 0;
      box.socket.close();
    }
    for (const resolve of box.drained.splice(0)) resolve();
  }

  /** Flushes, then closes every socket. ZeroMQ keeps delivering what it holds for up to LINGER_MS. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    for (const box of this.outboxes.values()) box.socket.close();
    this.inbox.close();
  }
}

/**
 * A large message's ZeroMQ messages: its header and its body, or, when the body is larger than `pieceBytes`,
 * its header and the body's first piece, then the sender's rank and each next piece (views, no copies).
 */
function split(message: Buffer, pieceBytes: number): [Buffer, Buffer][] {
  const header = message.subarray(0, HEADER_BYTES);
  const source = message.subarray(4, 4 + SOURCE_BYTES);
  const out: [Buffer, Buffer][] = [];
  for (let at = HEADER_BYTES, end = at; at < message.length; at = end) {
    end = message.length - at <= pieceBytes + TAIL_BYTES ? message.length : at + pieceBytes;
    out.push([at === HEADER_BYTES ? header : source, message.subarray(at, end)]);
  }
  return out;
}

function pending(box: Outbox): boolean {
  return box.head < box.frames.length || box.openEnd > box.openStart;
}

/** Ends the open frame: it joins the frames ready to go, and the next message starts a new one. */
function seal(box: Outbox): void {
  if (box.openEnd === box.openStart) return;
  box.frames.push((box.slab as Buffer).subarray(box.openStart, box.openEnd));
  box.openStart = box.openEnd;
}

/** Copies a small message to the end of the open frame, starting a new frame or slab when it is full. */
function append(box: Outbox, message: Buffer): void {
  let slab = box.slab;
  if (box.openEnd - box.openStart + message.length > FRAME_BYTES) seal(box);
  if (slab === undefined || box.openEnd + message.length > slab.length) {
    seal(box);
    slab = box.slab = Buffer.allocUnsafe(SLAB_BYTES);
    box.openStart = 0;
    box.openEnd = 0;
  }
  slab.set(message, box.openEnd);
  box.openEnd += message.length;
}
