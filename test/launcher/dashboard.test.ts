// The live view's parts in-process (issue 31): the job state built from the ranks' samples (on a clock of the
// test's own), the dashboard's HTTP server and its secret, the watch protocol of the control server, and the
// command line's checks. A real job in a real browser, and `workpool top` in a terminal: dashboard.slow.test.ts.
import { mkdtempSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { ControlServer, MAX_WATCHERS } from "../../launcher/control-server.ts";
import { DashboardServer, MAX_STATES_PER_SECOND } from "../../launcher/dashboard/server.ts";
import { BIN_MS, LiveJob, TAIL_LINES } from "../../launcher/dashboard/state.ts";
import type { LivePool, LiveSample } from "../../lib/internal.ts";
import { startWorkpool } from "../helpers/run.ts";

/** A rank's live sample (lib/control/live.ts) with one pool's cumulative figures. */
function sample(pool: Partial<LivePool>, rss = 100 * 2 ** 20): LiveSample {
  const figures: LivePool = {
    pool: "pool1",
    run: 1,
    active: true,
    mode: "distributed",
    strategy: "initiation=receiver, partner=random, termination=token-ring",
    done: 0,
    put: 0,
    busyMs: 0,
    runMs: 0,
    msgs: 0,
    bytes: 0,
    movedIn: 0,
    movedOut: 0,
    tokenRounds: 0,
    redealt: 0,
    queued: 0,
  };
  return { t: "live", rss, heap: 10, heapTotal: 20, pools: [{ ...figures, ...pool }] };
}

test("the job state: busy and waiting fractions from samples, progress of a loop, a death, bounded output", (t) => {
  let now = 1_000_000;
  const live = new LiveJob({ np: 2, app: "/x/app.ts", hostOf: () => undefined, now: () => now });
  // Rank 0 busy 3/4 of each 250 ms, waiting the rest; rank 1 outside any run (no pool yet).
  for (let i = 0; i <= 8; i++) {
    live.record(
      0,
      sample({ busyMs: i * 187.5, runMs: i * 250, done: i * 10, loopDone: i * 100, loopTotal: 10_000, queued: 5 }),
    );
    live.record(1, { t: "live", rss: 1, heap: 1, heapTotal: 1, pools: [] });
    now += 250;
  }
  now -= 1;
  const s = live.snapshot();
  const [r0, r1] = s.ranks;
  t.is(r0?.state, "running");
  t.true(Math.abs((r0?.busy ?? 0) - 0.75) < 0.01, String(r0?.busy));
  t.true(Math.abs((r0?.waiting ?? 0) - 0.25) < 0.01, String(r0?.waiting));
  t.is(r1?.busy, 0);
  t.is(r1?.waiting, 0);
  t.is(r0?.queued, 5);
  t.is(r0?.rss, 100 * 2 ** 20);
  t.is(s.binMs, BIN_MS);
  const pool = s.pools[0];
  t.is(pool?.pool, "pool1");
  t.is(pool?.loopDone, 800);
  t.is(pool?.loopTotal, 10_000);
  t.is(pool?.done, 80);
  t.is(pool?.phase, "working");
  // The first snapshot's rate: the mean since the job began (80 tasks in about 2.25 s), not 0.
  t.true(Math.abs((pool?.rate ?? 0) - 80 / 2.249) < 1, String(pool?.rate));

  // Rank 1 dies, survived: its exit is no failure once the launcher says the job goes on.
  live.exited(1, null, "SIGKILL");
  t.is(live.snapshot().failures.length, 1);
  live.broadcast({ t: "dead", rank: 1, why: "killed by SIGKILL" });
  const after = live.snapshot();
  t.is(after.ranks[1]?.state, "dead");
  t.deepEqual(after.failures, []);
  t.is(after.deaths[0]?.why, "killed by SIGKILL");
  t.is(after.pools[0]?.deaths, 1);

  // The output tail keeps the last TAIL_LINES lines; the page asks only for those after the last it has.
  for (let i = 0; i < TAIL_LINES + 50; i++) live.output(0, `line ${i}`, false);
  const tail = live.snapshot().tail;
  t.is(tail.length, TAIL_LINES);
  t.is(tail.at(-1)?.text, `line ${TAIL_LINES + 49}`);
  t.is(live.snapshot(0, tail.at(-2)?.seq ?? 0).tail.length, 1);
  t.is(live.snapshot(0, -3).tail.length, 3);

  live.ended(1, "workpool: rank 0 failed (exit code 1)");
  const ended = live.snapshot();
  t.true(ended.job.ended);
  t.is(ended.job.status, 1);
  t.is(ended.failures.at(-1)?.text, "workpool: rank 0 failed (exit code 1)");
});

test("the dashboard answers only under its secret: 403 without it, 405 for other methods", async (t) => {
  const live = new LiveJob({ np: 1, app: "/x/app.ts", hostOf: () => undefined });
  const secret = "s3cr3t-s3cr3t-s3cr3t-s3cr";
  const server = await DashboardServer.listen({ live, secret, port: 0, np: 1 });
  try {
    const url = new URL(server.url);
    t.is(url.hostname, "127.0.0.1");
    t.is(url.pathname, `/${secret}/`);
    for (const path of [
      "/",
      "/state",
      "/dashboard.js",
      `/${secret}`,
      `/${secret.slice(0, -1)}/`,
      `/${secret}x/state`,
    ]) {
      const res = await fetch(url.origin + path);
      t.is(res.status, 403, path);
      t.is(await res.text(), "forbidden\n");
    }
    const page = await fetch(server.url);
    t.is(page.status, 200);
    t.regex(page.headers.get("content-security-policy") ?? "", /default-src 'self'/);
    t.regex(await page.text(), /<script type="module" src="dashboard.js">/);
    t.is((await fetch(`${server.url}dashboard.js`)).headers.get("content-type"), "text/javascript; charset=utf-8");
    const state = (await (await fetch(`${server.url}state?bins=0&tail=0`)).json()) as { job: { np: number } };
    t.is(state.job.np, 1);
    t.is((await fetch(`${server.url}state`, { method: "POST" })).status, 405);
    t.is((await fetch(`${server.url}nothing`)).status, 404);
    const trace = (await (await fetch(`${server.url}trace.json`)).json()) as { traceEvents: unknown[] };
    t.true(Array.isArray(trace.traceEvents));
  } finally {
    await server.close();
  }
});

test("requests crafted to miss the dashboard's reuse get 503 past its states per second", async (t) => {
  const live = new LiveJob({ np: 1, app: "/x/app.ts", hostOf: () => undefined });
  const server = await DashboardServer.listen({ live, secret: "abc", port: 0, np: 1, maxStatesPerSecond: 2 });
  t.true(MAX_STATES_PER_SECOND >= 10);
  try {
    // 12 requests within at most 5 seconds' worth of 2 states: some must be turned away.
    const codes = await Promise.all(Array.from({ length: 12 }, (_, i) => fetch(`${server.url}state?bins=${i}`)));
    for (const res of codes) await res.arrayBuffer();
    t.true(codes.some((res) => res.status === 503));
    t.true(codes.some((res) => res.status === 200));
  } finally {
    await server.close();
  }
});

test("the control server's watchers: the secret, a bound on their number, and what they are sent", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "workpool-watch-test-"));
  let watched = 0;
  const control = await ControlServer.listen({
    address: `ipc://${join(dir, "control")}`,
    size: 1,
    token: "tok",
    onRecord: () => {},
    onWatch: () => watched++,
  });
  const path = join(dir, "control");
  /** Connects as a watcher with `token`; resolves to the first line the server writes. */
  const watch = (token: string) => {
    const socket = connect(path);
    socket.setEncoding("utf8");
    socket.write(`${JSON.stringify({ t: "watch", token })}\n`);
    const first = new Promise<string>((resolve) => {
      let text = "";
      socket.on("data", (chunk: string) => {
        text += chunk;
        if (text.includes("\n")) resolve(text.slice(0, text.indexOf("\n")));
      });
    });
    return { socket, first };
  };
  try {
    t.regex(await watch("wrong").first, /"t":"refused","reason":"wrong secret"/);
    const ok = Array.from({ length: MAX_WATCHERS }, () => watch("tok"));
    const extra = watch("tok");
    t.regex(await extra.first, new RegExp(`${MAX_WATCHERS} watchers already`));
    t.is(watched, MAX_WATCHERS);
    t.is(control.watching, MAX_WATCHERS);
    control.toWatchers('{"t":"state"}\n');
    for (const w of ok) t.is(await w.first, '{"t":"state"}');
    for (const w of ok) w.socket.destroy();
    extra.socket.destroy();
  } finally {
    await control.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the command line refuses bad dashboard and top options, naming them", async (t) => {
  const [port, host, top, folder] = await Promise.all([
    startWorkpool(["launch", "--dashboard=http", "x.ts"]).result,
    startWorkpool(["launch", "--dashboard-host", "0.0.0.0", "x.ts"]).result,
    startWorkpool(["top", "--control", "ipc:///nowhere/control"]).result,
    startWorkpool(["top", "/nonexistent/wp-x"]).result,
  ]);
  t.is(port.code, 2);
  t.regex(port.stderr, /option --dashboard must be a whole number from 1 to 65535; got "http"/);
  t.is(host.code, 2);
  t.regex(host.stderr, /option --dashboard-host needs --dashboard/);
  t.is(top.code, 2);
  t.regex(top.stderr, /--control and --secret go together/);
  t.is(folder.code, 2);
  t.regex(folder.stderr, /job folder \/nonexistent\/wp-x: no such folder/);
});
