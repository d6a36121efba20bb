// Jobs whose ranks are started over real ssh: two test hosts run Debian's sshd (test/helpers/hosts.ts), the
// launcher's agent is `ssh` with options that log in there, and a third host, isolated, does not answer.
// Skipped (failed under CI=true) where namespaces cannot be made or sshd is not installed.
import { join } from "node:path";
import test from "ava";
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
import { finishes, nothingButSshd, ok } from "../helpers/hosts-job.ts";
import { needs } from "../helpers/needs.ts";
import { fixture, launch, linesOf, rank0, run } from "../helpers/run.ts";
import { shared } from "../helpers/shared.ts";
import { parseReady, READY, running, secretsOf, secretsOnCommandLines } from "../fixtures/hosts-job-check.ts";

const hostsReason = await canMakeHosts();
const withSshd = needs(test.serial, hostsReason ?? (await canStartSshd()));

const JOB = fixture("hosts-job.ts");

/** How long ssh waits for a host to answer; the default agent's value too. */
const CONNECT_TIMEOUT_S = 8;

interface Setup {
  readonly hosts: TestHosts;
  /** Hosts with sshd, and the one that will be isolated (no sshd). */
  readonly a: TestHost;
  readonly b: TestHost;
  readonly c: TestHost;
  readonly sshds: readonly Sshd[];
  /** `--agent` for ssh to A and B: every word quoted for splitCommand, as a user would write it. */
  readonly agent: string;
}

/** Makes the hosts and starts sshd in A and B; if sshd fails, removes the hosts again. */
async function setUp(): Promise<Setup> {
  const hosts = await makeHosts(3);
  try {
    const [a, b, c] = hosts.hosts as [TestHost, TestHost, TestHost];
    const sshds = [await startSshd(hosts, a), await startSshd(hosts, b)] as const;
    const words = ["ssh", ...sshOptionsForAll(sshds), "-o", `ConnectTimeout=${CONNECT_TIMEOUT_S}`];
    return { hosts, a, b, c, sshds, agent: words.map(shellQuote).join(" ") };
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

const TEMP = "wp-ssh-test-";

withSshd(
  "3 ranks over ssh on 2 hosts: each on its host, -x VAR carries the launcher's value, every message arrives",
  async (t) => {
    const s = await setup();
    const go = join(tempFolder(t, TEMP), "go");
    const job = launch(["-H", `${s.a.name}:2,${s.b.name}:1`, "--agent", s.agent, "-x", "WP_TEST_X", JOB, go], {
      WP_TEST_X: "from the launcher",
    });
    const ready = parseReady(await job.lines(READY, 3));
    t.deepEqual(
      ready.map((r) => [r.addresses, r.x]),
      [
        [[s.a.address], "from the launcher"],
        [[s.a.address], "from the launcher"],
        [[s.b.address], "from the launcher"],
      ],
    );
    // The key went over ssh on standard input: not on the ssh client's command line, nor on the remote shell's.
    const secrets = secretsOf(ready[2]?.pid as number);
    t.is(secrets.key.length, 80);
    t.deepEqual(secretsOnCommandLines(secrets), []);
    await finishes(t, job, go, [[s.a.address], [s.a.address], [s.b.address]]);
    await nothingButSshd(t, s.hosts, s.sshds);
  },
);

withSshd("uts --verify over ssh on 2 hosts: exact counts", async (t) => {
  const s = await setup();
  const args = ["--pool", "distributed", "apps/uts", "--tree", "T1XXS", "--verify", "--json"];
  const r = await run(["-H", `${s.a.name}:2,${s.b.name}:2`, "--agent", s.agent, ...args]);
  ok(t, r);
  t.like(JSON.parse(rank0(r.stdout)[0] ?? "null"), { nodes: 16000, leaves: 12839, depth: 6, ranks: 4 });
  t.regex(r.stderr, /\[0\] uts: verified: 16000 nodes, 12839 leaves, depth 6, as the UTS C reference counts T1XXS/);
  await nothingButSshd(t, s.hosts, s.sshds);
});

withSshd("the launcher killed by SIGKILL: the ranks on the ssh hosts go away", async (t) => {
  const s = await setup();
  const never = join(tempFolder(t, TEMP), "never");
  const job = launch(["-H", `${s.a.name}:1,${s.b.name}:1`, "--agent", s.agent, JOB, never]);
  const ready = parseReady(await job.lines(READY, 2));
  t.true(s.hosts.pids(s.b).includes(ready[1]?.pid as number), "rank 1 runs on host B");
  job.child.kill("SIGKILL");
  t.is((await job.result).signal, "SIGKILL");
  await nothingButSshd(t, s.hosts, s.sshds);
  t.deepEqual(running(ready.map((r) => r.pid)), []);
});

withSshd(
  "a host that does not answer ssh: one clear error naming it, soon after ConnectTimeout; nothing left",
  async (t) => {
    const s = await setup();
    const never = join(tempFolder(t, TEMP), "never");
    await s.hosts.isolate(s.c);
    const started = Date.now();
    // A launcher that hung on the host would run until --timeout: status 124 and a message of its own.
    const r = await run(["-H", `${s.a.name}:1,${s.c.name}:1`, "--agent", s.agent, "--timeout", "60", JOB, never]);
    const seconds = (Date.now() - started) / 1000;
    t.log(`the job ended after ${seconds.toFixed(1)} s (ConnectTimeout=${CONNECT_TIMEOUT_S})`);
    t.is(r.code, 255, r.stderr);
    // ssh ends its messages with \r\n, and launcher/exit-summary.ts lastWords then marks the one line as cut: " (...)".
    const summary = `workpool: rank 1 (host ${s.c.name}) failed (exit code 255): ssh: connect to host ${s.c.name} port 22: Connection timed out`;
    t.true([summary, `${summary} (...)`].includes(linesOf(r.stderr).at(-1) ?? ""), r.stderr);
    await nothingButSshd(t, s.hosts, s.sshds);
  },
);
