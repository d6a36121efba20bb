import { basename } from "node:path";
import { constants } from "node:os";
import type { Writable } from "node:stream";
import { ENV, tcpEndpoint } from "../../lib/internal-start.ts";
import type { RankExit, RankLauncher, RankProcess } from "../backend.ts";
import { isLocalHost } from "../hosts.ts";
import { LocalLauncher } from "./local.ts";

/**
 * The POSIX shell a remote rank runs in, called as `sh -c WRAPPER workpool-rank FOLDER APP NODE ARGS...` by the
 * agent on the rank's host. It reads the rank's job description (one JSON line: its WORKPOOL_* variables,
 * the job key among them, and the -x ones) from standard input, so no secret is ever on a command line, and
 * hands it to node as WORKPOOL_BOOT (lib/control/boot.ts). It starts node in the launcher's working folder, in
 * a session of its own, then keeps reading its input: each line is a signal for the rank's process group
 * (TERM, INT, HUP, KILL: how the launcher signals a rank over ssh, which forwards none), and the end of input
 * (the launcher, or its connection to this host, is gone, even by SIGKILL) brings the rank down: SIGTERM,
 * then SIGKILL two seconds later. So whatever the rank is doing, even blocked in a task, it is gone. The
 * wrapper exits with the rank's status (128 + N for signal N). Its `wait` is silenced: the shell would otherwise
 * print its own report of a rank ended by a signal (`Terminated`, `Killed`) as if it were the rank's output.
 */
const WRAPPER = `
IFS= read -r boot || { echo "workpool: host $(hostname): no job description on standard input" >&2; exit 97; }
WORKPOOL_BOOT=$boot
export WORKPOOL_BOOT
cd -- "$1" 2>/dev/null || { echo "workpool: host $(hostname) has no folder $1 (the launcher's working folder; every host needs the same paths)" >&2; exit 98; }
[ -e "$2" ] || { echo "workpool: host $(hostname) has no app $2 (every host needs the app at the same path)" >&2; exit 98; }
shift 2
[ -x "$1" ] || { echo "workpool: host $(hostname) has no node at $1 (every host needs node at the same path)" >&2; exit 127; }
exec 3<&0
setsid "$@" </dev/null &
rank=$!
(
  while IFS= read -r sig <&3; do
    case "$sig" in TERM|INT|HUP|KILL) kill -s "$sig" -- "-$rank" 2>/dev/null ;; esac
  done
  kill -s TERM -- "-$rank" 2>/dev/null && sleep 2 && kill -s KILL -- "-$rank" 2>/dev/null
) >/dev/null 2>&1 &
watch=$!
exec 3<&-
wait "$rank" 2>/dev/null
status=$?
kill "$watch" 2>/dev/null
exit "$status"
`;

/** The default agent: OpenSSH, never asking for a password, giving up on a host that does not answer. */
export const DEFAULT_AGENT = "ssh -o BatchMode=yes -o ConnectTimeout=8";

export interface HostsOptions {
  /** The app's file: it must be at the same path on every host. */
  readonly app: string;
  /** The host of each rank, by rank (hosts.ts placeRanks). */
  readonly placement: readonly string[];
  /** How a rank is started on a host: `AGENT... HOST PROGRAM ARGS...`. */
  readonly agent: readonly string[];
  /** The launcher's address that faces the hosts: its control server and rendezvous listen there. */
  readonly listenHost: string;
}

/**
 * Ranks on several hosts: a rank placed on this machine is a local child process (LocalLauncher); any other
 * is started by the agent (`ssh` by default) as `AGENT HOST /bin/sh -c WRAPPER ...`, the agent process itself a
 * local child in a process group of its own, told to the local reaper. Its output comes back through the
 * agent; its control channel is TCP to `listenHost`.
 *
 * An agent named `ssh` (or `*\/ssh`) joins its arguments into one line for a remote shell, so each argument is
 * quoted for it; any other agent (`ip netns exec`, `docker exec`, a script) gets them as they are.
 */
export class HostsLauncher implements RankLauncher {
  readonly controlAddress: string;
  readonly rendezvousHost: string;
  private readonly local: LocalLauncher;
  private readonly quote: boolean;
  private readonly remoteHosts: readonly (string | undefined)[];

  constructor(
    jobDir: string,
    private readonly opts: HostsOptions,
  ) {
    this.local = new LocalLauncher(jobDir);
    this.controlAddress = tcpEndpoint(opts.listenHost, 0);
    // Which ranks are remote, worked out once (isLocalHost reads the machine's interfaces).
    this.remoteHosts = opts.placement.map((host) => (isLocalHost(host) ? undefined : host));
    this.rendezvousHost = opts.listenHost;
    this.quote = basename(opts.agent[0] ?? "") === "ssh";
  }

  hostOf(rank: number): string | undefined {
    return this.remoteHosts[rank];
  }

  start(rank: number, env: Readonly<Record<string, string>>, argv: readonly string[]): RankProcess {
    const host = this.hostOf(rank);
    if (host === undefined) return this.local.start(rank, env, argv);
    const [agent, ...agentArgs] = this.opts.agent as [string, ...string[]];
    const command = [
      "/bin/sh",
      "-c",
      WRAPPER,
      "workpool-rank",
      process.cwd(),
      this.opts.app,
      process.execPath,
      ...argv,
    ];
    // Only the job's variables (and -x ones) travel: the rank has its host's own environment otherwise. An agent
    // that passes its environment on (not ssh) must not hand the rank the launcher's WORKPOOL_HOST, the launcher's
    // own address: the rank would try to bind it on its host.
    const boot = `${JSON.stringify(env)}\n`;
    const { [ENV.host]: _launcherHost, ...agentEnv } = process.env;
    const started = this.local.spawn(
      agent,
      [...agentArgs, host, ...(this.quote ? command.map(shellQuote) : command)],
      agentEnv,
      boot,
    );
    return remote(started.rank, started.stdin as Writable);
  }

  close(): void {
    this.local.close();
  }
}

/**
 * A remote rank as the job sees it: signals travel as lines on the agent's standard input (the wrapper sends
 * them on to the rank), and a status 128 + N (how the wrapper reports a rank ended by signal N) is reported as that
 * signal, as for a local rank (an app that exits 128 + N itself on a remote host reads the same).
 * After SIGKILL the input is closed too, and if the agent is still there GRACE_MS later (a host gone silent),
 * the agent's own process group is killed: the rank's wrapper then sees its input end and kills the rank.
 */
function remote(rank: RankProcess, stdin: Writable): RankProcess {
  let exited = false;
  const exit = rank.exit.then((e): RankExit => {
    exited = true;
    // The wrapper exits 128 + N when signal N ended the rank (as a shell reports it): the launcher's own, or
    // one from anything else on that host (the OOM killer, a user's kill).
    if (e.signal === null && e.code !== null && e.code > 128 && e.code < 128 + 65) {
      const signal = signalName(e.code - 128);
      if (signal !== undefined) return { code: null, signal, error: e.error };
    }
    return e;
  });
  return {
    stdout: rank.stdout,
    stderr: rank.stderr,
    exit,
    signal: (signal) => {
      if (exited) return;
      const name = signal.replace(/^SIG/, "");
      if (!stdin.destroyed && stdin.writable) stdin.write(`${name}\n`);
      if (signal === "SIGKILL") {
        stdin.end();
        const timer = setTimeout(() => rank.signal("SIGKILL"), GRACE_MS);
        timer.unref();
        void exit.then(() => clearTimeout(timer));
      }
    },
  };
}

const GRACE_MS = 2000;

/** The name of signal number `n`, if it is one. */
function signalName(n: number): NodeJS.Signals | undefined {
  return (Object.keys(constants.signals) as NodeJS.Signals[]).find((name) => constants.signals[name] === n);
}

/** `word` quoted for a POSIX shell. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}
