// A job's endpoints against a stray process that knows them but not the job's key (lib/comm/job-key.ts): while a job
// of test/fixtures/hosts-job.ts waits (rank 0 waits for a file), the test sends every endpoint of the job raw
// garbage, ZeroMQ connections without CURVE and with a CURVE key pair of their own carrying a well-formed
// message or a rendezvous hello, and the control server a hello with a wrong token. Then it lets the job go on:
// it must end with status 0 and the exact result, no rank having seen anything. Also: the key is on no command
// line, and the job folder is private. On one host over ipc, and across test hosts over TCP (skipped, or failed
// under CI=true, where namespaces cannot be made).
import { randomBytes } from "node:crypto";
import { readdirSync, statSync, writeFileSync } from "node:fs";
import { connect as netConnect, type NetConnectOpts } from "node:net";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import * as zmq from "zeromq";
import { encodeMessage, pack } from "../../lib/comm/codec.ts";
import { flood, type FloodTarget, openDescriptors } from "../helpers/flood.ts";
import { tempFolder } from "../helpers/folders.ts";
import { canMakeHosts, makeHosts, type TestHost } from "../helpers/hosts.ts";
import { ok } from "../helpers/hosts-job.ts";
import { needs } from "../helpers/needs.ts";
import { fixture, launch, type Running } from "../helpers/run.ts";
import {
  listeners,
  parseReady,
  parseResult,
  READY,
  type Ready,
  secretsOf,
  secretsOnCommandLines,
} from "../fixtures/hosts-job-check.ts";
import { expectedTotal, TAG } from "../fixtures/hosts-values.ts";

const withHosts = needs(test.serial, await canMakeHosts());

const JOB = fixture("hosts-job.ts");

/** Where a stream connection goes: a Unix socket, or a TCP port. */
type Target = { readonly path: string } | { readonly host: string; readonly port: number };

/** The stream target of `ipc://PATH` or `tcp://HOST:PORT`. */
function targetOf(endpoint: string): Target {
  if (endpoint.startsWith("ipc://")) return { path: endpoint.slice("ipc://".length) };
  const m = /^tcp:\/\/(.+):(\d+)$/.exec(endpoint);
  if (!m) throw new Error(`not an endpoint: ${endpoint}`);
  return { host: m[1] as string, port: Number(m[2]) };
}

/** Connects to `endpoint`, writes `payload`, and resolves with all it was sent back once the other end closed. */
function raw(endpoint: string, payload: Buffer): Promise<Buffer> {
  return new Promise<Buffer>((resolve) => {
    const socket = netConnect(targetOf(endpoint) as NetConnectOpts, () => socket.write(payload));
    const got: Buffer[] = [];
    socket.on("data", (d: Buffer) => got.push(d));
    socket.on("error", () => undefined); // a reset is an answer too: the close follows
    socket.on("close", () => resolve(Buffer.concat(got)));
  });
}

/** Garbage for any stream endpoint; each ends with a newline, so a line-reading server does not wait for more. */
const GARBAGE: readonly Buffer[] = [
  Buffer.from("GET / HTTP/1.1\r\nHost: workpool\r\n\r\n"),
  Buffer.concat([randomBytes(5000), Buffer.from("\n")]),
  // A ZMTP 3 greeting's signature and version, then nonsense where the mechanism should be.
  Buffer.concat([Buffer.from([0xff, 0, 0, 0, 0, 0, 0, 0, 1, 0x7f, 3, 0]), randomBytes(64), Buffer.from("\n")]),
];

/**
 * How a ZeroMQ connection of `socket` to `endpoint` sending `message` ends: the first of a completed handshake
 * (`handshake`: the attack got in) and the ways it fails (a handshake error, the peer closing).
 */
async function zmtp(socket: zmq.Push | zmq.Dealer, endpoint: string, message: Buffer): Promise<string> {
  const outcome = new Promise<string>((resolve) => {
    socket.events.on("handshake", () => resolve("handshake"));
    socket.events.on("handshake:error:protocol", (e) => resolve(`protocol error: ${e.error.message}`));
    socket.events.on("handshake:error:auth", (e) => resolve(`auth error: ${e.error.message}`));
    socket.events.on("handshake:error:other", (e) => resolve(`handshake error: ${e.error.message}`));
    socket.events.on("disconnect", () => resolve("disconnected"));
  });
  socket.connect(endpoint);
  socket.send(message).catch(() => undefined); // queued until a handshake that never completes
  try {
    return await outcome;
  } finally {
    socket.close();
  }
}

/** Options of a CURVE client with a key pair of its own, and a server key that is not the job's. */
function ownCurve(): { curveServerKey: string; curvePublicKey: string; curveSecretKey: string } {
  const mine = zmq.curveKeyPair();
  return {
    curveServerKey: zmq.curveKeyPair().publicKey,
    curvePublicKey: mine.publicKey,
    curveSecretKey: mine.secretKey,
  };
}

/** A message from "rank 1" to whoever reads it, as the job's ranks frame theirs: if delivered, rank 0 fails. */
const FORGED = encodeMessage(1, 0, TAG, [0, 1e12], "send");
/** A rendezvous hello for rank 0, as a rank says it. */
const HELLO = pack({ t: "hello", rank: 0, endpoint: "tcp://127.0.0.1:9", pid: 1, host: "intruder" });

/**
 * Attacks the running job: every endpoint gets the garbage; every ZeroMQ one (`zmtpEndpoints`) a PUSH and a DEALER,
 * each without CURVE and with CURVE but a key pair of its own; the control server a hello with a wrong token.
 */
async function attack(t: ExecutionContext, zmtpEndpoints: readonly string[], control: string): Promise<void> {
  for (const endpoint of [...zmtpEndpoints, control]) {
    for (const garbage of GARBAGE) await raw(endpoint, garbage);
  }
  for (const endpoint of zmtpEndpoints) {
    const outcomes = [
      await zmtp(new zmq.Push({ linger: 0 }), endpoint, FORGED),
      await zmtp(new zmq.Push({ linger: 0, ...ownCurve() }), endpoint, FORGED),
      await zmtp(new zmq.Dealer({ linger: 0 }), endpoint, HELLO),
      await zmtp(new zmq.Dealer({ linger: 0, ...ownCurve() }), endpoint, HELLO),
    ];
    t.false(outcomes.includes("handshake"), `${endpoint}: ${outcomes.join("; ")}`);
  }
  const hello = (token: string) => Buffer.from(`${JSON.stringify({ t: "hello", rank: 0, token })}\n`);
  for (const token of ["", "x".repeat(24)]) {
    t.is((await raw(control, hello(token))).toString(), `${JSON.stringify({ t: "refused", reason: "wrong token" })}\n`);
  }
}

/** Lets the job go on (creates `go`), then checks it ended well and that nothing of the attacks reached a rank. */
async function finishes(t: ExecutionContext, job: Running, go: string, size: number, ready: readonly Ready[]) {
  writeFileSync(go, "");
  const r = await job.result;
  ok(t, r);
  t.is(parseResult(r.stdout)?.total, expectedTotal(size));
  t.is(r.stderr, "", "no rank printed an error (a corrupt frame, a bad hello)");
  t.notRegex(r.stdout, /corrupt/i);
  t.is(ready.length, size);
}

const TEMP = "wp-security-test-";

test.serial("one host, ipc: garbage and keyless ZeroMQ peers at every socket of the job change nothing", async (t) => {
  const go = join(tempFolder(t, TEMP), "go");
  // Cold ranks: the secrets are read from a rank's /proc/PID/environ, which a warm rank's does not hold.
  const job = launch(["-n", "3", "--transport", "ipc", JOB, go], { WORKPOOL_WARM: "0" });
  const ready = parseReady(await job.lines(READY, 3));
  const dir = ready[0]?.dir as string;
  t.is(statSync(dir).mode & 0o777, 0o700, "the job folder is private");
  const secrets = secretsOf(ready[0]?.pid as number);
  t.is(secrets.key.length, 80);
  t.deepEqual(secretsOnCommandLines(secrets), [], "no command line holds the key or the token");

  // The job's sockets, found in its folder: each rank's inbox and the control server (the rendezvous stops
  // listening once every rank has joined, and its socket file goes once ZeroMQ has closed it).
  const sockets = readdirSync(dir).filter((name) => name !== "rendezvous" && statSync(join(dir, name)).isSocket());
  t.deepEqual(sockets.sort(), ["control", "r0", "r1", "r2"]);
  t.is(secrets.rendezvous, `ipc://${join(dir, "rendezvous")}`);
  t.is(secrets.control, `ipc://${join(dir, "control")}`);
  const zmtpEndpoints = sockets.filter((name) => name !== "control").map((name) => `ipc://${join(dir, name)}`);
  await attack(t, zmtpEndpoints, secrets.control);
  // Another user cannot even connect: the job folder is in a private parent of this user's (mode 0700).
  if (process.getuid?.() === 0) {
    const strangers = flood(sockets.map((name) => ({ to: { path: join(dir, name) }, count: 50 })));
    const report = await strangers.settled;
    await strangers.stop();
    t.deepEqual(report, { opened: 0, failed: 200, codes: { EACCES: 200 } });
  }
  await finishes(t, job, go, 3, ready);
});

withHosts("across hosts, tcp: garbage and keyless ZeroMQ peers at every port of the job change nothing", async (t) => {
  const hosts = await makeHosts(2);
  t.teardown(() => hosts.remove());
  const [a, b] = hosts.hosts as [TestHost, TestHost];
  const go = join(tempFolder(t, TEMP), "go");
  const job = launch(["-H", `${a.name}:2,${b.name}:1`, "--agent", hosts.agent, JOB, go]);
  const ready = parseReady(await job.lines(READY, 3));
  t.is(statSync(ready[0]?.dir as string).mode & 0o777, 0o700, "the job folder is private");
  const secrets = secretsOf(ready[0]?.pid as number);
  t.deepEqual(secretsOf(ready[2]?.pid as number), secrets, "every rank, on every host, was told the same");
  t.is(secrets.key.length, 80);
  t.deepEqual(secretsOnCommandLines(secrets), [], "no command line holds the key or the token");

  // The ranks' inboxes, found with `ss -ltnp` on their hosts; the launcher's rendezvous and control ports.
  const placement = [a, a, b];
  const inboxes: string[] = [];
  for (const r of ready) {
    const sockets = await listeners(["ip", "netns", "exec", (placement[r.rank] as TestHost).ns], [r.pid]);
    inboxes.push(...sockets.map((s) => `tcp://${s.address}:${s.port}`));
  }
  t.is(inboxes.length, 3, inboxes.join(" "));
  const launcherPorts = (await listeners([], [job.pid])).map((s) => `tcp://${s.address}:${s.port}`);
  t.deepEqual(launcherPorts, [secrets.control], "the rendezvous stopped listening once every rank had joined");
  await attack(t, inboxes, secrets.control);

  // A flood of idle connections from the other host, as another user: the launcher holds a bounded number of
  // them (its control server drops the oldest stranger past 64), the ranks' ZeroMQ inboxes drop each at the
  // handshake deadline, and the job goes on to its exact result.
  // 500 at the launcher's control port, 90 at each rank's inbox (a ZeroMQ listener's backlog is 100: past a full
  // accept queue the kernel leaves connections half made until its SYN-ACK retries, which no listener sees).
  const endpoint = (e: string): FloodTarget => {
    const m = /^tcp:\/\/(.+):(\d+)$/.exec(e) as RegExpExecArray;
    return { host: m[1] as string, port: Number(m[2]) };
  };
  const targets = [
    { to: endpoint(secrets.control), count: 500 },
    ...inboxes.map((e) => ({ to: endpoint(e), count: 90 })),
  ];
  const total = 500 + 90 * inboxes.length;
  const before = openDescriptors(job.pid);
  const strangers = flood(targets, b.ns);
  t.teardown(() => strangers.stop());
  const report = await strangers.settled;
  t.is(report.opened, total, JSON.stringify(report));
  const held = openDescriptors(job.pid) - before;
  t.true(held <= 64 + 8, `the launcher holds ${held} more descriptors with 500 strangers at its port`);
  await strangers.closedAtLeast(report.opened);
  await strangers.stop();
  t.true(openDescriptors(job.pid) - before <= 8, "every stranger's descriptor was given back");
  await finishes(t, job, go, 3, ready);
});

test.serial(
  "--insecure gives that up: a keyless ZeroMQ peer gets a forged message in, and the job fails",
  async (t) => {
    const go = join(tempFolder(t, TEMP), "go");
    const job = launch(["-n", "2", "--insecure", "--transport", "ipc", JOB, go]);
    const ready = parseReady(await job.lines(READY, 2));
    const inbox = `ipc://${join(ready[0]?.dir as string, "r0")}`;
    // Linger: the forged message is still queued when the handshake completes and the helper closes the socket.
    t.is(await zmtp(new zmq.Push({ linger: 5000 }), inbox, FORGED), "handshake");
    writeFileSync(go, "");
    const r = await job.result;
    t.not(r.code, 0, r.stdout);
  },
);
