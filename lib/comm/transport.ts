import * as zmq from "zeromq";

/**
 * The wire: one PULL inbox per rank, and one PUSH socket per peer this rank sends to (connected lazily,
 * so a 1024-rank job opens only the connections it uses). One PUSH to one PULL is one ordered stream, which
 * gives MPI's non-overtaking rule between each pair of ranks.
 *
 * Small messages bound for the same rank are coalesced: a message goes out at once when nothing is in flight
 * to that rank; messages that arrive while a frame is in flight wait in the outbox and leave together as the
 * next frame. A lone message is never delayed, and a stream of small ones costs one ZeroMQ send per batch.
 */

/** Messages at least this large go out as a frame of their own (no concatenation copy). */
const SOLO_BYTES = 16 * 1024;
/** A coalesced frame stops growing at this size. */
const FRAME_BYTES = 256 * 1024;
/** Above this many queued bytes for one peer, `enqueue` hands back a promise that resolves once drained. */
const OUTBOX_HIGH_BYTES = 8 * 1024 * 1024;
/** How long `close` keeps trying to deliver what is still queued (a peer that died must not hang us). */
const LINGER_MS = 30_000;

interface Outbox {
  socket: zmq.Push;
  queue: Buffer[];
  head: number;
  bytes: number;
  sending: boolean;
  drained: (() => void)[];
}

export class Transport {
  readonly endpoint: string;
  private readonly inbox: zmq.Pull;
  private readonly outboxes = new Map<number, Outbox>();
  private endpoints: readonly string[] = [];
  private sendError: Error | undefined;
  private closed = false;

  private constructor(inbox: zmq.Pull, endpoint: string) {
    this.inbox = inbox;
    this.endpoint = endpoint;
  }

  /** Binds this rank's inbox. `onFrame` gets every received frame in arrival order. */
  static async bind(
    address: string,
    onFrame: (frame: Buffer) => void,
    onError: (e: Error) => void,
  ): Promise<Transport> {
    const inbox = new zmq.Pull({ receiveHighWaterMark: 0, linger: 0 });
    await inbox.bind(address);
    const t = new Transport(inbox, inbox.lastEndpoint ?? address);
    t.receiveLoop(onFrame, onError);
    return t;
  }

  setPeers(endpoints: readonly string[]): void {
    this.endpoints = endpoints;
  }

  private async receiveLoop(onFrame: (frame: Buffer) => void, onError: (e: Error) => void): Promise<void> {
    try {
      for (;;) {
        const parts = await this.inbox.receive();
        for (const part of parts) onFrame(part);
      }
    } catch (e) {
      if (!this.closed) onError(e as Error);
    }
  }

  private outbox(dest: number): Outbox {
    let box = this.outboxes.get(dest);
    if (!box) {
      const endpoint = this.endpoints[dest];
      if (endpoint === undefined) throw new Error(`no endpoint for rank ${dest}`);
      const socket = new zmq.Push({ sendHighWaterMark: 0, linger: LINGER_MS, immediate: false });
      socket.connect(endpoint);
      box = { socket, queue: [], head: 0, bytes: 0, sending: false, drained: [] };
      this.outboxes.set(dest, box);
    }
    return box;
  }

  /**
   * Queues one encoded message for `dest`. Returns undefined when the message is accepted, or a promise that
   * resolves when the outbox for `dest` has drained below its high-water mark (back-pressure).
   */
  enqueue(dest: number, message: Buffer): Promise<void> | undefined {
    if (this.sendError) throw this.sendError;
    const box = this.outbox(dest);
    box.queue.push(message);
    box.bytes += message.length;
    if (!box.sending) void this.pump(box);
    if (box.bytes > OUTBOX_HIGH_BYTES) return new Promise((resolve) => box.drained.push(resolve));
    return undefined;
  }

  private async pump(box: Outbox): Promise<void> {
    box.sending = true;
    try {
      while (box.head < box.queue.length) {
        const first = box.queue[box.head] as Buffer;
        let frame: Buffer;
        if (first.length >= SOLO_BYTES || box.head + 1 === box.queue.length) {
          frame = first;
          box.head++;
        } else {
          let end = box.head;
          let total = 0;
          while (end < box.queue.length) {
            const m = box.queue[end] as Buffer;
            if (m.length >= SOLO_BYTES || (total > 0 && total + m.length > FRAME_BYTES)) break;
            total += m.length;
            end++;
          }
          frame = end === box.head + 1 ? first : Buffer.concat(box.queue.slice(box.head, end), total);
          box.head = end;
        }
        if (box.head === box.queue.length) {
          box.queue = [];
          box.head = 0;
        } else if (box.head > 1024 && box.head * 2 > box.queue.length) {
          box.queue = box.queue.slice(box.head);
          box.head = 0;
        }
        await box.socket.send(frame);
        box.bytes -= frame.length;
        if (box.drained.length > 0 && box.bytes <= OUTBOX_HIGH_BYTES / 2) {
          for (const resolve of box.drained.splice(0)) resolve();
        }
      }
    } catch (e) {
      this.sendError = e as Error;
    } finally {
      box.sending = false;
      if (box.queue.length === box.head) for (const resolve of box.drained.splice(0)) resolve();
    }
  }

  /** Resolves once every queued message has been handed to ZeroMQ. */
  async flush(): Promise<void> {
    for (const box of this.outboxes.values()) {
      while (box.sending || box.head < box.queue.length) {
        await new Promise<void>((resolve) => box.drained.push(resolve));
        if (!box.sending && box.head < box.queue.length) void this.pump(box);
      }
    }
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
