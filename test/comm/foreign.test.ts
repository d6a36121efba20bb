/**
 * Running under mpirun or srun, in this process (lib/comm/foreign.ts, lib/comm/nodelist.ts): which launcher's
 * variables give the rank, size and job id, and what a malformed one says; Slurm's host lists against
 * `scontrol show hostnames`; the Slurm rendezvous port; where the ranks meet; and the rendezvous file, written by
 * rank 0 and read by several ranks, or never written. The launchers themselves run in test/multihost/.
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:net";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { meetForeignJob, reachableAddress } from "../../lib/comm/foreign.ts";
import { detectForeignLaunch, type ForeignLaunch } from "../../lib/comm/foreign-launch.ts";
import { writeMeetingFile } from "../../lib/comm/meeting-file.ts";
import {
  meetingFileName,
  planMeeting,
  SLURM_PORT_BASE,
  SLURM_PORT_SPAN,
  slurmRendezvousPort,
} from "../../lib/comm/meeting-plan.ts";
import { formatJobKey, makeJobKey } from "../../lib/comm/job-key.ts";
import { expandNodelist } from "../../lib/comm/nodelist.ts";
import { joinRendezvous } from "../../lib/comm/rendezvous.ts";
import { connect } from "../../lib/world.ts";
import { BootstrapError } from "../../lib/errors.ts";
import { findProgram } from "../helpers/mpi.ts";

const KEY = makeJobKey();

/** A fresh folder, removed after the test. */
function tempFolder(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), "wp-foreign-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What mpirun -n `size` on this host sets for `rank` (as measured with Open MPI 4.1.4), plus `extra`. */
function mpirunEnv(rank: number, size: number, job: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    OMPI_COMM_WORLD_RANK: String(rank),
    OMPI_COMM_WORLD_SIZE: String(size),
    OMPI_COMM_WORLD_LOCAL_SIZE: String(size),
    OMPI_MCA_ess_base_jobid: "1064304641",
    PMIX_NAMESPACE: job,
    ...extra,
  };
}

/** What srun -n `size` sets for task `rank` of job 12 step 0 on `nodes` (a compressed list of `count` nodes). */
function srunEnv(rank: number, size: number, nodes = "vm", count = 1, extra: NodeJS.ProcessEnv = {}) {
  return {
    SLURM_PROCID: String(rank),
    SLURM_NTASKS: String(size),
    SLURM_STEP_NUM_TASKS: String(size),
    SLURM_JOB_ID: "12",
    SLURM_STEP_ID: "0",
    SLURM_STEP_NODELIST: nodes,
    SLURM_STEP_NUM_NODES: String(count),
    ...extra,
  };
}

/** detectForeignLaunch(env), which must find a launcher. */
function launchOf(env: NodeJS.ProcessEnv): ForeignLaunch {
  const launch = detectForeignLaunch(env);
  if (!launch) throw new Error(`no launcher detected in ${JSON.stringify(env)}`);
  return launch;
}

// --- detection ----------------------------------------------------------------------------------------------

test("no launcher's variables, or WORKPOOL_SIZE set by `workpool launch`: no foreign launcher", (t) => {
  t.is(detectForeignLaunch({}), undefined);
  t.is(detectForeignLaunch({ ...mpirunEnv(0, 2, "j"), WORKPOOL_SIZE: "2" }), undefined);
});

test("the rank and size come from Open MPI's variables, else PMI's, else Slurm's", (t) => {
  const all = { ...srunEnv(3, 8), PMI_RANK: "2", PMI_SIZE: "6", OMPI_COMM_WORLD_RANK: "1", OMPI_COMM_WORLD_SIZE: "4" };
  t.like(launchOf(all), { launcher: "Open MPI", rank: 1, size: 4 });
  const { OMPI_COMM_WORLD_RANK: _r, OMPI_COMM_WORLD_SIZE: _s, ...noOpenMpi } = all;
  t.like(launchOf(noOpenMpi), { launcher: "PMI", rank: 2, size: 6 });
  const { PMI_RANK: _pr, PMI_SIZE: _ps, ...slurmOnly } = noOpenMpi;
  t.like(launchOf(slurmOnly), { launcher: "Slurm", rank: 3, size: 8 });
});

test("Slurm's variables count in a job step only: a batch script's shell is no task (a world of one)", (t) => {
  // As sbatch -n 3 sets them for the batch script (measured with Slurm 22.05): no SLURM_STEP_ID.
  const batch = { SLURM_JOB_ID: "1", SLURM_PROCID: "0", SLURM_NTASKS: "3", SLURM_NODELIST: "vm", SLURM_LOCALID: "0" };
  t.is(detectForeignLaunch(batch), undefined);
});

test("the job id: PMIX_NAMESPACE, else OMPI_MCA_ess_base_jobid, else PMI_JOBID, else SLURM_JOB_ID.SLURM_STEP_ID", (t) => {
  const env: NodeJS.ProcessEnv = {
    ...srunEnv(0, 2),
    PMIX_NAMESPACE: "ns",
    OMPI_MCA_ess_base_jobid: "42",
    PMI_JOBID: "12.0.pmi",
  };
  const jobs: (string | undefined)[] = [];
  for (const name of ["PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "PMI_JOBID", "SLURM_STEP_ID"]) {
    jobs.push(launchOf(env).job);
    delete env[name];
  }
  t.deepEqual(jobs, ["ns", "42", "12.0.pmi", "12.0"]);
  t.is(launchOf({ PMI_RANK: "0", PMI_SIZE: "2" }).job, undefined);
});

test("every rank on this host: OMPI_COMM_WORLD_LOCAL_SIZE equal to the size, or SLURM_STEP_NUM_NODES 1", (t) => {
  t.true(launchOf(mpirunEnv(0, 4, "j")).local);
  t.false(launchOf(mpirunEnv(0, 4, "j", { OMPI_COMM_WORLD_LOCAL_SIZE: "2" })).local);
  t.false(launchOf({ OMPI_COMM_WORLD_RANK: "0", OMPI_COMM_WORLD_SIZE: "4" }).local);
  t.true(launchOf(srunEnv(0, 4)).local);
  t.false(launchOf(srunEnv(0, 4, "n[1-2]", 2)).local);
  t.like(launchOf(srunEnv(0, 4, "n[1-2]", 2, { SLURMD_NODENAME: "n1" })).step, {
    jobId: 12,
    stepId: 0,
    nodelist: "n[1-2]",
    node: "n1",
  });
});

test("a launch of size 1 is a world of one, as without a launcher", async (t) => {
  const saved = { ...process.env };
  Object.assign(process.env, mpirunEnv(0, 1, `solo-${randomUUID()}`));
  try {
    t.like(launchOf(process.env), { rank: 0, size: 1 });
    const world = await connect();
    t.is(world.size, 1);
    t.is(world.env.rendezvous, undefined);
    await world.close();
  } finally {
    for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name];
  }
});

for (const [title, env, message] of [
  [
    "a size that is no number",
    { OMPI_COMM_WORLD_RANK: "0", OMPI_COMM_WORLD_SIZE: "four" },
    'environment variable OMPI_COMM_WORLD_SIZE must be an integer in 1..1048576; got "four"',
  ],
  [
    "a rank not below the size",
    { OMPI_COMM_WORLD_RANK: "4", OMPI_COMM_WORLD_SIZE: "4" },
    'environment variable OMPI_COMM_WORLD_RANK must be an integer in 0..3; got "4"',
  ],
  [
    "a rank without a size",
    { OMPI_COMM_WORLD_RANK: "1" },
    "environment variable OMPI_COMM_WORLD_SIZE must be an integer in 1..1048576; got nothing (unset)",
  ],
  [
    "an empty rank",
    { PMI_RANK: "", PMI_SIZE: "2" },
    'environment variable PMI_RANK must be an integer in 0..1; got ""',
  ],
  ["a negative rank", srunEnv(-1, 2), 'environment variable SLURM_PROCID must be an integer in 0..1; got "-1"'],
  [
    "a step id that is no number",
    srunEnv(0, 2, "vm", 1, { SLURM_STEP_ID: "batch" }),
    'environment variable SLURM_STEP_ID must be an integer in 0..4294967295; got "batch"',
  ],
  [
    "a local size that is no number",
    mpirunEnv(0, 2, "j", { OMPI_COMM_WORLD_LOCAL_SIZE: "2.5" }),
    'environment variable OMPI_COMM_WORLD_LOCAL_SIZE must be an integer in 1..1048576; got "2.5"',
  ],
  [
    "a node count of 0",
    srunEnv(0, 2, "vm", 0),
    'environment variable SLURM_STEP_NUM_NODES must be an integer in 1..1048576; got "0"',
  ],
] as const) {
  test(`detection: ${title} is a BootstrapError naming the variable`, (t) => {
    const e = t.throws(() => detectForeignLaunch(env), { instanceOf: BootstrapError });
    t.is(e?.message, message);
  });
}

// --- Slurm host lists ---------------------------------------------------------------------------------------

/** Lists and their expansions as `scontrol show hostnames` prints them (Slurm 22.05; suffixes: 23.02.5+). */
const HOST_LISTS: readonly (readonly [string, string])[] = [
  ["node[01-03,07],gpu5", "node01 node02 node03 node07 gpu5"],
  ["n[001-010]", "n001 n002 n003 n004 n005 n006 n007 n008 n009 n010"],
  ["a[1-2,5]", "a1 a2 a5"],
  ["r[1-2]n[1-2]", "r1n1 r1n2 r2n1 r2n2"],
  ["x[8-11]", "x8 x9 x10 x11"],
  ["a[01-3]", "a01 a02 a03"],
  ["a[1-02]", "a1 a2"],
  ["n[1,3-4,2],n[3]", "n1 n3 n4 n2 n3"],
  ["r[1-2]-n[1-2]", "r1-n1 r1-n2 r2-n1 r2-n2"],
  ["c0-0c[0-1]s[0-1]n[0-1]", "c0-0c0s0n0 c0-0c0s0n1 c0-0c1s0n0 c0-0c1s0n1 c0-0c0s1n0 c0-0c0s1n1 c0-0c1s1n0 c0-0c1s1n1"],
  ["a,,b c\tnode1-ib,[1-2],n[7-]", "a b c node1-ib 1 2 n7"],
  ["n[98-102],m[7],k", "n98 n99 n100 n101 n102 m7 k"],
];
/** With a suffix after the last bracket, which Slurm 23.02.5 and later expand (22.05 rejects them). */
const SUFFIXED: readonly (readonly [string, string])[] = [
  ["n[1-2]-ib", "n1-ib n2-ib"],
  ["rack[1-2]n[1-2].ib,x", "rack1n1.ib rack1n2.ib rack2n1.ib rack2n2.ib x"],
];

test("Slurm host lists expand as scontrol show hostnames prints them", (t) => {
  for (const [list, hosts] of [...HOST_LISTS, ...SUFFIXED]) t.is(expandNodelist(list).join(" "), hosts, list);
});

test("a malformed host list is a BootstrapError naming the variable and the item", (t) => {
  for (const [list, what] of [
    ["n[1-2", '"n[1-2" has a [ without ]'],
    ["ok,n[a-b]", '"n[a-b]" has "a-b" in brackets: expected N or LO-HI, non-negative whole numbers'],
    ["n[5-3]", '"n[5-3]" has "5-3" in brackets: HI is below LO'],
    ["n[]", '"n[]" has "" in brackets'],
    ["n[0x1]", '"n[0x1]" has "0x1" in brackets'],
    ["n[0-70000]", '"n[0-70000]" has "0-70000" in brackets: more than 65536 hosts'],
  ]) {
    const e = t.throws(() => expandNodelist(list as string, "environment variable SLURM_STEP_NODELIST"), {
      instanceOf: BootstrapError,
    });
    t.true(e?.message.startsWith("environment variable SLURM_STEP_NODELIST must be a Slurm host list"), e?.message);
    t.true(e?.message.includes(what as string), e?.message);
  }
});

const scontrol = findProgram("scontrol");
const scontrolTest =
  scontrol !== undefined
    ? test
    : process.env.CI === "true"
      ? (title: string) => test(title, (t) => t.fail("CI=true and scontrol is not installed: .ci/run installs it"))
      : (title: string) => test.skip(`${title} (skipped: scontrol is not installed)`, () => {});

scontrolTest("the expansions agree with this machine's scontrol show hostnames", (t) => {
  // scontrol reads a configuration before it does anything; two lines are enough for `show hostnames`.
  const dir = tempFolder(t);
  writeFileSync(join(dir, "slurm.conf"), "ClusterName=hostlists\nSlurmctldHost=localhost\n");
  for (const [list] of HOST_LISTS) {
    const r = spawnSync(scontrol as string, ["show", "hostnames", list], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, SLURM_CONF: join(dir, "slurm.conf") },
    });
    t.is(r.status, 0, r.stderr);
    t.is(expandNodelist(list).join(" "), r.stdout.trim().split("\n").join(" "), list);
  }
});

// --- the Slurm port ------------------------------------------------------------------------------------------

test("the Slurm rendezvous port is 20000 + (job * 31 + step) mod 20000, distinct for nearby jobs and steps", (t) => {
  t.is(slurmRendezvousPort(12, 0), 20372);
  t.is(slurmRendezvousPort(12, 1), 20373);
  t.is(slurmRendezvousPort(13, 0), 20403);
  t.is(slurmRendezvousPort(4_294_967_295, 30), SLURM_PORT_BASE + ((4_294_967_295 * 31 + 30) % SLURM_PORT_SPAN));
  const ports = new Set<number>();
  for (let job = 123_456; job < 123_456 + 645; job++)
    for (let step = 0; step < 31; step++) ports.add(slurmRendezvousPort(job, step));
  t.is(ports.size, 645 * 31);
  t.true([...ports].every((p) => p >= 20_000 && p <= 39_999));
});

// --- where the ranks meet -------------------------------------------------------------------------------------

test("with WORKPOOL_KEY and WORKPOOL_RENDEZVOUS: rank 0 serves at that address, the others connect there", (t) => {
  const env = mpirunEnv(1, 4, "j", { WORKPOOL_KEY: formatJobKey(KEY), WORKPOOL_RENDEZVOUS: "tcp://10.1.2.3:5555" });
  t.like(planMeeting(launchOf(env), env), {
    way: "address",
    connect: "tcp://10.1.2.3:5555",
    serve: { host: "10.1.2.3", port: 5555 },
    key: KEY,
  });
});

test("with WORKPOOL_KEY in a Slurm step: the step's first host at the derived port, 127.0.0.1 on one node", (t) => {
  const key = { WORKPOOL_KEY: formatJobKey(KEY) };
  const one = srunEnv(1, 4, "vm", 1, key);
  t.like(planMeeting(launchOf(one), one), {
    way: "address",
    connect: "tcp://127.0.0.1:20372",
    serve: { host: "127.0.0.1", port: 20372 },
  });
  const many = srunEnv(0, 4, "node[07-09],gpu1", 4, { ...key, SLURMD_NODENAME: "node07" });
  t.like(planMeeting(launchOf(many), many), {
    way: "address",
    connect: "tcp://node07:20372",
    serve: { host: undefined, port: 20372 },
  });
  // Rank 0 elsewhere than the first host: the others would look for it in vain.
  const elsewhere = { ...many, SLURMD_NODENAME: "gpu1" };
  const e = t.throws(() => planMeeting(launchOf(elsewhere), elsewhere), { instanceOf: BootstrapError });
  t.is(
    e?.message,
    "rank 0 runs on gpu1, not on node07, the first host of SLURM_STEP_NODELIST, where the other ranks look for " +
      "the rendezvous; set WORKPOOL_RENDEZVOUS=tcp://gpu1:20372",
  );
});

test("without WORKPOOL_KEY: a file named from the job id, in this user's private temporary folder when every rank is here", (t) => {
  const cwd = "/work/some/where";
  const local = mpirunEnv(1, 4, "1064304641");
  t.like(planMeeting(launchOf(local), local, cwd), {
    way: "file",
    file: join(tmpdir(), `workpool-${process.getuid?.()}`, ".workpool-1064304641.rendezvous"),
    key: undefined,
    why: "",
  });
  const spread = mpirunEnv(1, 4, "1064304641", { OMPI_COMM_WORLD_LOCAL_SIZE: "2" });
  t.like(planMeeting(launchOf(spread), spread, cwd), { file: join(cwd, ".workpool-1064304641.rendezvous") });
  const chosen = { ...spread, WORKPOOL_RENDEZVOUS_DIR: "shared/jobs" };
  t.like(planMeeting(launchOf(chosen), chosen, cwd), {
    file: join(cwd, "shared/jobs/.workpool-1064304641.rendezvous"),
  });
  // A Slurm step or WORKPOOL_RENDEZVOUS without a key: the file carries rank 0's key, and the error says so.
  const slurm = srunEnv(1, 4, "n[1-2]", 2);
  const plan = planMeeting(launchOf(slurm), slurm, cwd);
  t.like(plan, { way: "file", file: join(cwd, ".workpool-12.0.rendezvous"), serve: { host: undefined, port: "*" } });
  t.true(
    plan.way === "file" && plan.why.includes("without WORKPOOL_KEY the ranks share the job's key through this file"),
  );
  const given = { ...spread, WORKPOOL_RENDEZVOUS: "tcp://10.1.2.3:5555" };
  const viaFile = planMeeting(launchOf(given), given, cwd);
  t.like(viaFile, { way: "file", serve: { host: "10.1.2.3", port: 5555 } });
  t.regex(viaFile.way === "file" ? viaFile.why : "", /to meet at tcp:\/\/10\.1\.2\.3:5555 without one\)$/);
});

test("the file's name keeps two job ids apart, however they are written", (t) => {
  t.is(meetingFileName("12.0"), ".workpool-12.0.rendezvous");
  t.is(meetingFileName("slurm.pmix.12.0"), ".workpool-slurm.pmix.12.0.rendezvous");
  const odd = ["a/b", "a_b", "a b", "x".repeat(200), `${"x".repeat(200)}y`];
  const names = odd.map(meetingFileName);
  t.is(new Set(names).size, odd.length);
  t.true(
    names.every((n) => /^\.workpool-[A-Za-z0-9._-]{1,80}\.rendezvous$/.test(n)),
    names.join(" "),
  );
});

test("meeting: a missing job id or a malformed WORKPOOL_RENDEZVOUS or WORKPOOL_KEY is a BootstrapError", (t) => {
  const noJob = { PMI_RANK: "1", PMI_SIZE: "2" };
  t.regex(
    t.throws(() => planMeeting(launchOf(noJob), noJob), { instanceOf: BootstrapError })?.message ?? "",
    /^cannot name the rendezvous file, which keeps two jobs apart: none of PMIX_NAMESPACE, .* is set; set WORKPOOL_KEY and WORKPOOL_RENDEZVOUS/,
  );
  for (const bad of ["tcp://*:5555", "tcp://host", "ipc:///tmp/x", "tcp://host:70000"]) {
    const env = mpirunEnv(0, 2, "j", { WORKPOOL_RENDEZVOUS: bad });
    const e = t.throws(() => planMeeting(launchOf(env), env), { instanceOf: BootstrapError });
    t.is(
      e?.message,
      "environment variable WORKPOOL_RENDEZVOUS must be tcp://HOST:PORT, HOST a name or IPv4 address of rank 0's " +
        `host and PORT in 1..65535; got ${JSON.stringify(bad)}`,
    );
  }
  const badKey = mpirunEnv(0, 2, "j", { WORKPOOL_KEY: "short" });
  t.throws(() => planMeeting(launchOf(badKey), badKey), {
    instanceOf: BootstrapError,
    message: /^environment variable WORKPOOL_KEY must be a job key/,
  });
});

// --- the rendezvous file ------------------------------------------------------------------------------------

/** The environments of ranks 0..size-1 of an mpirun job on this host meeting through a file in `dir`. */
function fileJob(size: number, dir: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv[] {
  const job = `test-${randomUUID()}`;
  return [...Array(size).keys()].map((rank) => mpirunEnv(rank, size, job, { WORKPOOL_RENDEZVOUS_DIR: dir, ...extra }));
}

test("the file way: rank 0 serves and writes a 0600 file, three ranks read it, all join, rank 0 removes it", async (t) => {
  const dir = tempFolder(t);
  const envs = fileJob(4, dir);
  // The others start waiting first, as when rank 0 is the last to start.
  const others = envs.slice(1).map((env) => meetForeignJob(launchOf(env), env));
  const rank0 = await meetForeignJob(launchOf(envs[0] as NodeJS.ProcessEnv), envs[0]);
  const file = join(dir, meetingFileName(rank0.env.job));
  t.is(statSync(file).mode & 0o777, 0o600);
  const meetings = [rank0, ...(await Promise.all(others))];
  t.regex(rank0.env.rendezvous ?? "", /^tcp:\/\/127\.0\.0\.1:\d+$/);
  for (const [rank, m] of meetings.entries()) {
    t.like(m.env, { rank, size: 4, job: rank0.env.job, rendezvous: rank0.env.rendezvous, transport: "tcp" });
    t.deepEqual(m.env.key, rank0.env.key);
  }
  const endpoints = meetings.map((_, rank) => `tcp://127.0.0.1:${40_000 + rank}`);
  const tables = await Promise.all(
    meetings.map((m, rank) =>
      joinRendezvous(
        m.env.rendezvous as string,
        m.env.key ?? KEY,
        {
          rank,
          endpoint: endpoints[rank] as string,
          pid: process.pid,
          host: hostname(),
        },
        5000,
      ),
    ),
  );
  t.deepEqual(tables, [endpoints, endpoints, endpoints, endpoints]);
  await rank0.done;
  t.deepEqual(readdirSync(dir), [], "the file (and no temporary one) is gone");
});

test("the file way with WORKPOOL_KEY: the file holds no key, and each rank keeps its own", async (t) => {
  const dir = tempFolder(t);
  const mine = makeJobKey();
  const envs = fileJob(2, dir, { WORKPOOL_KEY: formatJobKey(KEY) });
  const other = { ...(envs[1] as NodeJS.ProcessEnv), WORKPOOL_KEY: formatJobKey(mine) };
  const waiting = meetForeignJob(launchOf(other), other);
  const rank0 = await meetForeignJob(launchOf(envs[0] as NodeJS.ProcessEnv), envs[0]);
  const file = join(dir, meetingFileName(rank0.env.job));
  t.false(readFileSync(file, "utf8").includes(formatJobKey(KEY)), "the shared key is written nowhere");
  t.deepEqual(rank0.env.key, KEY);
  // A rank given another key keeps it: it cannot join rank 0's job (the rendezvous refuses its handshake).
  t.deepEqual((await waiting).env.key, mine);
  rank0.abandon();
});

test("ranks on several hosts: rank 0 serves on an address other hosts reach, and the ranks join there", async (t) => {
  const dir = tempFolder(t);
  // One rank on each of two hosts, as far as the launcher says: rank 0 must not serve on loopback.
  const [env0, env1] = fileJob(2, dir, { OMPI_COMM_WORLD_LOCAL_SIZE: "1" }) as [NodeJS.ProcessEnv, NodeJS.ProcessEnv];
  const waiting = meetForeignJob(launchOf(env1), env1);
  const rank0 = await meetForeignJob(launchOf(env0), env0);
  const rank1 = await waiting;
  const host = /^tcp:\/\/([\d.]+):\d+$/.exec(rank0.env.rendezvous ?? "")?.[1];
  t.is(host, await reachableAddress());
  t.false(host?.startsWith("127."), host);
  t.is(rank1.env.rendezvous, rank0.env.rendezvous);
  const tables = await Promise.all(
    [rank0, rank1].map((m, rank) =>
      joinRendezvous(
        m.env.rendezvous as string,
        m.env.key ?? KEY,
        {
          rank,
          endpoint: `tcp://${host}:${40_000 + rank}`,
          pid: process.pid,
          host: hostname(),
        },
        5000,
      ),
    ),
  );
  t.deepEqual(tables[0], tables[1]);
  await rank0.done;
});

test("a rank whose rendezvous file never comes fails fast, naming the file and the folder", async (t) => {
  const dir = tempFolder(t);
  const [, env] = fileJob(2, dir, { WORKPOOL_CONNECT_TIMEOUT_MS: "200" });
  const launch = launchOf(env as NodeJS.ProcessEnv);
  const e = await t.throwsAsync(meetForeignJob(launch, env), { instanceOf: BootstrapError });
  t.true(
    e?.message.startsWith(
      `rank 1: the rendezvous file ${meetingFileName(launch.job as string)} did not appear in ${dir} within 200 ms ` +
        "(WORKPOOL_CONNECT_TIMEOUT_MS): rank 0 writes it there once it starts, so every rank must see that folder",
    ),
    e?.message,
  );
});

test("a rank whose rendezvous folder does not exist fails at once, naming it", async (t) => {
  const dir = join(tempFolder(t), "missing");
  const [, env] = fileJob(2, dir);
  const e = await t.throwsAsync(meetForeignJob(launchOf(env as NodeJS.ProcessEnv), env), {
    instanceOf: BootstrapError,
  });
  t.is(e?.message, `rank 1: the folder ${dir} of the rendezvous file does not exist (WORKPOOL_RENDEZVOUS_DIR)`);
});

for (const [what, plant] of [
  ["a link", (file: string) => symlinkSync(file + ".real", file)],
  ["readable by others", (file: string) => chmodSync(file, 0o644)],
  ...(process.getuid?.() === 0 ? [["another user's", (file: string) => chownSync(file, 65534, 65534)] as const] : []),
] as const) {
  test(`a planted rendezvous file (${what}) is never used: the rank fails naming it`, async (t) => {
    // Another user who can write the folder could plant a file naming a rendezvous of theirs and a key they
    // hold: ranks that used it would hand them the job. It must be a 0600 file of this user's, not a link.
    const dir = tempFolder(t);
    const [env0, env1] = fileJob(2, dir) as [NodeJS.ProcessEnv, NodeJS.ProcessEnv];
    const file = join(dir, meetingFileName(env0.PMIX_NAMESPACE as string));
    const content = { endpoint: "tcp://127.0.0.1:1", key: makeJobKey(), pid: process.pid, host: hostname() };
    await writeMeetingFile(what === "a link" ? file + ".real" : file, content);
    plant(file);
    const e = await t.throwsAsync(meetForeignJob(launchOf(env1), env1), { instanceOf: BootstrapError });
    t.regex(
      e?.message ?? "",
      /^rank 1: cannot read the rendezvous file \S+ in \S+: (it is a symbolic link|it has mode 0644|it is owned by uid 65534)/,
    );
  });
}

test("a stale file left by a process that is gone is skipped: the rank waits for rank 0's", async (t) => {
  const dir = tempFolder(t);
  const [env0, env1] = fileJob(2, dir) as [NodeJS.ProcessEnv, NodeJS.ProcessEnv];
  const file = join(dir, meetingFileName(env0.PMIX_NAMESPACE as string));
  const gone = spawnSync(process.execPath, ["-e", ""]).pid;
  await writeMeetingFile(file, { endpoint: "tcp://127.0.0.1:1", key: makeJobKey(), pid: gone, host: hostname() });
  const impatient = { ...env1, WORKPOOL_CONNECT_TIMEOUT_MS: "300" };
  const e = await t.throwsAsync(meetForeignJob(launchOf(impatient), impatient), { instanceOf: BootstrapError });
  t.regex(
    e?.message ?? "",
    new RegExp(
      `within 300 ms \\(WORKPOOL_CONNECT_TIMEOUT_MS\\) \\(skipped a stale one left by process ${gone}, gone\\)`,
    ),
  );
  // Rank 0 then writes its own over it.
  const waiting = meetForeignJob(launchOf(env1), env1);
  const rank0 = await meetForeignJob(launchOf(env0), env0);
  const rank1 = await waiting;
  t.is(rank1.env.rendezvous, rank0.env.rendezvous);
  t.deepEqual(rank1.env.key, rank0.env.key);
  rank0.abandon();
  await rank0.done;
  t.false(existsSync(file));
});

test("rank 0 that cannot serve at WORKPOOL_RENDEZVOUS fails, naming the address and what to do", async (t) => {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const env = mpirunEnv(0, 2, "j", {
    WORKPOOL_KEY: formatJobKey(KEY),
    WORKPOOL_RENDEZVOUS: `tcp://127.0.0.1:${port}`,
  });
  const e = await t.throwsAsync(meetForeignJob(launchOf(env), env), { instanceOf: BootstrapError });
  t.regex(
    e?.message ?? "",
    new RegExp(
      `^rank 0 cannot serve the rendezvous at tcp://127\\.0\\.0\\.1:${port} \\(environment variable WORKPOOL_RENDEZVOUS\\): ` +
        ".*; rank 0 serves the rendezvous there, so HOST must be an address of rank 0's host and PORT free$",
    ),
  );
});
