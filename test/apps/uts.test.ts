/**
 * The UTS app: the tree generator against counts of the UTS 2.1 C reference (run once, by hand; its code is not
 * in this repository), its options, and the app end to end through the real launcher under both pool modes on
 * 1-4 ranks, sequentially, with --verify, and with bad input. The trees are small (thousands of nodes).
 */
import { createHash } from "node:crypto";
import { pathToFileURL } from "node:url";
import test from "ava";
import { InputError } from "../../apps/common/errors.ts";
import { countsMismatch } from "../../apps/uts/counts.ts";
import { expandFlags, parseOptions, sampleTable } from "../../apps/uts/options.ts";
import { DEFAULT_PARAMS, formatParams, parseUtsArgs } from "../../apps/uts/params.ts";
import { DEFAULT_TREE, SAMPLE_TREES, sampleTree, sampleWithParams } from "../../apps/uts/samples.ts";
import { searchSequential } from "../../apps/uts/sequential.ts";
import { Tree } from "../../apps/uts/tree.ts";
import { fixture, jsonLine, launch as start, limitedLauncher, linesOf, ok, rank0 } from "../helpers/run.ts";
import { fastOnly, slowOnly, sweep } from "../helpers/sweep.ts";

// The slow suite runs what this file leaves out of the fast one (uts.slow.test.ts): three of the pool runs, and a
// coordinator's death; the other tests run in the fast suite only.
const fastTest = fastOnly(test);

const UTS = "apps/uts";

/**
 * Trees and their counts [nodes, leaves, depth] from the UTS 2.1 C reference (mini-uts `dfs`), covering every
 * tree type and shape, the hybrid shift, the cap of 100 children (51 nodes of the -b 200 tree are capped), a
 * fractional binomial root (floor(2.5) children) and granularity.
 */
const REFERENCE: readonly [string, number, number, number][] = [
  ["-t 1 -a 0 -d 6 -b 4 -r 0", 1732, 1050, 6],
  ["-t 1 -a 1 -d 10 -b 4 -r 1", 8383, 4279, 31],
  ["-t 1 -a 1 -d 5 -b 8 -r 4", 1775, 933, 12],
  ["-t 1 -a 2 -d 4 -b 5 -r 13", 43, 25, 8],
  ["-t 1 -a 3 -d 6 -b 4 -r 19", 16000, 12839, 6],
  ["-t 1 -a 3 -d 2 -b 200 -r 5", 6443, 6368, 2],
  ["-t 0 -b 150 -q 0.3 -m 3 -r 11", 1783, 1238, 22],
  ["-t 0 -b 2.5 -q 0.3 -m 3 -r 11", 3, 2, 1],
  ["-t 0 -b 20 -q 0.124875 -m 8 -r 42", 6213, 5438, 67],
  ["-t 2 -a 0 -d 8 -b 6 -r 1 -q 0.234375 -m 4", 15914, 11966, 73],
  ["-t 2 -a 2 -d 6 -b 4 -r 11 -q 0.22 -m 4 -f 0.7", 134, 83, 8],
  ["-t 3 -d 6 -b 4", 5461, 4096, 6],
  ["-t 1 -a 3 -d 6 -b 4 -r 19 -g 3", 16000, 12839, 6],
];

/** The small named trees the launches use, with their C reference counts written out again. */
const SMALL = {
  T1XXS: { nodes: 16000, leaves: 12839, depth: 6 },
  T2XXS: { nodes: 25174, leaves: 15391, depth: 41 },
  T3XXS: { nodes: 6213, leaves: 5438, depth: 67 },
  T4XXS: { nodes: 15914, leaves: 11966, depth: 73 },
  T5XXS: { nodes: 21579, leaves: 11664, depth: 12 },
} as const;

// --- the tree, in this process ------------------------------------------------------------------------------

fastTest("root and child states are SHA-1 of 16 zero bytes + seed, and of the parent + index, big-endian", (t) => {
  const tree = new Tree(parseUtsArgs("-t 1 -a 3 -d 10 -b 4 -r 19"));
  const root = tree.root();
  t.is(root.d, 0);
  t.is(Buffer.from(root.s).toString("hex"), "c6988ab70cc9559ae4d6cba254e29a845a85f86b");
  const child = tree.children(root)[2];
  t.is(child?.d, 1);
  t.is(Buffer.from(child?.s ?? []).toString("hex"), "0f440b68d030929503be64d09655d21a7dfd8365");
  // The same with node:crypto's streaming API, written out: the state, then the index as 4 bytes.
  const index = Buffer.from([0, 0, 0, 2]);
  t.deepEqual(Buffer.from(child?.s ?? []), createHash("sha1").update(root.s).update(index).digest());
  // Root's random number: 0x5a85f86b / 2^31 = 0.707..., above q = 0.2 (no children) and below 0.8 (one).
  t.is(new Tree(parseUtsArgs("-t 0 -b 3 -q 0.2 -m 4 -r 19")).numChildren(root.s, 1), 0);
  t.is(new Tree(parseUtsArgs("-t 0 -b 3 -q 0.8 -m 4 -r 19")).numChildren(root.s, 1), 4);
});

for (const [args, nodes, leaves, depth] of REFERENCE) {
  fastTest(`sequential search of ${args} counts what the UTS C reference counts`, (t) => {
    t.deepEqual(searchSequential(new Tree(parseUtsArgs(args))), { nodes, leaves, depth });
  });
}

fastTest("the small named trees have the counts the table gives", (t) => {
  for (const [name, counts] of Object.entries(SMALL)) {
    const sample = sampleTree(name);
    t.deepEqual(sample?.counts, counts, name);
    t.deepEqual(searchSequential(new Tree(sample!.params)), counts, name);
  }
  t.deepEqual(searchSequential(new Tree(sampleTree("uts-default")!.params)), {
    nodes: 1732,
    leaves: 1050,
    depth: 6,
  });
});

fastTest("sample table: published trees as in sample_trees.sh, names and parameters unique", (t) => {
  const t1 = sampleTree("t1");
  t.is(t1?.name, "T1");
  t.is(t1?.args, "-t 1 -a 3 -d 10 -b 4 -r 19");
  t.deepEqual(t1?.counts, { nodes: 4130071, leaves: 3305118, depth: 10 });
  t.deepEqual(sampleTree("T3")?.counts, { nodes: 4112897, leaves: 3599034, depth: 1572 });
  t.is(sampleTree("T4")?.params.q, 0.234375);
  t.is(sampleTree("T3XXL")?.counts.leaves, undefined);
  t.is(new Set(SAMPLE_TREES.map((s) => s.name.toLowerCase())).size, SAMPLE_TREES.length);
  for (const s of SAMPLE_TREES) {
    t.is(sampleWithParams(s.params), s, s.name);
    t.deepEqual(parseUtsArgs(formatParams(s.params)), s.params, s.name);
  }
  t.truthy(sampleTree(DEFAULT_TREE));
  const table = sampleTable();
  t.is(table.length, SAMPLE_TREES.length + 2);
  t.regex(table.find((l) => l.startsWith("T1 ")) ?? "", /4130071 +3305118 +10 +published/);
});

// --- options --------------------------------------------------------------------------------------------------

fastTest("options: UTS flags, named trees, overrides, the default", (t) => {
  t.deepEqual(expandFlags(["-t", "1", "--tree", "T1", "-r", "-5", "--json"]), [
    "--type",
    "1",
    "--tree",
    "T1",
    "--seed",
    "-5",
    "--json",
  ]);
  const byFlags = parseOptions(["-t", "1", "-a", "3", "-d", "10", "-b", "4", "-r", "19"]);
  t.is(byFlags.label, "T1");
  t.is(byFlags.known?.name, "T1");
  t.is(parseOptions(["--tree", "T1", "-d", "9"]).label, "T1XS");
  t.is(parseOptions([]).label, DEFAULT_TREE);
  t.is(parseOptions(["-t", "geometric", "-a", "cyclic", "-d", "5", "-r", "3"]).label, "-t 1 -a 2 -d 5 -b 4 -r 3");
  t.is(parseOptions(["-r", "7"]).params.genMx, DEFAULT_PARAMS.genMx);
  t.is(parseOptions(["--tree", "T1XXS", "-g", "2"]).label, "T1XXS -g 2");
  const o = parseOptions(["--tree=T3", "--sequential", "--verify", "--json", "--repeat", "3"]);
  t.like(o, { label: "T3", sequential: true, verify: true, json: true, repeat: 3 });
  t.is(o.params.type, "binomial");
});

for (const [argv, message] of [
  [["--tree", "T9"], /^uts: unknown tree "T9" for --tree \(known: T1, /],
  [["-d", "x"], /^uts: option -d\/--depth must be a whole number from 1 to 1000000; got "x"$/],
  [["--depth", "0"], /option -d\/--depth .* got "0"$/],
  [["-b", "0"], /option -b\/--b0 must be a number above 0 .* got "0"$/],
  [["-q", "1.5"], /option -q\/--q must be a number from 0 to 1; got "1.5"$/],
  [["-r", "-5"], /option -r\/--seed must be a whole number from 0 to 2147483647; got "-5"$/],
  [["-t", "7"], /option -t\/--type must be one of 0 \(binomial\), .*; got "7"$/],
  [["-a", "spiral"], /option -a\/--shape must be one of 0 \(linear\), .*; got "spiral"$/],
  [["-z", "3"], /^uts: unknown option -z \(UTS flags: -t \(--type\), /],
  [["--repeat", "0"], /option --repeat must be a whole number from 1 to 1000; got "0"$/],
  [["T1"], /unexpected argument "T1"/],
  [["-r", "3", "--sequential", "--verify"], /--verify needs known counts .* -t 1 -a 0 -d 6 -b 4 -r 3$/],
] as const) {
  fastTest(`options: ${argv.join(" ")} is bad input`, (t) => {
    t.throws(() => parseOptions(argv), { instanceOf: InputError, message });
  });
}

fastTest("countsMismatch names the first field that differs and skips unknown ones", (t) => {
  const c = { nodes: 5, leaves: 3, depth: 2 };
  t.is(countsMismatch(c, c), undefined);
  t.is(countsMismatch(c, { nodes: 5 }), undefined);
  t.is(countsMismatch(c, { nodes: 5, leaves: 4 }), "leaves 3, expected 4");
});

// --- the app through the launcher -----------------------------------------------------------------------------

/** At most 2 launches at once, so a 2-core machine is not swamped by this file. */
const limited = limitedLauncher(2);
const launch = (n: number, pool: string | undefined, args: readonly string[]) => limited(n, pool, UTS, args);

const RUNS: readonly [pool: string, ranks: number, tree: keyof typeof SMALL][] = [
  ["centralized", 1, "T1XXS"],
  ["centralized", 3, "T3XXS"],
  ["centralized,coordinatorWorks=true", 2, "T2XXS"],
  ["centralized,coordinatorWorks=true", 4, "T4XXS"],
  ["distributed", 2, "T5XXS"],
  ["distributed", 4, "T1XXS"],
  ["distributed,initiation=sender,partner=ring,termination=tree", 3, "T3XXS"],
];

// The fast suite: one run per mode and the sender/ring/tree strategies; the rest in uts.slow.test.ts.
for (const [pool, ranks, tree] of sweep(RUNS, (_, i) => i % 2 === 0)) {
  test(`app: ${tree} on ${ranks} ranks under --pool ${pool} gives the reference counts and verifies`, async (t) => {
    const r = await launch(ranks, pool, ["--tree", tree, "--json", "--verify"]);
    ok(t, r);
    const mode = pool.split(",")[0];
    t.like(jsonLine(t, r), { tree, ...SMALL[tree], variant: mode, ranks });
    t.regex(r.stderr, /\[0\] uts: verified: \d+ nodes, \d+ leaves, depth \d+, as the UTS C reference counts/);
  });
}

fastTest("app: --sequential prints the text line", async (t) => {
  const r = await launch(1, undefined, ["--tree", "T2XXS", "--sequential", "--verify"]);
  ok(t, r);
  t.regex(rank0(r.stdout)[0] ?? "", /^uts T2XXS: 25174 nodes, 15391 leaves, depth 41 \(sequential, \d+\.\d{3} s\)$/);
  t.regex(r.stderr, /uts: verified: 25174 nodes, 15391 leaves, depth 41, as the UTS C reference counts T2XXS/);
});

fastTest(
  "app: a tree given by UTS flags is verified against the sequential search; --repeat runs it again",
  async (t) => {
    const r = await launch(2, "distributed", [
      ...["-t", "1", "-a", "1", "-d", "10", "-b", "4", "-r", "1"],
      ...["--verify", "--json", "--repeat", "2"],
    ]);
    ok(t, r);
    const json = jsonLine(t, r);
    t.like(json, { tree: "-t 1 -a 1 -d 10 -b 4 -r 1", nodes: 8383, leaves: 4279, depth: 31, ranks: 2 });
    t.is((json.runs as number[]).length, 2);
    t.regex(r.stderr, /uts: verified: 8383 nodes, 4279 leaves, depth 31, as the sequential search found/);
  },
);

fastTest("app: --speedup times the sequential loop after the pool and prints both, side by side", async (t) => {
  const text = await launch(2, "distributed", ["--tree", "T1XXS", "--speedup"]);
  ok(t, text);
  t.regex(
    rank0(text.stdout)[1] ?? "",
    /^uts: distributed on 2 ranks (\d+\.\d{3}) s, sequential loop (\d+\.\d{3}) s: speedup \d+\.\d{2}x, efficiency \d\.\d{2}$/,
  );
  const json = jsonLine(t, await launch(2, "distributed", ["--tree", "T1XXS", "--speedup", "--json"]));
  t.like(json, { tree: "T1XXS", ...SMALL.T1XXS, ranks: 2 });
  const { seconds, seqSeconds, speedup } = json as { seconds: number; seqSeconds: number; speedup: number };
  t.true(seqSeconds > 0);
  t.true(Math.abs(speedup - seqSeconds / seconds) < 0.01 * speedup + 0.002, JSON.stringify(json));
});

for (const [args, line] of [
  [["--sequential", "--speedup"], /^uts: --speedup compares a pool run with the sequential loop; drop --sequential$/],
  [["--tree", "T9"], /^uts: unknown tree "T9" for --tree/],
  [["-d", "-1"], /^uts: option -d\/--depth must be a whole number from 1 to 1000000; got "-1"$/],
] as const) {
  fastTest(`app: ${args.join(" ")} is one line and status 2`, async (t) => {
    const r = await launch(2, undefined, args);
    t.is(r.code, 2, r.stderr);
    t.is(r.stdout, "");
    const lines = rank0(r.stderr);
    t.is(lines.length, 1, r.stderr);
    t.regex(lines[0] ?? "", line);
  });
}

// Issue 30: with coordinator=2 and rank 0 killed, the job ended 0 with no result line though --verify was asked:
// the app printed on rank 0 only (and rank 0 put the root, which a worker's death could lose).
slowOnly(test)(
  "app: rank 0 killed mid-run, the coordinator on rank 2: the lowest rank alive prints and verifies the counts",
  async (t) => {
    const hook = `--import=${pathToFileURL(fixture("working-rank.mjs")).href}`;
    const pool = "centralized,retries=2,coordinator=2";
    const args = [
      "-n",
      "4",
      "--pool",
      pool,
      "--node-arg",
      hook,
      "-x",
      "WORKING_RANK=0",
      UTS,
      "--tree",
      "T1XS",
      "--verify",
    ];
    const job = start(args);
    const [working] = await job.lines(/^\[0\] working 0 \d+$/, 1);
    process.kill(Number(working?.split(" ").at(-1)), "SIGKILL");
    const r = await job.result;
    ok(t, r);
    const results = linesOf(r.stdout).filter((l) => /^\[\d\] uts /.test(l));
    t.is(results.length, 1, r.stdout);
    t.regex(results[0] as string, /^\[1\] uts T1XS: 1031269 nodes, 825408 leaves, depth 9 \(centralized, 4 ranks, /);
    t.true(
      linesOf(r.stderr).some((l) => /^\[1\] uts: verified: 1031269 nodes/.test(l)),
      r.stderr,
    );
    t.true(
      linesOf(r.stderr).some((l) => l.startsWith("workpool: rank 0 died (killed by SIGKILL); the job go")),
      r.stderr,
    );
  },
);
