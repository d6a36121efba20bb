import { hostname } from "node:os";
import { addressFacing, tcpEndpoint, tcpHost } from "./address.ts";
import { firstPeers } from "./collectives.ts";
import { ENV, type JobEnv, readJobEnv } from "./env.ts";
import { detectForeignLaunch } from "./foreign-launch.ts";
import { checkCurve } from "./job-key.ts";
import { connectTimeoutMs, joinRendezvous } from "./rendezvous.ts";
import { Transport } from "./transport.ts";
import type { Communicator } from "./world.ts";
import { onRankDeath, onRankLeft } from "../control/deaths.ts";

/**
 * Joining the job: the bootstrap of a rank, from the job's environment (the launcher's variables, or mpirun's
 * or srun's through foreign.ts) to a world attached to its transport, with every peer's endpoint from the
 * rendezvous, and wired to the launcher's notices of deaths and leavers. A rank of a job is then held to
 * close() (`requireClose`).
 */

/**
 * Joins the job this process was started in: by `workpool launch` (on this host or several), or directly by
 * Open MPI's `mpirun` or Slurm's `srun` (lib/comm/foreign.ts reads their variables; docs/hosts.md). Run without
 * a launcher, it resolves to a world of size 1. `make` builds the world from the job's environment (World's
 * `connect()` in lib/world.ts calls this once and keeps the promise).
 */
export async function joinJob<W extends Communicator>(make: (env: JobEnv) => W): Promise<W> {
  // Started by mpirun or srun rather than `workpool launch`: this process's rank 0 serves the rendezvous.
  const launch = detectForeignLaunch();
  // Loaded only then: what mpirun's and srun's jobs need (the meeting file, host names, crypto and DNS of node's)
  // is no part of a rank that `workpool launch` started.
  const meeting = launch && launch.size > 1 ? await (await import("./foreign.ts")).meetForeignJob(launch) : undefined;
  const env = meeting?.env ?? readJobEnv();
  // The job's key is this process's to use, not its children's: a process the app starts is no rank.
  delete process.env[ENV.key];
  const world = make(env);
  if (env.size === 1 && !env.rendezvous) {
    // `workpool launch -n 1` serves no rendezvous: a world of one has no connection to make. Its rank is still
    // held to close(), as every rank of a launched job is: an app that passes at -n 1 then runs on -n 16 too.
    // Without a launcher (env.job "local") it is told instead.
    requireClose(world, env, env.job !== "local");
    return world;
  }
  const rendezvous = env.rendezvous as string;
  const key = env.key;
  if (key) checkCurve();
  let transport: Transport | undefined;
  try {
    const timeoutMs = connectTimeoutMs();
    const address =
      env.transport === "ipc"
        ? `ipc://${env.ipcDir}/r${env.rank}`
        : tcpEndpoint(env.host ?? (await addressFacing(tcpHost(rendezvous) ?? "127.0.0.1")), "*");
    transport = await Transport.bind(address, key, world.onFrame, (e) => world.fail(e));
    const endpoints = await joinRendezvous(
      rendezvous,
      key,
      { rank: env.rank, endpoint: transport.endpoint, pid: process.pid, host: hostname() },
      timeoutMs,
      undefined,
      // Under mpirun or srun, rank 0 chose the address it serves at; other hosts may not reach it.
      meeting && env.rank !== 0
        ? `. Under mpirun or srun, ${ENV.rendezvous}=tcp://HOST:PORT (HOST: an address of rank 0's host that ` +
            "every host reaches) chooses where rank 0 serves"
        : "",
    );
    transport.setPeers(endpoints);
    transport.connectAhead(firstPeers(env.rank, env.size));
  } catch (e) {
    // Its bound inbox would keep the process alive, though an app that catches this has no world to use; so
    // would the rendezvous that rank 0 serves under mpirun or srun.
    await transport?.close();
    meeting?.abandon();
    throw e;
  }
  world.attach(transport);
  if (env.size > 1) {
    // Deaths the launcher survives (a pool with retries asked it to): the world goes on among the others.
    onRankDeath((rank, why) => world.peerDied(rank, why));
    onRankLeft((rank, progress) => world.peerLeft(rank, progress));
    requireClose(world, env, true);
  }
  return world;
}

/**
 * close() is collective: a rank that ends without it would leave the others waiting there for good, so in a
 * launched job (`launched`) such an end is a failure, with a message the launcher passes on when it brings the job
 * down. Without a launcher (`node app.js`, a world of one) it is not failed but told, since the same app under
 * `workpool launch` fails (a new user whose plain run ended 0 met the mistake only later, under the launcher).
 */
function requireClose(world: Communicator, env: JobEnv, launched: boolean): void {
  process.once("exit", (code) => {
    // (Node passes 0 here for an unsettled top-level await, whose own status 13 is in process.exitCode.)
    if (code !== 0 || (process.exitCode !== undefined && process.exitCode !== 0)) return;
    const failure = world.failure;
    if (failure && launched) {
      // The app caught the failure and ended normally: the others would wait for this rank for good.
      process.stderr.write(`workpool: ${failure.message}\n`);
      process.exitCode = 1;
      return;
    }
    if (world.isClosed || failure) return;
    if (!launched) {
      process.stderr.write(
        "workpool: warning: this process ended without calling world.close(); under `workpool launch` that " +
          "fails the job (close is collective, like MPI_Finalize: on more ranks the others would wait for this one)\n",
      );
      return;
    }
    const others = env.size === 1 ? "on more ranks, the others would wait there" : "the others wait there";
    process.stderr.write(
      `workpool: rank ${env.rank} exited without calling world.close(); every rank must call it (it is ` +
        `collective, like MPI_Finalize: ${others} for this rank)\n`,
    );
    process.exitCode = 1;
  });
}
