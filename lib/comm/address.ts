import { isIP } from "node:net";
import { BootstrapError } from "../errors.ts";

// node:dgram and node:dns/promises are imported where they are used: only jobs on several hosts (and ranks
// started by mpirun or srun) use them. Loaded alone, both cost 1.3 ms of CPU; within a rank's loading of workpool
// the difference was below what 60 runs could tell.

/**
 * Which address of this host the others reach it at: the address of the interface the kernel would send from to
 * reach `peer` (a host name or address). A connected UDP socket answers that without sending anything, from
 * the routing table: so a rank on a host with several interfaces binds the one that faces the job, never
 * 0.0.0.0. `peer` on loopback gives 127.0.0.1.
 */
export async function addressFacing(peer: string): Promise<string> {
  const target = await resolveHost(peer);
  const { createSocket } = await import("node:dgram");
  const socket = createSocket(isIP(target) === 6 ? "udp6" : "udp4");
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once("error", reject);
      socket.connect(9, target, () => resolve());
    });
    return socket.address().address;
  } catch (cause) {
    throw new BootstrapError(`no route from this host to ${peer} (${target}): ${(cause as Error).message}`, {
      cause,
    });
  } finally {
    socket.close();
  }
}

/** The address `host` names (itself if it is one); BootstrapError naming it if it does not resolve. */
export async function resolveHost(host: string): Promise<string> {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  if (isIP(bare)) return bare;
  try {
    const { lookup } = await import("node:dns/promises");
    return (await lookup(bare)).address;
  } catch (cause) {
    throw new BootstrapError(`host ${JSON.stringify(host)} does not resolve: ${(cause as Error).message}`, { cause });
  }
}

/** The host of a `tcp://HOST:PORT` endpoint, or undefined for any other kind. */
export function tcpHost(endpoint: string): string | undefined {
  const m = /^tcp:\/\/(\[[^\]]+\]|[^:/]+):/.exec(endpoint);
  return m?.[1];
}

/** `tcp://HOST:PORT` with an IPv6 host in brackets. */
export function tcpEndpoint(host: string, port: number | "*"): string {
  return `tcp://${host.includes(":") ? `[${host}]` : host}:${port}`;
}
