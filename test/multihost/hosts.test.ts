// Jobs across hosts: three test hosts made of network namespaces (test/helpers/hosts.ts), every rank started on
// one of them by the netns agent while the launcher stays in the root namespace, so every rank is remote and
// every connection of the job crosses the bridge. Skipped (failed under CI=true) where namespaces cannot be made.
import { readFileSync, writeFileSync } from "node:fs";
import { hostname } from "node:os";
import { join } from "node:path";
import test from "ava";
import { dijkstra } from "../../apps/shortest-paths/dijkstra.ts";
import { generateGraph } from "../../apps/shortest-paths/generate.ts";
import { tally } from "../../apps/shortest-paths/summary.ts";
import { tempFolder } from "../helpers/folders.ts";
import { canMakeHosts, makeHosts, type TestHost } from "../helpers/hosts.ts";
import { finishes, nothingLeft, ok } from "../helpers/hosts-job.ts";
import { needs } from "../helpers/needs.ts";
import { waitUntilRemoved } from "../helpers/pids.ts";
import { fixture, launch, linesOf, rank0, run } from "../helpers/run.ts";
import { shared } from "../helpers/shared.ts";
import { listeners, parseReady, parseResult, READY, running } from "../fixtures/hosts-job-check.ts";
import { expectedTotal } from "../fixtures/hosts-values.ts";

const withHosts = needs(test.serial, await canMakeHosts());

const JOB = fixture("hosts-job.ts");
/** A graph for shortest-paths, small enough to solve in well under a second. */
const GRAPH = "random:3000,12000";

/**
 * The hosts this file's tests share, made when the first of them asks, as A, B, C; and `fourRanks`,
 * `-H A:2,B:1,C:1 --agent <netns agent>`: ranks 0 and 1 on A, 2 on B, 3 on C.
 */
const theHosts = shared(
  test,
  async () => {
    const hosts = await makeHosts(3);
    const [a, b, c] = hosts.hosts as [TestHost, TestHost, TestHost];
    const fourRanks = ["-H", `${a.name}:2,${b.name}:1,${c.name}:1`, "--agent", hosts.agent];
    return { hosts, a, b, c, fourRanks };
  },
  ({ hosts }) => hosts.remove(),
);

const TEMP = "wp-hosts-test-";

withHosts(
  "4 ranks on 3 hosts: each runs on its host, binds its host's address, gets -x, and every message arrives",
  async (t) => {
    const { hosts, a, b, c, fourRanks } = await theHosts();
    const go = join(tempFolder(t, TEMP), "go");
    const job = launch([...fourRanks, "-x", "WP_TEST_X=to every host", JOB, go]);
    const ready = parseReady(await job.lines(READY, 4));
    const placement = [a, a, b, c];
    const addresses = placement.map((h) => [h.address]);
    t.deepEqual(
      ready.map((r) => r.addresses),
      addresses,
      "each rank saw its host's interfaces",
    );
    t.deepEqual(
      ready.map((r) => r.x),
      ["to every host", "to every host", "to every host", "to every host"],
    );
    for (const r of ready) {
      const host = placement[r.rank] as TestHost;
      t.true(hosts.pids(host).includes(r.pid), `rank ${r.rank} runs in ${host.name}'s namespace`);
      // Each rank listens only on its host's address: not 0.0.0.0, not 127.0.0.1.
      const sockets = await listeners(["ip", "netns", "exec", host.ns], [r.pid]);
      t.true(sockets.length > 0, `rank ${r.rank} listens`);
      t.deepEqual([...new Set(sockets.map((s) => s.address))], [host.address], `rank ${r.rank}'s listening sockets`);
    }
    await finishes(t, job, go, addresses);
    await nothingLeft(t, hosts);
  },
);

withHosts("uts --verify --pool centralized --stats across hosts: exact counts, every rank in the table", async (t) => {
  const { hosts, fourRanks } = await theHosts();
  const r = await run([
    ...fourRanks,
    "--pool",
    "centralized",
    "--stats",
    "apps/uts",
    "--tree",
    "T1XXS",
    "--verify",
    "--json",
  ]);
  ok(t, r);
  t.like(JSON.parse(rank0(r.stdout)[0] ?? "null"), {
    tree: "T1XXS",
    nodes: 16000,
    leaves: 12839,
    depth: 6,
    variant: "centralized",
    ranks: 4,
  });
  t.regex(r.stderr, /\[0\] uts: verified: 16000 nodes, 12839 leaves, depth 6, as the UTS C reference counts T1XXS/);
  t.regex(r.stderr, /workpool: \S+ run 1 \(centralized\) statistics/);
  const rows = linesOf(r.stderr).map((l) => l.trim().split(/\s+/));
  t.deepEqual(
    rows.filter((w) => /^[0-3]$/.test(w[0] ?? "")).map((w) => w[0]),
    ["0", "1", "2", "3"],
    "one statistics row per rank",
  );
  t.true(
    rows.some((w) => w[0] === "all" && w[1] === "16,000"),
    "every node is a task, counted once",
  );
  await nothingLeft(t, hosts);
});

withHosts("uts --verify --pool distributed --trace across hosts: exact counts, events from every rank", async (t) => {
  const { hosts, fourRanks } = await theHosts();
  const trace = join(tempFolder(t, TEMP), "trace.json");
  const args = ["--pool", "distributed", "--trace", trace, "apps/uts", "--tree", "T3XXS", "--verify", "--json"];
  const r = await run([...fourRanks, ...args]);
  ok(t, r);
  t.like(JSON.parse(rank0(r.stdout)[0] ?? "null"), {
    tree: "T3XXS",
    nodes: 6213,
    leaves: 5438,
    depth: 67,
    variant: "distributed",
    ranks: 4,
  });
  t.regex(r.stderr, /\[0\] uts: verified: 6213 nodes, 5438 leaves, depth 67/);
  const events = (JSON.parse(readFileSync(trace, "utf8")) as { traceEvents: { ph: string; pid: number }[] })
    .traceEvents;
  t.deepEqual(
    [...new Set(events.filter((e) => e.ph !== "M").map((e) => e.pid))].sort(),
    [0, 1, 2, 3],
    "every rank's events travelled back to the launcher",
  );
  await nothingLeft(t, hosts);
});

withHosts("shortest-paths --verify --pool distributed across hosts: Dijkstra's distances", async (t) => {
  const { hosts, fourRanks } = await theHosts();
  const args = ["--pool", "distributed", "apps/shortest-paths", "--generate", GRAPH, "--verify", "--json"];
  const r = await run([...fourRanks, ...args]);
  ok(t, r);
  t.true(
    rank0(r.stderr).some((l) => /^shortest-paths: verified: all 3000 distances equal Dijkstra's/.test(l)),
    r.stderr,
  );
  t.like(JSON.parse(rank0(r.stdout)[0] ?? "null"), {
    vertices: 3000,
    ...tally(dijkstra(generateGraph(GRAPH), 0)),
    variant: "distributed",
  });
  await nothingLeft(t, hosts);
});

withHosts(
  "--hostfile with comments, blank lines and slots: -n defaults to the slots, ranks fill hosts in order; " +
    "the launcher's WORKPOOL_HOST is its own",
  async (t) => {
    const { hosts, a, b, c } = await theHosts();
    const file = join(tempFolder(t, TEMP), "hosts");
    writeFileSync(
      file,
      [
        "# the test hosts",
        `${a.name} slots=1   # one rank`,
        "",
        `  ${b.name}`,
        `${c.name} slots=1`,
        `${b.name} # again: one more`,
        "",
      ].join("\n"),
    );
    // WORKPOOL_HOST chooses the launcher's address; the netns agent passes its environment on, as ssh does not,
    // and a rank that took it for its own would try to bind the launcher's address on its host.
    const r = await run(["--hostfile", file, "--agent", hosts.agent, JOB], { WORKPOOL_HOST: hosts.bridgeAddress });
    ok(t, r);
    const ready = parseReady(linesOf(r.stdout).filter((l) => READY.test(l)));
    t.deepEqual(
      ready.map((x) => x.addresses),
      [[a.address], [b.address], [b.address], [c.address]],
    );
    t.is(parseResult(r.stdout)?.total, expectedTotal(4));
  },
);

withHosts("a remote rank killed by SIGKILL: the job fails naming the rank and its host; nothing is left", async (t) => {
  const { hosts, c, fourRanks } = await theHosts();
  const job = launch([...fourRanks, JOB, join(tempFolder(t, TEMP), "never")]);
  const ready = parseReady(await job.lines(READY, 4));
  const victim = ready[3]?.pid as number;
  t.true(hosts.pids(c).includes(victim), "rank 3 runs on host C");
  process.kill(victim, "SIGKILL");
  const r = await job.result;
  t.is(r.code, 137, r.stderr);
  // Through an agent the launcher sees the wrapper's status 128 + 9, not the signal itself.
  t.regex(
    linesOf(r.stderr).at(-1) ?? "",
    new RegExp(`^workpool: rank 3 \\(host ${c.name}\\) failed \\((killed by SIGKILL|exit code 137)\\)$`),
  );
  t.deepEqual(running(ready.map((x) => x.pid)), [], "every rank is gone when the launcher exits");
  await nothingLeft(t, hosts);
});

withHosts("the launcher killed by SIGKILL mid-job: every remote rank goes away", async (t) => {
  const { hosts, fourRanks } = await theHosts();
  const job = launch([...fourRanks, JOB, join(tempFolder(t, TEMP), "never")]);
  const ready = parseReady(await job.lines(READY, 4));
  job.child.kill("SIGKILL");
  t.is((await job.result).signal, "SIGKILL");
  // Nobody is left to report the ranks' end: wait for it, with a deadline.
  await nothingLeft(t, hosts);
  t.deepEqual(running(ready.map((r) => r.pid)), []);
  t.true(await waitUntilRemoved(ready[0]?.dir as string), "the local reaper removed the job folder");
});

withHosts(
  "a remote rank's uncaught error: status 1 and the one-line summary with the error, naming the host",
  async (t) => {
    const { hosts, b, fourRanks } = await theHosts();
    const r = await run([...fourRanks, fixture("throw.ts"), "2"]);
    t.is(r.code, 1, r.stderr);
    t.is(linesOf(r.stderr).at(-1), `workpool: rank 2 (host ${b.name}) failed (exit code 1): Error: boom on 2`);
    // Rank 2's stack, once, then the summary: the other ranks, stopped by the launcher, say nothing.
    const lines = linesOf(r.stderr);
    t.regex(r.stderr, /^\[2\] Error: boom on 2\n\[2\]\s+at /);
    t.deepEqual(
      lines.slice(0, -1).filter((l) => !l.startsWith("[2] ")),
      [],
    );
    await nothingLeft(t, hosts);
  },
);

withHosts("a host the agent does not know (as ssh fails): a clear error naming the host, no hang", async (t) => {
  const { hosts, a } = await theHosts();
  const unknown = hosts.bridgeAddress.replace(/\.1$/, ".250");
  const never = join(tempFolder(t, TEMP), "never");
  const r = await run(["-H", `${a.name}:1,${unknown}:1`, "--agent", hosts.agent, JOB, never]);
  t.is(r.code, 255, r.stderr);
  t.is(
    linesOf(r.stderr).at(-1),
    `workpool: rank 1 (host ${unknown}) failed (exit code 255): netns-agent.sh: unknown host ${unknown} (no test host has that address)`,
  );
  await nothingLeft(t, hosts);
});

withHosts("an app missing on the host (hidden there by a mount): the error names the host and the app", async (t) => {
  const { hosts, a } = await theHosts();
  const dir = tempFolder(t, TEMP);
  const app = join(dir, "app.mjs");
  writeFileSync(app, "console.log('never runs');\n");
  // The agent covers `dir` with an empty tmpfs, in a mount namespace of the rank's own, before it starts it.
  const agent = `unshare --mount --propagation private sh -c 'mount -t tmpfs hide "$0" && exec "$@"' ${dir} ${hosts.agent}`;
  const r = await run(["-H", `${a.name}:1`, "--agent", agent, app]);
  t.is(r.code, 98, r.stderr);
  t.is(
    linesOf(r.stderr).at(-1),
    `workpool: rank 0 (host ${a.name}) failed (exit code 98): workpool: host ${hostname()} has no app ${app} ` +
      "(every host needs the app at the same path)",
  );
  await nothingLeft(t, hosts);
});
