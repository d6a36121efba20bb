/**
 * A rank that cannot reach its rendezvous fails fast with a BootstrapError naming the address, instead of
 * waiting for good: started directly (no launcher), with the job's variables pointing at an ipc path in a
 * fresh folder that nothing serves. In-process: the two waits (connecting, then the table, which a busy
 * service may be slow to send), and the timeout setting.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import * as zmq from "zeromq";
import { unpack } from "../../lib/comm/codec.ts";
import { clientOptions, formatJobKey, makeJobKey } from "../../lib/comm/job-key.ts";
import {
  connectTimeoutMs,
  DEFAULT_CONNECT_TIMEOUT_MS,
  joinRendezvous,
  serveRendezvous,
} from "../../lib/comm/rendezvous.ts";
import { BootstrapError } from "../../lib/errors.ts";
import { fixture, startNode } from "../helpers/run.ts";

const LOADER = ["--import", "tsx", "--conditions=workpool-source"];
const KEY = makeJobKey();

function freshDir(): string {
  return mkdtempSync(join(tmpdir(), "wp-bootstrap-"));
}

/** The variables of rank 1 of a 2-rank job whose rendezvous is `address`. */
function jobEnv(dir: string, address: string, timeout: string | undefined): NodeJS.ProcessEnv {
  return {
    WORKPOOL_RANK: "1",
    WORKPOOL_SIZE: "2",
    WORKPOOL_RENDEZVOUS: address,
    WORKPOOL_TRANSPORT: "ipc",
    WORKPOOL_IPC_DIR: dir,
    WORKPOOL_KEY: formatJobKey(KEY),
    ...(timeout === undefined ? {} : { WORKPOOL_CONNECT_TIMEOUT_MS: timeout }),
  };
}

test("a rank whose rendezvous nobody serves exits 1 with a BootstrapError naming the address", async (t) => {
  const dir = freshDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const address = `ipc://${dir}/nobody`;
  const r = await startNode([...LOADER, fixture("comm-bootstrap.ts")], jobEnv(dir, address, "300")).result;
  t.is(r.code, 1, r.stderr);
  t.is(r.stdout, "");
  t.true(
    r.stderr.includes(
      `BootstrapError: rank 1: cannot reach the rendezvous at ${address}: no connection within 300 ms (WORKPOOL_CONNECT_TIMEOUT_MS)`,
    ),
    r.stderr,
  );
});

test("an app that catches the BootstrapError gets its code and message, and the process still exits", async (t) => {
  const dir = freshDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const address = `ipc://${dir}/nobody`;
  const r = await startNode([...LOADER, fixture("comm-bootstrap.ts"), "catch"], jobEnv(dir, address, "200")).result;
  t.is(r.code, 0, r.stderr);
  t.regex(
    r.stdout,
    new RegExp(
      `^caught BootstrapError WP_BOOTSTRAP: rank 1: cannot reach the rendezvous at ipc://.*/nobody: no connection within 200 ms \\(WORKPOOL_CONNECT_TIMEOUT_MS\\); .*\\n$`,
    ),
  );
});

test("a connect timeout that is not a whole number of milliseconds is a BootstrapError naming the variable", async (t) => {
  const dir = freshDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = await startNode(
    [...LOADER, fixture("comm-bootstrap.ts"), "catch"],
    jobEnv(dir, `ipc://${dir}/nobody`, "10s"),
  ).result;
  t.is(r.code, 0, r.stderr);
  t.is(
    r.stdout,
    'caught BootstrapError WP_BOOTSTRAP: environment variable WORKPOOL_CONNECT_TIMEOUT_MS must be a whole number of milliseconds in 1..2147483647; got "10s"\n',
  );
});

test("the connect timeout is 10 s unless WORKPOOL_CONNECT_TIMEOUT_MS says otherwise", (t) => {
  t.is(DEFAULT_CONNECT_TIMEOUT_MS, 10_000);
  t.is(connectTimeoutMs({}), 10_000);
  t.is(connectTimeoutMs({ WORKPOOL_CONNECT_TIMEOUT_MS: "" }), 10_000);
  t.is(connectTimeoutMs({ WORKPOOL_CONNECT_TIMEOUT_MS: "2500" }), 2500);
  for (const bad of ["0", "-1", "1.5", "abc", "3e10"]) {
    t.throws(() => connectTimeoutMs({ WORKPOOL_CONNECT_TIMEOUT_MS: bad }), {
      instanceOf: BootstrapError,
      message: new RegExp(`WORKPOOL_CONNECT_TIMEOUT_MS .* got "${bad}"$`),
    });
  }
});

test("a rank waits for the table once connected, however long the service takes to answer (up to the join timeout)", async (t) => {
  const dir = freshDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A ZeroMQ peer that never answers, as a launcher too busy to: the rank connects, so the connect timeout
  // (100 ms) no longer applies, and the wait ends at the join timeout with a message that says so.
  const silent = new zmq.Router({ linger: 0, curveServer: true, curveSecretKey: KEY.secretKey });
  t.teardown(() => silent.close());
  await silent.bind(`ipc://${dir}/silent`);
  const hello = { rank: 3, endpoint: `ipc://${dir}/r3`, pid: process.pid, host: "here" };
  const heard = silent.receive();
  const joining = joinRendezvous(`ipc://${dir}/silent`, KEY, hello, 100, 1500);
  const [, body] = await heard;
  t.like(unpack(body as Buffer), { t: "hello", rank: 3 });
  await t.throwsAsync(joining, {
    instanceOf: BootstrapError,
    message: `rank 3: connected to the rendezvous at ipc://${dir}/silent, but not every rank joined within 1500 ms`,
  });
});

test("the rendezvous sends the table once every rank has joined, and refuses a rank joining twice", async (t) => {
  const dir = freshDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const service = await serveRendezvous(2, `ipc://${dir}/rv`, KEY);
  t.teardown(() => service.close());
  const hello = (rank: number) => ({ rank, endpoint: `ipc://${dir}/r${rank}`, pid: process.pid, host: "here" });
  // Rank 0 alone: connected, it waits (here 300 ms) for rank 1.
  await t.throwsAsync(joinRendezvous(service.endpoint, KEY, hello(0), 5000, 300), {
    instanceOf: BootstrapError,
    message: `rank 0: connected to the rendezvous at ${service.endpoint}, but not every rank joined within 300 ms`,
  });
  await t.throwsAsync(joinRendezvous(service.endpoint, KEY, hello(0), 5000, 300), {
    instanceOf: BootstrapError,
    message: "rank 0: rendezvous: rank 0 joined twice",
  });
  // Rank 1 completes the job: the table comes.
  t.deepEqual(await joinRendezvous(service.endpoint, KEY, hello(1), 5000), [`ipc://${dir}/r0`, `ipc://${dir}/r1`]);
  t.is((await service.complete).length, 2);
});

test("a hello that does not decode is answered and skipped: the rendezvous goes on for the real ranks", async (t) => {
  const dir = freshDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const service = await serveRendezvous(1, `ipc://${dir}/rv`, KEY);
  t.teardown(() => service.close());
  // A process of the job (it holds the key) whose hello is damaged.
  const stranger = new zmq.Dealer({ linger: 0, ...clientOptions(KEY) });
  t.teardown(() => stranger.close());
  stranger.connect(service.endpoint);
  for (const junk of [Buffer.from([0xc1]), Buffer.from([0xc0])]) {
    await stranger.send(junk);
    const [answer] = await stranger.receive();
    t.like(unpack(answer as Buffer), { t: "error" });
  }
  const hello = { rank: 0, endpoint: `ipc://${dir}/r0`, pid: process.pid, host: "here" };
  t.deepEqual(await joinRendezvous(service.endpoint, KEY, hello, 5000), [`ipc://${dir}/r0`]);
});

test("a process without the job's key cannot reach the rendezvous: no answer, and the real ranks join", async (t) => {
  const dir = freshDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const service = await serveRendezvous(1, `ipc://${dir}/rv`, KEY);
  t.teardown(() => service.close());
  const failed = new Promise<string>((resolve) => {
    const watch = async (s: zmq.Dealer) => {
      for await (const event of s.events) if (event.type.startsWith("handshake:error")) resolve(event.type);
    };
    // One with no CURVE at all, one with a key pair of its own, and one that guessed the public key's place.
    const plain = new zmq.Dealer({ linger: 0 });
    const other = makeJobKey();
    const forged = new zmq.Dealer({ linger: 0, ...clientOptions(other) });
    for (const s of [plain, forged]) {
      t.teardown(() => s.close());
      s.connect(service.endpoint);
      void s.send(Buffer.from("hello")).catch(() => {});
      void watch(s).catch(() => {});
    }
  });
  // The forged client's handshake fails (the service cannot open its box): an event, not a timeout.
  t.regex(await failed, /^handshake:error/);
  const hello = { rank: 0, endpoint: `ipc://${dir}/r0`, pid: process.pid, host: "here" };
  t.deepEqual(await joinRendezvous(service.endpoint, KEY, hello, 5000), [`ipc://${dir}/r0`]);
  t.is((await service.complete).length, 1);
});
