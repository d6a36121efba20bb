import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { canMakeHosts, makeHosts, type TestHosts } from "../test/helpers/hosts.ts";
import { type CommTargets, measure, startRaw, startWorkpool } from "./comm.ts";
import { fmt, formatTable, ROOT, scorecard, type Suite, start, WORKPOOL_BIN } from "./harness.ts";

/**
 * The hosts suite: workpool across hosts, each host a Linux network namespace on a bridge, made by this run
 * (test/helpers/hosts.ts) and removed after it, the ranks started by the namespace agent as ssh would start
 * them. All the hosts share this machine's 2 cores: what crosses hosts here is the network path (a veth pair
 * and a bridge, TCP, CURVE), not extra compute; so these figures say what multi-host costs over one host,
 * not what more machines gain.
 *
 * - Messages between 2 ranks on 2 hosts: workpool (TCP, every connection CURVE-authenticated and encrypted)
 *   against bare zeromq.js TCP without CURVE between the same two hosts, in the same run, phases alternating.
 * - UTS T1 under the distributed pool: 2 hosts x 1 rank against 1 host x 2 ranks (both over TCP with CURVE).
 * - Start-up: 64 ranks on 4 hosts against 64 ranks on this host, hello world (connect, close), wall time.
 */

const TARGETS: CommTargets = { rtt: 1.5, big: 0.8, small: 2 };
/** UTS tree for the efficiency figure and how many times each placement runs it (the median counts). */
const UTS = { tree: "T1", repeat: 5 } as const;
/** UTS T1 on 2 hosts x 1 rank must be at least this efficient relative to 1 host x 2 ranks. */
const UTS_MIN_RATIO = 0.9;
const STARTUP_RANKS = 64;
const STARTUP_HOSTS = 4;
const TIMEOUT_MS = 600_000;
/** The port the raw zeromq pair binds on its two hosts (each host has its own network, so no clash). */
const RAW_PORT = 47_001;

const hello = fileURLToPath(new URL("./programs/hello.mjs", import.meta.url));

function hostList(hosts: TestHosts, counts: readonly number[]): string {
  return counts.map((n, i) => `${hosts.hosts[i]?.name}:${n}`).join(",");
}

/** Runs `workpool launch ARGS...` and returns its stdout and wall time in seconds. */
async function launch(label: string, args: readonly string[]): Promise<{ out: string; seconds: number }> {
  const t0 = performance.now();
  const child = start(label, process.execPath, [WORKPOOL_BIN, "launch", ...args], { timeoutMs: TIMEOUT_MS });
  const out = await child.exited;
  return { out, seconds: (performance.now() - t0) / 1000 };
}

/** The `seconds` of the JSON line uts printed. */
function utsSeconds(out: string): number {
  const line = out.split("\n").find((l) => l.startsWith("{"));
  if (line === undefined) throw new Error(`uts printed no result:\n${out}`);
  return (JSON.parse(line) as { seconds: number }).seconds;
}

const median = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

async function uts(hosts: TestHosts, counts: readonly number[]): Promise<number> {
  const args = ["-H", hostList(hosts, counts), "--agent", hosts.agent, "--no-prefix", "--pool", "distributed"];
  const { out } = await launch(`uts on ${counts.join("+")}`, [
    ...args,
    join(ROOT, "apps", "uts"),
    "--tree",
    UTS.tree,
    "--json",
  ]);
  return utsSeconds(out);
}

export const suite: Suite = {
  name: "hosts",
  description: "across network-namespace hosts: CURVE TCP against raw zeromq TCP, UTS on 2 hosts, 64-rank start-up",
  async run() {
    const why = await canMakeHosts();
    if (why !== undefined) {
      process.stdout.write(`# hosts: cannot make test hosts here (${why}); nothing measured\n`);
      return { targets: 0, misses: 0 };
    }
    process.stdout.write(
      `# ${STARTUP_HOSTS} hosts, each a network namespace on one bridge made by this run; ranks started by the\n` +
        "# namespace agent. The hosts share this machine's cores: the figures are the cost of the network path\n" +
        "# (veth, bridge, TCP, CURVE), not a speed-up from more machines.\n",
    );
    const card = scorecard();
    let comm = { targets: 0, misses: 0 };
    const hosts = await makeHosts(STARTUP_HOSTS);
    const dir = mkdtempSync(join(tmpdir(), "wp-bench-hosts-"));
    try {
      const [a, b] = hosts.hosts as [TestHosts["hosts"][0], TestHosts["hosts"][0]];
      process.stdout.write(
        "\n## 2 ranks on 2 hosts: workpool (TCP, CURVE) against bare zeromq.js (TCP, no CURVE)\n" +
          "# (the comm suite's protocol and rounds; ratios are workpool / raw)\n",
      );
      comm = await measure(
        () =>
          startRaw(dir, [`tcp://${a.address}:${RAW_PORT}`, `tcp://${b.address}:${RAW_PORT}`], (rank) => [
            hosts.agent,
            (rank === 0 ? a : b).name,
          ]),
        () => startWorkpool(dir, ["-H", `${a.name}:1,${b.name}:1`, "--agent", hosts.agent]),
        TARGETS,
      );

      process.stdout.write(
        `\n## UTS ${UTS.tree}, distributed pool, median of ${UTS.repeat} runs each, alternating (the app's own timing)\n`,
      );
      // One run of each placement in turn, the first alternating, so that a change in machine load hits both.
      const one: number[] = [];
      const two: number[] = [];
      for (let round = 0; round < UTS.repeat; round++) {
        if (round % 2 === 0) one.push(await uts(hosts, [2]));
        two.push(await uts(hosts, [1, 1]));
        if (round % 2 === 1) one.push(await uts(hosts, [2]));
      }
      const oneHost = median(one);
      const twoHosts = median(two);
      const ratio = oneHost / twoHosts;
      process.stdout.write(
        `${formatTable([
          ["placement", "seconds", "efficiency vs 1 host", "target", "result"],
          ["1 host x 2 ranks", fmt(oneHost), "1.00", "", ""],
          [
            "2 hosts x 1 rank",
            fmt(twoHosts),
            ratio.toFixed(2),
            `>= ${UTS_MIN_RATIO}`,
            card.verdict(ratio >= UTS_MIN_RATIO),
          ],
        ])}\n`,
      );

      process.stdout.write(`\n## start-up: ${STARTUP_RANKS} ranks of hello.mjs (connect, close), launcher wall time\n`);
      const local = await launch("64 local", ["-n", String(STARTUP_RANKS), "--no-prefix", hello]);
      const spread = await launch("64 on 4 hosts", [
        "-H",
        hostList(hosts, Array(STARTUP_HOSTS).fill(STARTUP_RANKS / STARTUP_HOSTS)),
        "--agent",
        hosts.agent,
        "--no-prefix",
        hello,
      ]);
      process.stdout.write(
        `${formatTable([
          ["placement", "seconds", "ratio"],
          [`${STARTUP_RANKS} ranks on this host (ipc)`, fmt(local.seconds), "1.00x"],
          [
            `${STARTUP_RANKS} ranks on ${STARTUP_HOSTS} hosts (tcp, CURVE)`,
            fmt(spread.seconds),
            `${(spread.seconds / local.seconds).toFixed(2)}x`,
          ],
        ])}\n`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await hosts.remove();
    }
    const own = card.report();
    return { targets: comm.targets + own.targets, misses: comm.misses + own.misses };
  },
};
