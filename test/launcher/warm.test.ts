/**
 * Warm ranks (launcher/warm.ts, lib/control/warm.ts): node processes bin/workpool.js starts before the launcher
 * has loaded, which the local back-end makes ranks. A warm rank must be indistinguishable from a cold one to the
 * app (arguments, node options, environment, main module, failures), and only options the scan knows are served
 * warm.
 */
import { readdirSync, readFileSync } from "node:fs";
import test from "ava";
import { buildState } from "../../bin/build-state.js";
import { endWarm, launchRanks, parseRankArgv, sameBesideJob, startWarm } from "../../launcher/warm.ts";
import { childrenOf, until } from "../helpers/pids.ts";
import { linesOf, startWorkpool } from "../helpers/run.ts";

const APP = "test/fixtures/rank-start.mjs";
const CJS = "test/fixtures/rank-start.cjs";
/**
 * Warm ranks come from a fresh build only: with sources newer than dist/ (an edit not built yet), bin/workpool.js
 * runs the launcher from the sources, whose ranks all start cold. The tests that need a warm rank say so and are
 * skipped then, rather than fail on the edit; CI builds first (npm ci runs `prepare`).
 */
const FRESH = buildState(`${process.cwd()}/`) === "fresh";
const warmTest = FRESH ? test : test.skip;
const UNBUILT = FRESH ? "" : " (skipped: dist/ is older than the sources; npm run build)";

test("the scan counts the ranks of options it knows, and gives up on anything else", (t) => {
  t.is(launchRanks([APP]), 1);
  t.is(launchRanks(["-n", "4", APP, "-n", "9"]), 4);
  t.is(launchRanks(["--np=3", "--stats", "--pool", "centralized", "--timeout=5", APP]), 3);
  t.is(launchRanks(["--dashboard", "--dashboard=8080", "-n", "2", "--", APP]), 2);
  for (const cold of [
    ["--help", APP],
    ["-n", "2", "--node-arg=--cpu-prof", APP],
    ["-x", "FOO=1", APP],
    ["-H", "a:2", APP],
    ["--hostfile", "hosts", APP],
    ["--bogus", APP],
    ["--stats=1", APP],
    ["-n", "two", APP],
    ["-n", "0", APP],
    ["-n"],
    ["-n", "2"],
    ["-n", "2", "test/fixtures/no-such-app.mjs"],
  ]) {
    t.is(launchRanks(cold), undefined, cold.join(" "));
  }
});

test("every option of launch --help is one the scan reads, or one that starts its ranks cold", async (t) => {
  const r = await startWorkpool(["launch", "--help"]).result;
  t.is(r.code, 0);
  // "  -n, --np N   ...", "      --force   ...", "  -x VAR[=VALUE]   ...": the option, and whether a value follows.
  const options = [...r.stdout.matchAll(/^ {2}(?:-\w, )? *(-{1,2}[\w-]+)(?:\[=\w+\])?( [A-Z])?/gm)].map((m) => ({
    option: m[1] as string,
    value: m[2] !== undefined,
  }));
  t.true(options.length >= 20, JSON.stringify(options));
  const cold = new Set(["--help", "--node-arg", "-x", "--hostfile", "--host"]);
  for (const { option, value } of options) {
    if (cold.has(option)) t.is(launchRanks([option, "v", APP]), undefined, option);
    else t.is(launchRanks(value ? [option, "1", APP] : [option, APP]), 1, `${option}${value ? " VALUE" : ""}`);
  }
});

test("a rank's node arguments are served warm only as HEAP --import URL... APP ARGS", (t) => {
  const heap = ["--initial-old-space-size=64"];
  const boot = "file:///p/dist/lib/control/boot.js";
  const preload = "file:///p/dist/lib/control/preload.js";
  t.deepEqual(parseRankArgv([...heap, "--import", boot, "--import", preload, "/a/app.mjs", "x", "--y"], heap), {
    nodeArgs: [...heap, "--import", boot, "--import", preload],
    imports: [boot, preload],
    app: "/a/app.mjs",
    args: ["x", "--y"],
  });
  t.is(parseRankArgv(["--import", boot, "/a/app.mjs"], heap), undefined, "another heap");
  t.is(parseRankArgv([...heap, "--enable-source-maps", "--import", boot, "/a/app.mjs"], heap), undefined);
  t.is(parseRankArgv([...heap, "--import", "tsx/esm", "/a/app.ts"], heap), undefined, "a bare specifier");
  t.is(parseRankArgv([...heap, "--import", boot, "/a/app.txt"], heap), undefined);
  t.true(sameBesideJob({ A: "1", WORKPOOL_FROM: "dist" }, { A: "1", WORKPOOL_FROM: "dist", WORKPOOL_RANK: "0" }));
  t.false(sameBesideJob({ A: "1" }, { A: "2", WORKPOOL_RANK: "0" }));
  t.false(sameBesideJob({ A: "1", B: "" }, { A: "1" }));
});

/** The lines of `launch --no-prefix ARGS`, each parsed, by their rank or order. */
async function run(args: string[], env?: NodeJS.ProcessEnv): Promise<Record<string, unknown>[]> {
  const r = await startWorkpool(["launch", "--no-prefix", ...args], env).result;
  if (r.code !== 0) throw new Error(`status ${r.code}: ${r.stderr}`);
  return linesOf(r.stdout)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .sort((a, b) => Number(a.rank) - Number(b.rank));
}

warmTest(`a warm rank gets the arguments, node options and environment a cold one gets${UNBUILT}`, async (t) => {
  const env = { WPTEST_VALUE: "a b", WPTEST_EMPTY: "" };
  const warm = await run(["-n", "2", APP, "one", "--two"], env);
  const cold = await run(["-n", "2", "-x", "WPTEST_COLD=1", APP, "one", "--two"], env);
  t.is(warm.length, 2);
  // At least one core, so at least rank 0 is started warm; with -x, none is.
  t.true(warm[0]?.warm, JSON.stringify(warm[0]));
  t.true(cold.every((c) => c.warm === false));
  for (const [rank, w] of warm.entries()) {
    t.deepEqual({ ...w, warm: false }, cold[rank], `rank ${rank}`);
    t.deepEqual(w.argv, [`${process.cwd()}/${APP}`, "one", "--two"]);
    t.like(w.env, { WPTEST_VALUE: "a b", WPTEST_EMPTY: "", WORKPOOL_RANK: String(rank), WORKPOOL_SIZE: "2" });
  }
});

test("WORKPOOL_WARM=0 starts every rank cold", async (t) => {
  const ranks = await run(["-n", "2", APP], { WORKPOOL_WARM: "0" });
  t.deepEqual(
    ranks.map((r) => r.warm),
    [false, false],
  );
});

warmTest(
  `a warm CommonJS app is node's main module, and its throw at load fails the job as a cold one's does${UNBUILT}`,
  async (t) => {
    const [warm] = await run([CJS, "x"]);
    t.deepEqual(warm, { main: true, argv: [`${process.cwd()}/${CJS}`, "x"], warm: true });
    const [failWarm, failCold] = await Promise.all([
      startWorkpool(["launch", CJS, "throw"]).result,
      startWorkpool(["launch", "-x", "WPTEST_COLD=1", CJS, "throw"]).result,
    ]);
    t.is(failWarm.code, 1);
    t.is(failCold.code, 1);
    t.is(linesOf(failWarm.stderr).at(-1), "workpool: rank 0 failed (exit code 1): Error: thrown while loading (warm)");
    t.is(linesOf(failCold.stderr).at(-1), "workpool: rank 0 failed (exit code 1): Error: thrown while loading (cold)");
  },
);

test("warm processes of a launcher that refuses its options end with it", async (t) => {
  const mark = `warm-${process.pid}-${Date.now()}`;
  const args = ["-n", "2", "--pool", "nonsense", APP];
  t.is(launchRanks(args), 2, "the scan starts warm ranks for this command line");
  const r = await startWorkpool(["launch", ...args], { WPTEST_MARK: mark }).result;
  t.is(r.code, 2, r.stderr);
  const marked = () =>
    readdirSync("/proc").filter((pid) => {
      try {
        return /^\d+$/.test(pid) && readFileSync(`/proc/${pid}/environ`, "latin1").includes(`WPTEST_MARK=${mark}\0`);
      } catch {
        return false;
      }
    });
  t.true(await until(() => marked().length === 0), `left: ${marked().join(" ")}`);
});

// endWarm kills the warm processes no rank took and resolves once they have exited and been collected, so that a
// launcher that refuses its command line leaves no <defunct> process for init to collect.
test("endWarm ends the warm processes no rank took and collects them before it resolves", async (t) => {
  const before = childrenOf(process.pid);
  startWarm(["-n", "2", APP], { ...process.env, NODE_OPTIONS: "", WORKPOOL_WARM: "1" }, 2);
  const started = childrenOf(process.pid).filter((pid) => !before.includes(pid));
  t.is(started.length, 2, "two warm processes, one a core");
  await endWarm();
  t.deepEqual(
    childrenOf(process.pid).filter((pid) => started.includes(pid)),
    [],
    "not even a zombie is left",
  );
});
