// The live view of a job across hosts (issue 31): three test hosts of network namespaces (test/helpers/hosts.ts),
// every rank remote, their samples crossing the bridge to the launcher over their control connections. The
// dashboard's state names every rank with its host, and `workpool top`, attached by the job folder, shows them.
// Skipped (failed under CI=true) where namespaces cannot be made.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import test from "ava";
import { tempFolder } from "../helpers/folders.ts";
import { canMakeHosts, makeHosts, type TestHost } from "../helpers/hosts.ts";
import { nothingLeft } from "../helpers/hosts-job.ts";
import { needs } from "../helpers/needs.ts";
import { until } from "../helpers/pids.ts";
import { fixture, launch, startWorkpool, stderrMatch } from "../helpers/run.ts";
import { parseReady, parseResult, READY } from "../fixtures/hosts-job-check.ts";
import { expectedTotal } from "../fixtures/hosts-values.ts";

const withHosts = needs(test.serial, await canMakeHosts());

interface State {
  readonly ranks: { rank: number; host: string; state: string; sampled: boolean; rss: number }[];
}

withHosts("the dashboard and workpool top of a job on 3 hosts: every rank, with its host, sampled", async (t) => {
  t.timeout(180_000);
  const hosts = await makeHosts(3);
  try {
    const [a, b, c] = hosts.hosts as [TestHost, TestHost, TestHost];
    const go = join(tempFolder(t, "wp-dashboard-hosts-"), "go");
    const job = launch([
      "-H",
      `${a.name}:2,${b.name}:1,${c.name}:1`,
      "--agent",
      hosts.agent,
      "--dashboard",
      "--dashboard-keep",
      "0",
      fixture("hosts-job.ts"),
      go,
    ]);
    const [, url] = (await stderrMatch(job, /dashboard at (http:\/\/127\.0\.0\.1:\d+\/[\w-]+\/)\n/)) as unknown as [
      string,
      string,
    ];
    const ready = parseReady(await job.lines(READY, 4));
    // Rank 0 waits for the go file: every rank is up, and sends a sample every 250 ms.
    let state: State | undefined;
    const sampled = await until(
      () => {
        void fetch(`${url}state`)
          .then((res) => res.json())
          .then((s) => (state = s as State));
        return state !== undefined && state.ranks.every((r) => r.sampled || r.rss > 0);
      },
      100,
      60_000,
    );
    t.true(sampled, JSON.stringify(state));
    t.deepEqual(
      state?.ranks.map((r) => [r.rank, r.host, r.state]),
      [
        [0, a.name, "running"],
        [1, a.name, "running"],
        [2, b.name, "running"],
        [3, c.name, "running"],
      ],
    );
    const once = await startWorkpool(["top", "--once", ready[0]?.dir ?? ""]).result;
    t.is(once.code, 0, once.stderr);
    for (const [rank, host] of [
      [0, a.name],
      [2, b.name],
      [3, c.name],
    ] as const) {
      t.regex(once.stdout, new RegExp(`^ +${rank} ${host.slice(0, 12)} +running`, "m"));
    }
    writeFileSync(go, "");
    const r = await job.result;
    t.is(r.code, 0, r.stderr);
    t.regex(r.stderr, /^workpool: dashboard at \S+\n$/);
    const addresses = [[a.address], [a.address], [b.address], [c.address]];
    t.deepEqual(parseResult(r.stdout), { total: expectedTotal(addresses.length), addresses });
    await nothingLeft(t, hosts);
  } finally {
    await hosts.remove();
  }
});
