import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { ControlServer } from "../../launcher/control-server.ts";
import { Survival } from "../../launcher/survival.ts";
import { deliverRankDeath, onRankDeath } from "../../lib/control/deaths.ts";
import { alive, parseReady, READY, waitUntilGone } from "../helpers/pids.ts";
import { fixture, launch, linesOf } from "../helpers/run.ts";

// Surviving a rank's death (issue 17), the launcher's side: once a rank has sent a tolerate record, the death of
// a rank no such record names as essential does not end the job; every live rank is told, and the launcher
// prints one line for it. test/fixtures/survive-ranks.ts sends the records a pool would send; the test kills a
// rank once every rank is ready (each rank's record has left it by then).
const RANKS = fixture("survive-ranks.ts");

/** Launches `survive-ranks.ts` on 3 ranks and waits until they are all ready. */
async function ready(records: readonly [string, string], options: readonly string[] = []) {
  const job = launch(["-n", "3", ...options, RANKS, ...records]);
  return { job, ranks: parseReady(await job.lines(READY, 3)) };
}

/** The launcher's lines about deaths. */
function deathLines(stderr: string): string[] {
  return linesOf(stderr).filter((l) => /^workpool: rank \d+ died/.test(l));
}

test("a worker killed after a tolerate record: the others are told, the job goes on and ends 0", async (t) => {
  const { job, ranks } = await ready(["0", "-"]);
  process.kill(ranks[2]?.pid as number, "SIGKILL");
  const r = await job.result;
  t.is(r.code, 0, r.stderr);
  t.deepEqual(deathLines(r.stderr), [
    "workpool: rank 2 died (killed by SIGKILL); the job goes on without it: pool1 re-dealt 37 tasks",
  ]);
  t.deepEqual(
    linesOf(r.stderr).filter((l) => /rank 2/.test(l)),
    deathLines(r.stderr),
    "one line about rank 2",
  );
  const out = linesOf(r.stdout);
  for (const survivor of [0, 1]) {
    t.true(out.includes(`[${survivor}] dead 2 killed by SIGKILL`), r.stdout);
    t.true(out.includes(`[${survivor}] replayed 2 killed by SIGKILL`), r.stdout);
  }
  t.deepEqual(alive(ranks.map((x) => x.pid)), []);
});

test("without a tolerate record, the same death ends the job as before", async (t) => {
  const { job, ranks } = await ready(["-", "-"]);
  process.kill(ranks[2]?.pid as number, "SIGKILL");
  const r = await job.result;
  t.is(r.code, 137, r.stderr);
  t.is(linesOf(r.stderr).at(-1), "workpool: rank 2 failed (killed by SIGKILL)");
  t.deepEqual(deathLines(r.stderr), []);
  t.notRegex(r.stdout, /dead/, "no rank was told of a death");
});

test("an essential rank's death ends the job (essential ranks are the union of every tolerate record)", async (t) => {
  const { job, ranks } = await ready(["0", "2"]);
  process.kill(ranks[2]?.pid as number, "SIGKILL");
  const r = await job.result;
  t.is(r.code, 137, r.stderr);
  t.is(linesOf(r.stderr).at(-1), "workpool: rank 2 failed (killed by SIGKILL)");
  t.deepEqual(deathLines(r.stderr), []);
});

test("a stopped worker that misses its heartbeats is killed and counted dead; the job goes on and ends 0", async (t) => {
  const { job, ranks } = await ready(["0", "-"], ["--heartbeat", "2"]);
  process.kill(ranks[1]?.pid as number, "SIGSTOP");
  const r = await job.result;
  t.is(r.code, 0, r.stderr);
  t.deepEqual(
    linesOf(r.stderr).filter((l) => /rank 1/.test(l)),
    ["workpool: rank 1 died (sent no heartbeat for 2 s); the job goes on without it: pool1 re-dealt 37 tasks"],
    r.stderr,
  );
  for (const survivor of [0, 2]) t.true(linesOf(r.stdout).includes(`[${survivor}] dead 1 sent no heartbeat for 2 s`));
  t.deepEqual(await waitUntilGone(ranks.map((x) => x.pid)), [], "the stopped rank is gone (SIGKILL)");
});

test("a death notice that came before a listener registered is replayed to it, in order", (t) => {
  const before: string[] = [];
  const stopBefore = onRankDeath((rank, why) => before.push(`${rank} ${why}`));
  deliverRankDeath(3, "killed by SIGKILL");
  deliverRankDeath(1, "exit code 3");
  const late: string[] = [];
  const stopLate = onRankDeath((rank, why) => late.push(`${rank} ${why}`));
  t.deepEqual(late, ["3 killed by SIGKILL", "1 exit code 3"], "replayed at registration, synchronously");
  stopBefore();
  deliverRankDeath(2, "sent no heartbeat for 2 s");
  t.deepEqual(before, ["3 killed by SIGKILL", "1 exit code 3"], "unsubscribed: told no more");
  t.deepEqual(late, ["3 killed by SIGKILL", "1 exit code 3", "2 sent no heartbeat for 2 s"]);
  stopLate();
});

/** Connects to `address` as `rank` and collects the lines the server writes. */
async function rankSocket(address: string, rank: number, token: string) {
  const socket: Socket = connect(address.slice("ipc://".length));
  await once(socket, "connect");
  const lines: string[] = [];
  let rest = "";
  const waiters: { count: number; resolve: () => void }[] = [];
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    const parts = (rest + chunk).split("\n");
    rest = parts.pop() ?? "";
    lines.push(...parts);
    for (const w of waiters.filter((x) => lines.length >= x.count)) w.resolve();
  });
  socket.write(`${JSON.stringify({ t: "hello", rank, token })}\n`);
  const received = (count: number) =>
    new Promise<string[]>((resolve) => {
      const done = () => resolve(lines.slice(0, count));
      if (lines.length >= count) done();
      else waiters.push({ count, resolve: done });
    });
  return { socket, received };
}

test("broadcast: every accepted rank gets each record in the same order, a late one the backlog first", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "wp-survive-"));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Each rank sends a record after its hello: once it is read, the hello was accepted.
  const accepted = [0, 1].map(() => {
    let resolve = () => {};
    return { promise: new Promise<void>((r) => (resolve = r)), resolve: () => resolve() };
  });
  const control = await ControlServer.listen({
    address: `ipc://${join(dir, "control")}`,
    size: 3,
    token: "tok",
    onRecord: (rank) => accepted[rank]?.resolve(),
  });
  const early = await rankSocket(control.address, 0, "tok");
  early.socket.write(`${JSON.stringify({ t: "beat" })}\n`);
  await accepted[0]?.promise;
  control.broadcast({ t: "dead", rank: 2, why: "killed by SIGKILL" });
  const late = await rankSocket(control.address, 1, "tok");
  late.socket.write(`${JSON.stringify({ t: "beat" })}\n`);
  await accepted[1]?.promise;
  control.broadcast({ t: "dead", rank: 3, why: "exit code 3" });
  const expected = [
    JSON.stringify({ t: "dead", rank: 2, why: "killed by SIGKILL" }),
    JSON.stringify({ t: "dead", rank: 3, why: "exit code 3" }),
  ];
  t.deepEqual(await early.received(2), expected);
  t.deepEqual(await late.received(2), expected);
  early.socket.end();
  late.socket.end();
  await control.close();
});

test("re-deals that pools report together make one line; a death no pool re-dealt is told at the end", async (t) => {
  const written: string[] = [];
  const broadcasts: unknown[] = [];
  let told = () => {};
  const printed = new Promise<void>((resolve) => (told = resolve));
  const survival = new Survival({
    where: (rank) => (rank === 3 ? "rank 3 (host node2)" : `rank ${rank}`),
    broadcast: (record) => broadcasts.push(record),
    write: (text) => {
      written.push(text);
      told();
    },
  });
  t.false(survival.survives(1), "nothing is survived before a tolerate record");
  survival.tolerate([0]);
  survival.tolerate([2]);
  t.deepEqual(
    [0, 1, 2, 3].map((r) => survival.survives(r)),
    [false, true, false, true],
  );
  survival.died(1, "exit code 3");
  survival.died(3, "killed by SIGKILL");
  t.deepEqual(broadcasts, [
    { t: "dead", rank: 1, why: "exit code 3" },
    { t: "dead", rank: 3, why: "killed by SIGKILL" },
  ]);
  survival.redealt({ t: "redealt", pool: "pool1", rank: 1, tasks: 37 });
  survival.redealt({ t: "redealt", pool: "pool2", rank: 1, tasks: 1 });
  await printed;
  t.deepEqual(written, [
    "workpool: rank 1 died (exit code 3); the job goes on without it: pool1 re-dealt 37 tasks, pool2 re-dealt 1 task\n",
  ]);
  const atEnd: string[] = [];
  survival.finish((text) => atEnd.push(text));
  t.deepEqual(atEnd, ["workpool: rank 3 (host node2) died (killed by SIGKILL); the job went on without it\n"]);
});
