// Surviving worker deaths across hosts (issue 17): a centralized pool with `retries` whose ranks are started over
// real ssh on three test hosts (test/helpers/hosts.ts), A with the coordinator, B and C with workers only. One
// worker SIGKILLed, a host that crashes (every process on it killed at once: its ssh connections close) and a
// host unplugged (its frames dropped: only the heartbeat finds it) must each end 0 with the exact count and one
// launcher line per dead rank, naming its host. Skipped (failed under CI=true) where namespaces cannot be made
// or sshd is not installed.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { shellQuote } from "../../launcher/backends/hosts.ts";
import { tempFolder } from "../helpers/folders.ts";
import {
  canMakeHosts,
  canStartSshd,
  makeHosts,
  type Sshd,
  sshOptionsForAll,
  startSshd,
  type TestHost,
  type TestHosts,
} from "../helpers/hosts.ts";
import { nothingButSshd } from "../helpers/hosts-job.ts";
import { needs } from "../helpers/needs.ts";
import { exitsWithin, until } from "../helpers/pids.ts";
import { runProgram } from "../helpers/program.ts";
import { fixture, launch, linesOf, rank0, run, type Running } from "../helpers/run.ts";
import { shared } from "../helpers/shared.ts";

const hostsReason = await canMakeHosts();
const withSshd = needs(test.serial, hostsReason ?? (await canStartSshd()));

const SURVIVE = fixture("pool-survive.ts");
const CUT = fixture("hosts-survive.ts");

/** How long ssh waits for a host to answer. */
const CONNECT_TIMEOUT_S = 8;
/** `--timeout` of every job: a job that hangs ends with its output before ava's 120 s. */
const JOB_TIMEOUT_S = 90;
/** `--heartbeat` where only the heartbeat can find a lost host. */
const HEARTBEAT_S = 2;

interface Setup {
  readonly hosts: TestHosts;
  readonly a: TestHost;
  readonly b: TestHost;
  readonly c: TestHost;
  readonly sshds: readonly Sshd[];
  /** `-H A:2,B:2,C:2 --agent <ssh to all three>`: ranks 0 and 1 on A, 2 and 3 on B, 4 and 5 on C. */
  readonly sixRanks: readonly string[];
  /** Each rank's host, by rank. */
  readonly placement: readonly TestHost[];
}

/** Makes the hosts and starts sshd in each; if sshd fails, removes the hosts again. */
async function setUp(): Promise<Setup> {
  const hosts = await makeHosts(3);
  try {
    const [a, b, c] = hosts.hosts as [TestHost, TestHost, TestHost];
    const sshds = [await startSshd(hosts, a), await startSshd(hosts, b), await startSshd(hosts, c)];
    const words = ["ssh", ...sshOptionsForAll(sshds), "-o", `ConnectTimeout=${CONNECT_TIMEOUT_S}`];
    const sixRanks = ["-H", `${a.name}:2,${b.name}:2,${c.name}:2`, "--agent", words.map(shellQuote).join(" ")];
    return { hosts, a, b, c, sshds, sixRanks, placement: [a, a, b, b, c, c] };
  } catch (e) {
    await hosts.remove();
    throw e;
  }
}

/** The hosts and sshds this file's tests share, made by the first test that asks. */
const setup = shared(test, setUp, async (s) => {
  for (const sshd of s.sshds) await sshd.stop();
  await s.hosts.remove();
});

/** The sshd of `host`. */
function sshdOf(s: Setup, host: TestHost): Sshd {
  const sshd = s.sshds.find((d) => d.host === host);
  if (sshd === undefined) throw new Error(`no sshd on ${host.name}`);
  return sshd;
}

/** Processes on `host` other than its sshd: the job's sessions, wrappers and ranks. */
function jobProcesses(s: Setup, host: TestHost): number[] {
  const sshd = sshdOf(s, host).pid;
  return s.hosts.pids(host).filter((p) => p !== sshd);
}

/** Sends `signal` to each of `pids` that is still there. */
function signalAll(pids: readonly number[], signal: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      /* gone meanwhile */
    }
  }
}

/**
 * Crashes `host`: every process on it but its sshd's listener is stopped, so none can react to another's end
 * (a rank's wrapper cannot send its status through sshd), then killed. The kernel closes their sockets, so the
 * launcher's ssh connections to the host end at once without a status: ssh exits 255.
 */
function crash(s: Setup, host: TestHost): void {
  const pids = jobProcesses(s, host);
  signalAll(pids, "SIGSTOP");
  signalAll(pids, "SIGKILL");
}

/** Matches a launcher line about a survived death (with the rank's host: every rank here is remote). */
const DEATH = /^workpool: rank (\d+) \(host (\S+)\) died \((.*?)\); the job goes on without it(.*)$/;

/** The launcher's lines about survived deaths, as `[rank, host, why, what was re-dealt]`. */
function deathsOf(stderr: string): [number, string, string, string][] {
  return linesOf(stderr)
    .map((l) => DEATH.exec(l))
    .filter((m) => m !== null)
    .map((m) => [Number(m[1]), m[2] as string, m[3] as string, m[4] as string]);
}

/** Rank 0's `result {...}` line of a job, parsed; undefined if it printed none. */
function resultOf(stdout: string): Record<string, number> | undefined {
  const line = rank0(stdout).find((l) => l.startsWith("result "));
  return line === undefined ? undefined : (JSON.parse(line.slice("result ".length)) as Record<string, number>);
}

/** When each of the job's launcher lines about a survived death arrived on its stderr (ms since the epoch). */
function deathTimes(job: Running): number[] {
  const times: number[] = [];
  let partial = "";
  job.child.stderr?.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    for (const line of parts) if (DEATH.test(line)) times.push(Date.now());
  });
  return times;
}

/** A `[r] running {"rank","pid"}` line of hosts-survive.ts: a worker holds a task in flight. */
const RUNNING = /^\[\d+\] running \{/;

function parseRunning(lines: readonly string[]): { rank: number; pid: number }[] {
  return lines
    .map((l) => JSON.parse(l.slice(l.indexOf("{"))) as { rank: number; pid: number })
    .sort((x, y) => x.rank - y.rank);
}

const TEMP = "wp-survive-test-";

// pool-survive.ts kill SEED: worker 1 + SEED % 5 SIGKILLs itself after a number of its tasks drawn from SEED.
for (const [seed, victim] of [
  [1, 2],
  [3, 4],
] as const) {
  withSshd(
    `seed ${seed}: worker ${victim} SIGKILLed on its host, of 6 ranks on 3 hosts over ssh; the result is exact`,
    async (t) => {
      const s = await setup();
      const args = [...s.sixRanks, "--timeout", String(JOB_TIMEOUT_S), SURVIVE, "kill", String(seed), "3"];
      const r = await run(args);
      t.is(r.code, 0, r.stderr);
      const result = resultOf(r.stdout);
      t.truthy(result, r.stdout);
      t.is(result?.result, result?.expected, JSON.stringify(result));
      t.is(result?.lost, 1);
      const host = s.placement[victim]?.name;
      t.deepEqual(
        deathsOf(r.stderr).map(([rank, on, why]) => [rank, on, why]),
        [[victim, host, "killed by SIGKILL"]],
        r.stderr,
      );
      t.regex(deathsOf(r.stderr)[0]?.[3] ?? "", /^: pool\d+ re-dealt \d+ tasks?$/);
      t.is(linesOf(r.stdout).filter((l) => l.endsWith(" survived")).length, 5, r.stdout);
      await nothingButSshd(t, s.hosts, s.sshds);
    },
  );
}

/**
 * Starts hosts-survive.ts on the six ranks (with `extra` launcher options), waits until every worker holds a
 * task in flight, checks that ranks 4 and 5 run on host C, and returns the job, its go file and its death times.
 */
async function started(t: ExecutionContext, s: Setup, extra: readonly string[]) {
  const go = join(tempFolder(t, TEMP), "go");
  const job = launch([...s.sixRanks, "--timeout", String(JOB_TIMEOUT_S), ...extra, CUT, go, "3"]);
  const times = deathTimes(job);
  const running = parseRunning(await job.lines(RUNNING, 5));
  t.deepEqual(
    running.map((r) => r.rank),
    [1, 2, 3, 4, 5],
    "every worker holds a task",
  );
  const onC = jobProcesses(s, s.c);
  t.true(
    running.filter((r) => r.rank >= 4).every((r) => onC.includes(r.pid)),
    "ranks 4 and 5 run on host C",
  );
  return { job, go, times };
}

/** Checks that the job ended 0 with the exact count, and that it said ranks 4 and 5 (on C) died, `why`. */
function survivedC(t: ExecutionContext, s: Setup, stdout: string, stderr: string, why: RegExp): void {
  const result = resultOf(stdout);
  t.truthy(result, stdout);
  t.is(result?.result, result?.expected, JSON.stringify(result));
  t.is(result?.lost, 2, JSON.stringify(result));
  const deaths = deathsOf(stderr);
  t.deepEqual(
    deaths.map(([rank, host]) => [rank, host]).sort(),
    [
      [4, s.c.name],
      [5, s.c.name],
    ],
    stderr,
  );
  for (const [, , reason, redealt] of deaths) {
    t.regex(reason, why);
    t.regex(redealt, /^: pool\d+ re-dealt \d+ tasks?$/);
  }
}

withSshd(
  "host C crashes mid-run (every process on it killed at once): its 2 ranks are reported dead, the result is exact",
  async (t) => {
    const s = await setup();
    const { job, go, times } = await started(t, s, []);
    const cut = Date.now();
    crash(s, s.c);
    writeFileSync(go, "");
    const r = await job.result;
    const ended = Date.now();
    t.is(r.code, 0, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
    survivedC(t, s, r.stdout, r.stderr, /^exit code 255$/);
    t.log(
      `deaths reported ${times.map((at) => `${at - cut} ms`).join(", ")} after the crash; ` +
        `the job ended ${ended - cut} ms after it`,
    );
    await nothingButSshd(t, s.hosts, s.sshds);
  },
);

withSshd(
  `host C unplugged mid-run: --heartbeat ${HEARTBEAT_S} finds its 2 ranks, reported dead; the result is exact`,
  async (t) => {
    const s = await setup();
    const { job, go, times } = await started(t, s, ["--heartbeat", String(HEARTBEAT_S)]);
    t.teardown(() => job.child.kill("SIGKILL")); // if the launcher hangs (a no-op once it has exited)
    const cut = Date.now();
    await s.hosts.isolate(s.c);
    writeFileSync(go, "");
    try {
      await job.lines(/^\[0\] result /, 1);
      t.log(
        `deaths reported ${times.map((at) => `${at - cut} ms`).join(", ")} after the unplugging; ` +
          `rank 0's result ${Date.now() - cut} ms after it`,
      );
      // Once the ranks on A and B have ended, nothing is left for the launcher to wait for: it must exit.
      t.true(await until(() => [s.a, s.b].every((h) => jobProcesses(s, h).length === 0)), "the ranks on A and B end");
      if (!(await exitsWithin(job.child))) {
        const sockets = await runProgram(["ss", "-Htnp", "state", "established"]);
        const launcher = linesOf(sockets.stdout).filter((l) => l.includes(`pid=${job.pid},`));
        const why = "the ranks on A and B have ended and those on C are counted dead, but the launcher has not exited";
        t.fail(`${why}; its connections:\n${launcher.join("\n")}`);
        job.child.kill("SIGKILL");
      }
      const r = await job.result;
      const ended = Date.now();
      t.is(r.code, 0, `stdout:\n${r.stdout}\nstderr:\n${r.stderr}`);
      survivedC(t, s, r.stdout, r.stderr, new RegExp(`^sent no heartbeat for ${HEARTBEAT_S} s$`));
      t.log(`the job ended ${ended - cut} ms after the unplugging`);
    } finally {
      // What ran on C is cut off from everything, as on a host that lost its network: the host is "rebooted".
      signalAll(jobProcesses(s, s.c), "SIGKILL");
      await s.hosts.unisolate(s.c);
    }
    await nothingButSshd(t, s.hosts, s.sshds);
  },
);
