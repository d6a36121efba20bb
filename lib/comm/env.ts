import { BootstrapError } from "../errors.ts";

/** Environment variables the launcher sets for every rank. Stable names: other launchers may set them too. */
export const ENV = {
  rank: "WORKPOOL_RANK",
  size: "WORKPOOL_SIZE",
  job: "WORKPOOL_JOB",
  rendezvous: "WORKPOOL_RENDEZVOUS",
  transport: "WORKPOOL_TRANSPORT",
  ipcDir: "WORKPOOL_IPC_DIR",
  host: "WORKPOOL_HOST",
  pool: "WORKPOOL_POOL",
  lifelineFd: "WORKPOOL_LIFELINE_FD",
} as const;

export type TransportKind = "ipc" | "tcp";

export interface JobEnv {
  readonly rank: number;
  readonly size: number;
  readonly job: string;
  /** ZeroMQ endpoint of the rendezvous service; absent for a one-rank job started without a launcher. */
  readonly rendezvous: string | undefined;
  readonly transport: TransportKind;
  /** Folder for ipc:// endpoints (transport ipc). */
  readonly ipcDir: string | undefined;
  /** Address other ranks reach this one at (transport tcp). */
  readonly host: string;
  /** The launcher's `--pool SPEC`, unparsed. */
  readonly pool: string | undefined;
}

function int(name: string, raw: string, min: number, max: number): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new BootstrapError(
      `environment variable ${name} must be an integer in ${min}..${max}; got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

export function readJobEnv(env: NodeJS.ProcessEnv = process.env): JobEnv {
  const sizeRaw = env[ENV.size];
  if (sizeRaw === undefined) {
    return {
      rank: 0,
      size: 1,
      job: "local",
      rendezvous: undefined,
      transport: "ipc",
      ipcDir: undefined,
      host: "127.0.0.1",
      pool: env[ENV.pool],
    };
  }
  const size = int(ENV.size, sizeRaw, 1, 1 << 20);
  const rank = int(ENV.rank, env[ENV.rank] ?? "", 0, size - 1);
  const transport = env[ENV.transport] ?? "ipc";
  if (transport !== "ipc" && transport !== "tcp") {
    throw new BootstrapError(
      `environment variable ${ENV.transport} must be ipc or tcp; got ${JSON.stringify(transport)}`,
    );
  }
  const rendezvous = env[ENV.rendezvous];
  if (size > 1 && !rendezvous) {
    throw new BootstrapError(`environment variable ${ENV.rendezvous} is required when ${ENV.size} is ${size}`);
  }
  const ipcDir = env[ENV.ipcDir];
  if (size > 1 && transport === "ipc" && !ipcDir) {
    throw new BootstrapError(`environment variable ${ENV.ipcDir} is required with transport ipc`);
  }
  return {
    rank,
    size,
    job: env[ENV.job] ?? "job",
    rendezvous,
    transport,
    ipcDir,
    host: env[ENV.host] ?? "127.0.0.1",
    pool: env[ENV.pool],
  };
}
