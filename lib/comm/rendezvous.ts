import { loadZmq, uninterrupted, uninterruptedAsync } from "./zmq.ts";
import { BootstrapError } from "../errors.ts";
import { pack, unpack } from "./codec.ts";
import { ENV } from "./env.ts";
import { clientOptions, type JobKey, serverOptions } from "./job-key.ts";

/**
 * Rendezvous: how N ranks that know only (rank, size, one address) learn every rank's endpoint.
 *
 * The service binds a ROUTER; each rank binds its own inbox first, then connects a DEALER and says
 * `hello {rank, endpoint, pid, host}`. When all `size` ranks have said hello, the service answers each with the
 * full endpoint table. The service runs in the launcher today; a launcher that starts ranks by ssh, mpirun or
 * Slurm runs the same service and only changes how processes start: the ranks' transport never changes.
 *
 * Two waits, so a rank that cannot reach its rendezvous fails fast while a large job on a busy machine may
 * take its time to start. A ZeroMQ connect to an address nobody serves fails silently (it retries for ever), so
 * the rank watches its socket for the ZeroMQ handshake with the service (a CURVE handshake: it also proves the
 * rank and the service hold the same job key), which the service's ZeroMQ I/O thread
 * completes however busy its JavaScript is: the handshake must happen within the connect timeout
 * (WORKPOOL_CONNECT_TIMEOUT_MS, default 10 s), and the table come within JOIN_TIMEOUT_MS (or the connect
 * timeout, if longer) after that.
 */

/** How long a rank waits to connect to the rendezvous unless WORKPOOL_CONNECT_TIMEOUT_MS says otherwise. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
/** How long a rank connected to the rendezvous waits for every other rank to join (the endpoint table). */
export const JOIN_TIMEOUT_MS = 300_000;
/** The longest delay setTimeout takes. */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** WORKPOOL_CONNECT_TIMEOUT_MS from `env`, or DEFAULT_CONNECT_TIMEOUT_MS; BootstrapError if it is not a duration. */
export function connectTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[ENV.connectTimeoutMs];
  if (raw === undefined || raw.trim() === "") return DEFAULT_CONNECT_TIMEOUT_MS;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms < 1 || ms > MAX_TIMEOUT_MS) {
    throw new BootstrapError(
      `environment variable ${ENV.connectTimeoutMs} must be a whole number of milliseconds in 1..${MAX_TIMEOUT_MS}; got ${JSON.stringify(raw)}`,
    );
  }
  return ms;
}

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
  /**
   * Stops serving. With `deliver`, the answers already sent (the endpoint tables) still go out for up to 2 s
   * (ZeroMQ's linger); without, whatever is queued is dropped at once: the job is over, and a process exiting
   * with a socket that lingers waits for it.
   */
  close(deliver?: boolean): void;
}

/** Serves the rendezvous of a job of `size` ranks at `bindAddress`, to ranks that hold the job's `key`. */
export async function serveRendezvous(
  size: number,
  bindAddress: string,
  key: JobKey | undefined,
): Promise<RendezvousService> {
  const router = new (loadZmq().Router)({ linger: 2000, ...serverOptions(key) });
  await uninterruptedAsync(() => router.bind(bindAddress));
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
    close(deliver = false) {
      if (closed) return;
      closed = true;
      if (!deliver) router.linger = 0;
      router.close();
    },
  };
  const reply = (identity: Buffer, r: Reply) => router.send([identity, pack(r)]);
  (async () => {
    try {
      for await (const [identity, body] of router) {
        if (!identity || !body) continue;
        // A hello that does not decode (not a rank of this job, or a damaged one) is answered and skipped: the
        // service goes on for the real ranks instead of leaving them to wait out their timeout.
        let hello: Hello;
        try {
          hello = unpack(body) as Hello;
        } catch (e) {
          await reply(identity, {
            t: "error",
            message: `rendezvous: a hello that does not decode: ${(e as Error).message}`,
          });
          continue;
        }
        const r = typeof hello === "object" && hello !== null ? hello.rank : undefined;
        if (hello?.t !== "hello" || typeof r !== "number" || !Number.isInteger(r) || r < 0 || r >= size) {
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

/**
 * Rank side: announce this rank's inbox and wait for the endpoint table. Rejects with BootstrapError naming
 * the address when no ZeroMQ connection to the rendezvous is made within `connectMs` (with `remedy` added: what
 * the user can do about it), or the table does not come within `joinMs` after that.
 */
export async function joinRendezvous(
  address: string,
  key: JobKey | undefined,
  hello: Omit<Hello, "t">,
  connectMs: number,
  joinMs = Math.max(JOIN_TIMEOUT_MS, connectMs),
  remedy = "",
): Promise<string[]> {
  const dealer = new (loadZmq().Dealer)({ linger: 0, ...clientOptions(key) });
  const who = `rank ${hello.rank}`;
  let connected = false;
  const handshake = new Promise<typeof CONNECTED>((resolve) => {
    uninterrupted(() => dealer.events).on("handshake", () => {
      connected = true;
      resolve(CONNECTED);
    });
  });
  try {
    let received: Promise<Reply>;
    try {
      uninterrupted(() => dealer.connect(address));
      await dealer.send(pack({ t: "hello", ...hello }));
      received = dealer.receive().then(([body]) => unpack(body as Buffer) as Reply);
    } catch (cause) {
      throw new BootstrapError(`${who}: cannot reach the rendezvous at ${address}: ${(cause as Error).message}`, {
        cause,
      });
    }
    // Closing the socket on the way out rejects a receive still pending: that is no news.
    received.catch(() => {});
    const first = Promise.race<Reply | typeof CONNECTED>([received, handshake]);
    let reply = await race(first, connectMs, () => (connected ? CONNECTED : undefined));
    if (reply === undefined) {
      throw new BootstrapError(
        `${who}: cannot reach the rendezvous at ${address}: no connection within ${connectMs} ms ` +
          `(${ENV.connectTimeoutMs}); is the launcher that serves it still running, and can this host reach that address?` +
          remedy,
      );
    }
    if (reply === CONNECTED) reply = await race(received, joinMs, () => undefined);
    if (reply === undefined) {
      throw new BootstrapError(
        `${who}: connected to the rendezvous at ${address}, but not every rank joined within ${joinMs} ms`,
      );
    }
    if (reply.t === "error") throw new BootstrapError(`${who}: ${reply.message}`);
    return reply.endpoints;
  } finally {
    dealer.close();
  }
}

const CONNECTED = Symbol("connected");

/**
 * What `promise` settles to, if within `ms`; else what `late()` says then. Socket events are read in the event
 * loop's poll phase, which runs after its timers, so `late` is asked one poll phase after the timer fires: an
 * event that came while this process was not running (a busy machine) still counts.
 */
async function race<T, L>(promise: Promise<T>, ms: number, late: () => L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<L>((resolve) => {
    timer = setTimeout(() => setImmediate(() => resolve(late())), ms);
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}
