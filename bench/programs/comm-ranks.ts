/**
 * The workpool side of the comm benchmark: two ranks written the way an app uses the public API (awaited
 * `send`, `recv` by source and tag). The protocol is in comm-plan.ts.
 * Usage: workpool launch -n 2 --no-prefix bench/programs/comm-ranks.ts <control endpoint>
 */
import { connect } from "workpool";
import { type Ack, type CommCommand, cpuSince, now, type PingResult, type StreamResult, TAG } from "./comm-plan.ts";
import { serveControl } from "./control.ts";

const controlEndpoint = process.argv[2];
if (!controlEndpoint) throw new Error("usage: comm-ranks.ts <control endpoint>");
const world = await connect();
if (world.size !== 2) throw new Error(`comm-ranks needs exactly 2 ranks; got ${world.size}`);

async function ping(c: Extract<CommCommand, { op: "ping" }>): Promise<PingResult | undefined> {
  const cpu = process.cpuUsage();
  const total = c.warmup + c.iterations;
  if (world.rank === 1) {
    for (let i = 0; i < total; i++) {
      const m = await world.recv({ source: 0, tag: TAG.ping });
      await world.send(0, TAG.ping, m.data);
    }
    await world.send(0, TAG.ack, { cpuUs: cpuSince(cpu) } satisfies Ack);
    return undefined;
  }
  const samplesUs: number[] = [];
  const payload = new Uint8Array(c.bytes);
  for (let i = 0; i < total; i++) {
    const t0 = now();
    await world.send(1, TAG.ping, payload);
    await world.recv({ source: 1, tag: TAG.ping });
    if (i >= c.warmup) samplesUs.push((now() - t0) / 1000);
  }
  const own = cpuSince(cpu);
  const { data: peer } = await world.recv<Ack>({ source: 1, tag: TAG.ack });
  return { samplesUs, cpuUs: own + peer.cpuUs };
}

async function stream(c: Extract<CommCommand, { op: "stream" }>): Promise<StreamResult | undefined> {
  if (world.rank === 1) {
    let bytes = 0;
    let cpu: NodeJS.CpuUsage | undefined;
    for (let i = 0; i < c.count; i++) {
      const m = await world.recv<Uint8Array>({ source: 0, tag: TAG.stream });
      cpu ??= process.cpuUsage();
      bytes += m.data.length;
    }
    if (bytes !== c.bytes * c.count) throw new Error(`stream: got ${bytes} bytes, expected ${c.bytes * c.count}`);
    await world.send(0, TAG.ack, { cpuUs: cpu ? cpuSince(cpu) : 0 } satisfies Ack);
    return undefined;
  }
  const payload = new Uint8Array(c.bytes).fill(7);
  const cpu = process.cpuUsage();
  const t0 = now();
  for (let i = 0; i < c.count; i++) await world.send(1, TAG.stream, payload);
  const { data: peer } = await world.recv<Ack>({ source: 1, tag: TAG.ack });
  return { seconds: (now() - t0) / 1e9, cpuUs: cpuSince(cpu) + peer.cpuUs };
}

function run(c: CommCommand): Promise<unknown> {
  if (c.op === "ping") return ping(c);
  if (c.op === "stream") return stream(c);
  return Promise.resolve(null);
}

if (world.rank === 0) {
  await serveControl<CommCommand>(controlEndpoint, async (c) => {
    await world.send(1, TAG.command, c);
    return run(c);
  });
} else {
  for (;;) {
    const { data: c } = await world.recv<CommCommand>({ source: 0, tag: TAG.command });
    if (c.op === "quit") break;
    await run(c);
  }
}
await world.close();
