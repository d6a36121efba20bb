/**
 * The baseline side of the comm benchmark: the protocol of comm-plan.ts on bare zeromq.js, no framework.
 * Each process binds one PULL and connects one PUSH to its peer's PULL, the shape workpool's transport uses,
 * with zeromq.js's default socket options. Every message is one ZeroMQ frame and every send is awaited
 * (zeromq.js allows one send in flight per socket), which is how a plain zeromq.js program streams.
 * Commands and acks are JSON text; the measured messages are the bytes themselves. With RAW_ZMQ_KEY (a job key,
 * 80 characters of Z85), both sockets use CURVE with it, as a workpool job's do by default (job-key.ts): the same
 * encryption on both sides of the comparison.
 * Usage: node --import tsx bench/programs/raw-zmq.ts <rank 0|1> <own endpoint> <peer endpoint> [<control endpoint>]
 */
import * as zmq from "zeromq";
import { clientOptions, parseJobKey, serverOptions } from "../../lib/internal.ts";
import { type Ack, type CommCommand, cpuSince, now, type PingResult, type StreamResult } from "./comm-plan.ts";
import { serveControl } from "./control.ts";

const rank = Number(process.argv[2]);
const own = process.argv[3];
const peer = process.argv[4];
const controlEndpoint = process.argv[5];
if ((rank !== 0 && rank !== 1) || !own || !peer || (rank === 0 && !controlEndpoint)) {
  throw new Error("usage: raw-zmq.ts <0|1> <own endpoint> <peer endpoint> [<control endpoint> on rank 0]");
}

const keyText = process.env.RAW_ZMQ_KEY;
const key = keyText === undefined ? undefined : parseJobKey(keyText, "RAW_ZMQ_KEY");
const inbox = new zmq.Pull(key ? serverOptions(key) : {});
await inbox.bind(own);
const outbox = new zmq.Push(clientOptions(key));
outbox.connect(peer);

async function receiveJson<T>(): Promise<T> {
  const [m] = await inbox.receive();
  return JSON.parse(String(m)) as T;
}

async function ping(c: Extract<CommCommand, { op: "ping" }>): Promise<PingResult | undefined> {
  const cpu = process.cpuUsage();
  const total = c.warmup + c.iterations;
  if (rank === 1) {
    for (let i = 0; i < total; i++) {
      const [m] = await inbox.receive();
      await outbox.send(m as Buffer);
    }
    await outbox.send(JSON.stringify({ cpuUs: cpuSince(cpu) } satisfies Ack));
    return undefined;
  }
  const samplesUs: number[] = [];
  const payload = new Uint8Array(c.bytes);
  for (let i = 0; i < total; i++) {
    const t0 = now();
    await outbox.send(payload);
    await inbox.receive();
    if (i >= c.warmup) samplesUs.push((now() - t0) / 1000);
  }
  const own = cpuSince(cpu);
  const peerAck = await receiveJson<Ack>();
  return { samplesUs, cpuUs: own + peerAck.cpuUs };
}

async function stream(c: Extract<CommCommand, { op: "stream" }>): Promise<StreamResult | undefined> {
  if (rank === 1) {
    let bytes = 0;
    let cpu: NodeJS.CpuUsage | undefined;
    for (let i = 0; i < c.count; i++) {
      const [m] = await inbox.receive();
      cpu ??= process.cpuUsage();
      bytes += (m as Buffer).length;
    }
    if (bytes !== c.bytes * c.count) throw new Error(`stream: got ${bytes} bytes, expected ${c.bytes * c.count}`);
    await outbox.send(JSON.stringify({ cpuUs: cpu ? cpuSince(cpu) : 0 } satisfies Ack));
    return undefined;
  }
  const payload = new Uint8Array(c.bytes).fill(7);
  const cpu = process.cpuUsage();
  const t0 = now();
  for (let i = 0; i < c.count; i++) await outbox.send(payload);
  const peerAck = await receiveJson<Ack>();
  return { seconds: (now() - t0) / 1e9, cpuUs: cpuSince(cpu) + peerAck.cpuUs };
}

function run(c: CommCommand): Promise<unknown> {
  if (c.op === "ping") return ping(c);
  if (c.op === "stream") return stream(c);
  return Promise.resolve(null);
}

if (rank === 0) {
  await serveControl<CommCommand>(controlEndpoint as string, async (c) => {
    await outbox.send(JSON.stringify(c));
    return run(c);
  });
} else {
  for (;;) {
    const c = await receiveJson<CommCommand>();
    if (c.op === "quit") break;
    await run(c);
  }
}
outbox.close();
inbox.close();
