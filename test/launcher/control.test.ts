import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { ControlServer } from "../../launcher/control-server.ts";
import { BootstrapError } from "../../lib/index.ts";
import { ENV, parseControlAddress, type UncheckedRecord } from "../../lib/internal.ts";
import { flood, openDescriptors } from "../helpers/flood.ts";
import { fixture, linesOf, run, startNode } from "../helpers/run.ts";

// The control channel (lib/control/channel.ts): each rank connects to the launcher, says hello with its rank and
// the job's token, then sends its reports; the connection is its lifeline. Here a rank is `node -e CODE` with
// the rank preload, facing a ControlServer (or a bare socket server) the test runs itself.

const PRELOAD = new URL("../../lib/control/preload.ts", import.meta.url).href;
const REPORT = new URL("../../lib/control/report.ts", import.meta.url).href;
const FOREVER = "setInterval(() => {}, 1 << 30);";

function startRank(address: string, token: string, code: string, rank = 0) {
  return startNode(["--import", "tsx/esm", "--conditions=workpool-source", "--import", PRELOAD, "-e", code], {
    [ENV.control]: address,
    [ENV.token]: token,
    [ENV.rank]: String(rank),
  });
}

/** A Unix socket in a fresh folder: its path, its address, and a function that removes the folder. */
function ipcAddress(): { path: string; address: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "wp-control-"));
  const path = join(dir, "control");
  return { path, address: `ipc://${path}`, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

async function server(address: string, token: string, size = 4) {
  const records: [number, UncheckedRecord][] = [];
  const control = await ControlServer.listen({ address, size, token, onRecord: (r, m) => records.push([r, m]) });
  return { control, records };
}

test("a rank that throws at once: its last words still make the summary", async (t) => {
  const [one, four] = await Promise.all([
    run(["-n", "1", fixture("throw-at-once.mjs")]),
    run(["-n", "4", fixture("throw-at-once.mjs")]),
  ]);
  t.is(one.code, 1, one.stderr);
  t.is(linesOf(one.stderr).at(-1), "workpool: rank 0 failed (exit code 1): Error: thrown at once by rank 0");
  t.is(four.code, 1, four.stderr);
  t.regex(
    linesOf(four.stderr).at(-1) as string,
    /^workpool: rank (\d) failed \(exit code 1\): Error: thrown at once by rank \1$/,
  );
});

for (const kind of ["ipc", "tcp"] as const) {
  test(`over ${kind}: a hello with the job's token, then last words written before the process dies`, async (t) => {
    const ipc = kind === "ipc" ? ipcAddress() : undefined;
    const { control, records } = await server(ipc?.address ?? "tcp://127.0.0.1:0", "s3cret");
    if (!ipc) t.regex(control.address, /^tcp:\/\/127\.0\.0\.1:[1-9]\d*$/);
    // Thrown synchronously after the preload: over a Unix socket before the socket's connect event.
    const result = await startRank(control.address, "s3cret", "throw new Error('at once')", 3).result;
    t.is(result.code, 1, result.stderr);
    await control.close();
    ipc?.cleanup();
    t.is(records.length, 1);
    t.like(records[0], [3, { t: "error", message: "Error: at once" }]);
    t.regex(String(records[0]?.[1]?.stack), /Error: at once\n\s+at \[eval\]:1:7/, "the stack goes too");
    t.notRegex(result.stderr, /Error: at once/, "the launcher prints it, not the rank");
  });
}

test("reports sent while the channel is still connecting wait in order behind the hello, and go out", async (t) => {
  const { address, cleanup } = ipcAddress();
  const { control, records } = await server(address, "tok");
  // Synchronously after the preload, before the socket's connect event: the rank then simply ends.
  const code = `const c = globalThis[Symbol.for("workpool.control")]; for (let i = 0; i < 3; i++) c.send({ t: "stats", i });`;
  const result = await startRank(address, "tok", code, 2).result;
  t.is(result.code, 0, result.stderr);
  await control.close();
  cleanup();
  t.deepEqual(records, [
    [2, { t: "stats", i: 0 }],
    [2, { t: "stats", i: 1 }],
    [2, { t: "stats", i: 2 }],
  ]);
});

for (const kind of ["ipc", "tcp"] as const) {
  test(`over ${kind}: a notice written to a rank that has exited loses none of what it wrote last`, async (t) => {
    const ipc = kind === "ipc" ? ipcAddress() : undefined;
    const { control, records } = await server(ipc?.address ?? "tcp://127.0.0.1:0", "tok");
    const target = parseControlAddress(control.address);
    const rank = "path" in target ? connect(target.path) : connect(target.port, target.host);
    await once(rank, "connect");
    const accepted = new Promise<void>((resolve) => {
      const seen = () => (records.length > 0 ? resolve() : setImmediate(seen));
      seen();
    });
    rank.write(`${JSON.stringify({ t: "hello", rank: 1, token: "tok" })}\n${JSON.stringify({ t: "beat" })}\n`);
    await accepted;
    // The rank's last records and its exit, then a notice for it, all before the launcher reads again: the
    // records wait in the launcher's socket, the notice meets a closed connection (EPIPE over a Unix socket).
    rank.write(`${JSON.stringify({ t: "stats", tasks: 74 })}\n${JSON.stringify({ t: "trace", lines: "x" })}\n`);
    rank.destroy();
    control.broadcast({ t: "left", rank: 0, p: [] });
    control.broadcast({ t: "left", rank: 2, p: [] });
    await control.close();
    ipc?.cleanup();
    t.deepEqual(
      records.map(([r, m]) => [r, m.t]),
      [
        [1, "beat"],
        [1, "stats"],
        [1, "trace"],
      ],
    );
  });
}

for (const kind of ["ipc", "tcp"] as const) {
  for (const end of ["process.exit(0)", "the end of the program"]) {
    test(`over ${kind}: a report larger than the socket takes, then ${end}: it and every record after it arrive`, async (t) => {
      const ipc = kind === "ipc" ? ipcAddress() : undefined;
      const { control, records } = await server(ipc?.address ?? "tcp://127.0.0.1:0", "tok");
      // A run's trace can be megabytes; the statistics follow it. Sent once the channel is connected.
      const exit = end === "process.exit(0)" ? "process.exit(0);" : "";
      const code =
        `const c = globalThis[Symbol.for("workpool.control")]; c.send({ t: "beat" }); setTimeout(() => {` +
        `c.send({ t: "trace", lines: "x".repeat(8e6) }); c.send({ t: "stats", n: 1 }); ${exit} }, 50);`;
      const result = await startRank(control.address, "tok", code).result;
      await control.close();
      ipc?.cleanup();
      t.is(result.code, 0, result.stderr);
      t.deepEqual(
        records.map(([, m]) => m.t),
        ["beat", "trace", "stats"],
      );
      t.is(String(records[1]?.[1].lines).length, 8e6);
    });
  }
}
test("the first heartbeat goes with the hello, before the app runs: an app that blocks at once is still heard", async (t) => {
  const { address, cleanup } = ipcAddress();
  const records: [number, UncheckedRecord][] = [];
  let heard: () => void = () => {};
  const first = new Promise<void>((resolve) => (heard = resolve));
  const control = await ControlServer.listen({
    address,
    size: 4,
    token: "tok",
    onRecord: (r, m) => {
      records.push([r, m]);
      heard();
    },
  });
  // The next beat is a minute away, and the app never lets a timer fire anyway.
  const rank = startNode(
    ["--import", "tsx/esm", "--conditions=workpool-source", "--import", PRELOAD, "-e", "for (;;);"],
    { [ENV.control]: address, [ENV.token]: "tok", [ENV.rank]: "2", [ENV.heartbeatMs]: "60000" },
  );
  await first;
  rank.child.kill("SIGKILL");
  await rank.result;
  await control.close();
  cleanup();
  t.deepEqual(records, [[2, { t: "beat" }]]);
});

test("a wrong token is refused: the rank exits 1 naming the address, and nothing it sends is taken", async (t) => {
  const { address, cleanup } = ipcAddress();
  const { control, records } = await server(address, "the-job's");
  const code = `import(${JSON.stringify(REPORT)}).then((m) => { m.report({ t: "error", message: "forged" }); ${FOREVER} });`;
  const result = await startRank(address, "guessed", code).result;
  t.is(result.code, 1);
  t.is(
    linesOf(result.stderr).at(-1),
    `workpool: rank 0 cannot reach the launcher at ${address}: it refused this rank: wrong token`,
  );
  await control.close();
  cleanup();
  t.deepEqual(records, []);
});

test("strangers that say no hello are bounded: at most maxStrangers held, each dropped at the deadline", async (t) => {
  // 400 idle connections from another user (uid 65534 when run as root): the server holds at most 16 of them at
  // once (the oldest dropped first), drops every one of them at its hello deadline, and a rank still gets in.
  const records: [number, UncheckedRecord][] = [];
  let recorded!: () => void;
  const first = new Promise<void>((resolve) => (recorded = resolve));
  const control = await ControlServer.listen({
    address: "tcp://127.0.0.1:0",
    size: 4,
    token: "tok",
    onRecord: (r, m) => {
      records.push([r, m]);
      recorded();
    },
    helloDeadlineMs: 1000,
    maxStrangers: 16,
  });
  const before = openDescriptors(process.pid);
  const { host, port } = parseControlAddress(control.address) as { host: string; port: number };
  const strangers = flood([{ to: { host, port }, count: 400 }]);
  t.teardown(() => strangers.stop());
  const settled = await strangers.settled;
  t.is(settled.opened, 400, JSON.stringify(settled));
  await control.caughtUp();
  t.true(control.waiting <= 16, `${control.waiting} held`);
  // At most the 16 held, beside the flood process's pipes and what spawning it opened here.
  t.true(openDescriptors(process.pid) - before <= 16 + 16, `${openDescriptors(process.pid) - before} more descriptors`);
  const code = `const c = globalThis[Symbol.for("workpool.control")]; c.send({ t: "stats", i: 7 }); ${FOREVER}`;
  const rank = startRank(control.address, "tok", code, 3);
  await strangers.closedAtLeast(400);
  t.is(control.dropped, 400, "every stranger was dropped (past the cap, or at its deadline)");
  t.is(control.waiting, 0);
  await first;
  rank.child.kill("SIGKILL");
  await rank.result;
  await control.close();
  t.deepEqual(records, [[3, { t: "stats", i: 7 }]], "the rank got in");
});

test("the lifeline: once the launcher's end closes, the rank exits at once with status 129", async (t) => {
  const { path, address, cleanup } = ipcAddress();
  const bare = createServer((socket: Socket) => {
    socket.setEncoding("utf8");
    let text = "";
    socket.on("data", (chunk: string) => {
      text += chunk;
      if (!text.includes("\n")) return;
      t.deepEqual(JSON.parse(text.slice(0, text.indexOf("\n"))), { t: "hello", rank: 1, token: "tok" });
      socket.destroy();
    });
  });
  bare.listen(path);
  await once(bare, "listening");
  const result = await startRank(address, "tok", FOREVER, 1).result;
  bare.close();
  cleanup();
  t.is(result.code, 129, result.stderr);
  t.is(result.stderr, "");
});

test("a rank that cannot reach the launcher fails at once, naming the address", async (t) => {
  const { address, cleanup } = ipcAddress();
  const result = await startRank(address, "tok", FOREVER).result;
  cleanup();
  t.is(result.code, 1);
  t.regex(
    linesOf(result.stderr).at(-1) as string,
    new RegExp(`^workpool: rank 0 cannot reach the launcher at ${address}: connect ENOENT `),
  );
});

test("control addresses: ipc://PATH or tcp://HOST:PORT, anything else named in the error", (t) => {
  t.deepEqual(parseControlAddress("ipc:///tmp/wp-1/control"), { path: "/tmp/wp-1/control" });
  t.deepEqual(parseControlAddress("tcp://node7.cluster:5555"), { host: "node7.cluster", port: 5555 });
  t.deepEqual(parseControlAddress("tcp://[::1]:0"), { host: "::1", port: 0 });
  for (const bad of ["/tmp/x", "tcp://host", "tcp://host:70000", "ipc://"]) {
    const e = t.throws(() => parseControlAddress(bad), { instanceOf: BootstrapError });
    t.is(e?.message, `environment variable ${ENV.control} must be ipc://PATH or tcp://HOST:PORT; got "${bad}"`);
  }
});

test("another back-end: plain child processes reporting over TCP get the same supervision", async (t) => {
  const job = (app: string, ...args: string[]) =>
    startNode(["--import", "tsx", "--conditions=workpool-source", fixture("job-over-tcp.ts"), "3", app, ...args])
      .result;
  const [failed, ok] = await Promise.all([job(fixture("throw.ts"), "1"), job(fixture("hello.ts"))]);
  t.is(failed.code, 1, failed.stderr);
  t.is(linesOf(failed.stderr).at(-1), "workpool: rank 1 failed (exit code 1): Error: boom on 1");
  t.is(ok.code, 0, ok.stderr);
  t.deepEqual(
    linesOf(ok.stdout)
      .filter((l) => l.includes(" sum "))
      .sort(),
    ["[0] sum 3 gather 0,10,20", "[1] sum 3 gather 0,10,20", "[2] sum 3 gather 0,10,20"],
  );
});
