import * as zmq from "zeromq";
import { BootstrapError } from "../errors.ts";
import { pack, unpack } from "./codec.ts";

/**
 * Rendezvous: how N ranks that know only (rank, size, one address) learn every rank's endpoint.
 *
 * The service binds a ROUTER; each rank binds its own inbox first, then connects a DEALER and says
 * `hello {rank, endpoint, pid, host}`. When all `size` ranks have said hello, the service answers each with the
 * full endpoint table. The service runs in the launcher today; a launcher that starts ranks by ssh, mpirun or
 * Slurm runs the same service and only changes how processes start: the ranks' transport never changes.
 */

interface Hello {
  t: "hello";
  rank: number;
  endpoint: string;
  pid: number;
  host: string;
}
type Reply = { t: "table"; endpoints: string[] } | { t: "error"; message: string };

export interface RankInfo {
  readonly rank: number;
  readonly endpoint: string;
  readonly pid: number;
  readonly host: string;
}

export interface RendezvousService {
  /** The address ranks connect to. */
  readonly endpoint: string;
  /** Resolves with every rank's hello once all have arrived. */
  readonly complete: Promise<RankInfo[]>;
  /** Called for each hello as it arrives (the launcher records pids). */
  onHello?: (info: RankInfo) => void;
  close(): void;
}

export async function serveRendezvous(size: number, bindAddress: string): Promise<RendezvousService> {
  const router = new zmq.Router({ linger: 2000 });
  await router.bind(bindAddress);
  const endpoint = router.lastEndpoint ?? bindAddress;
  const infos: (RankInfo | undefined)[] = new Array(size);
  const identities: Buffer[] = new Array(size);
  let seen = 0;
  let closed = false;
  let settle!: { resolve: (v: RankInfo[]) => void; reject: (e: Error) => void };
  const complete = new Promise<RankInfo[]>((resolve, reject) => {
    settle = { resolve, reject };
  });
  complete.catch(() => {});
  const service: RendezvousService = {
    endpoint,
    complete,
    close() {
      closed = true;
      router.close();
    },
  };
  const reply = (identity: Buffer, r: Reply) => router.send([identity, pack(r)]);
  (async () => {
    try {
      for await (const [identity, body] of router) {
        if (!identity || !body) continue;
        const hello = unpack(body) as Hello;
        const r = hello.rank;
        if (hello.t !== "hello" || !Number.isInteger(r) || r < 0 || r >= size) {
          await reply(identity, { t: "error", message: `rendezvous: bad hello ${JSON.stringify(hello)}` });
          continue;
        }
        if (infos[r]) {
          await reply(identity, { t: "error", message: `rendezvous: rank ${r} joined twice` });
          continue;
        }
        const info: RankInfo = { rank: r, endpoint: hello.endpoint, pid: hello.pid, host: hello.host };
        infos[r] = info;
        identities[r] = identity;
        service.onHello?.(info);
        if (++seen === size) {
          const table: Reply = { t: "table", endpoints: infos.map((i) => (i as RankInfo).endpoint) };
          for (const id of identities) await reply(id, table);
          settle.resolve(infos as RankInfo[]);
        }
      }
    } catch (e) {
      if (!closed) settle.reject(new BootstrapError("rendezvous service failed", { cause: e }));
    }
  })();
  return service;
}

/** Rank side: announce this rank's inbox and wait for the endpoint table. */
export async function joinRendezvous(address: string, hello: Omit<Hello, "t">, timeoutMs: number): Promise<string[]> {
  const dealer = new zmq.Dealer({ linger: 0, receiveTimeout: timeoutMs });
  try {
    dealer.connect(address);
    await dealer.send(pack({ t: "hello", ...hello }));
    let body: Buffer | undefined;
    try {
      [body] = await dealer.receive();
    } catch (cause) {
      throw new BootstrapError(
        `rank ${hello.rank}: no endpoint table from the rendezvous at ${address} within ${timeoutMs} ms`,
        { cause },
      );
    }
    const reply = unpack(body as Buffer) as Reply;
    if (reply.t === "error") throw new BootstrapError(reply.message);
    return reply.endpoints;
  } finally {
    dealer.close();
  }
}
