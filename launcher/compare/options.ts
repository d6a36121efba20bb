/** `workpool compare`'s command line: its options, checked, and the pools it compares when given none. */
import { DISTRIBUTED_COMBINATIONS, distributedSpec, resolvePoolConfig } from "../../lib/internal.ts";
import { resolveApp } from "../app-path.ts";
import { OptionReader } from "../argv.ts";
import { checkOutputFile, checkOutputFolder } from "../output-path.ts";
import { UsageError } from "../usage-error.ts";
import type { CompareOptions } from "./types.ts";

/**
 * Centralized (the coordinator only deals, it also works, and the seed slides' protocol where every put goes
 * to the coordinator) plus every distributed combination of the strategy registries.
 */
export function defaultPools(): string[] {
  const out = ["centralized", "centralized,coordinatorWorks=true", "centralized,keep=0"];
  for (const c of DISTRIBUTED_COMBINATIONS) {
    out.push(distributedSpec(c));
  }
  return out;
}

/** `-n 4` or `-n 2,4,8`: ascending, without repeats. */
function rankList(flag: string, raw: string, max: number): number[] {
  const parts = raw.split(",").map((p) => p.trim());
  if (parts.some((p) => !/^\d+$/.test(p) || Number(p) < 1 || Number(p) > max)) {
    throw new UsageError(
      `option ${flag} must be a whole number from 1 to ${max}, or a comma-separated list of them; got ${JSON.stringify(raw)}`,
    );
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
}

export function parseCompareArgs(argv: readonly string[], maxRanks: number): CompareOptions | "help" {
  let ranks = [2];
  const pools: string[] = [];
  const ignore: string[] = [];
  let repeat = 3;
  let report: string | undefined;
  let traceDir: string | undefined;
  let timeoutSeconds: number | undefined;
  let baseline: string | undefined;
  const launchArgs: string[] = [];
  const opts = new OptionReader(argv);
  for (let flag = opts.next(); flag !== undefined; flag = opts.next()) {
    switch (flag) {
      case "-h":
      case "--help":
        return "help";
      case "-n":
      case "--np":
        ranks = rankList(flag, opts.value(flag), maxRanks);
        break;
      case "--pool":
        pools.push(opts.value(flag));
        break;
      case "--repeat":
        repeat = opts.int(flag, 1, 1000);
        break;
      case "--report":
        report = opts.value(flag);
        break;
      case "--trace-dir":
        traceDir = opts.value(flag);
        break;
      case "--timeout":
        timeoutSeconds = opts.seconds(flag);
        break;
      case "--ignore": {
        const key = opts.value(flag);
        if (key === "") throw new UsageError("option --ignore needs a result key; got an empty string");
        ignore.push(key);
        break;
      }
      case "--hostfile":
      case "-H":
      case "--host":
      case "--agent":
      case "-x":
        launchArgs.push(flag, opts.value(flag));
        break;
      case "--oversubscribe":
        launchArgs.push(flag);
        break;
      case "--baseline":
        baseline = opts.value(flag);
        if (baseline.trim() === "") throw new UsageError("option --baseline needs a command; got an empty string");
        break;
      default:
        opts.unknown(flag, "compare");
    }
  }
  for (const spec of pools) {
    for (const np of ranks) {
      try {
        resolvePoolConfig(undefined, spec, np);
      } catch (e) {
        const at = ranks.length > 1 ? ` (at -n ${np})` : "";
        throw new UsageError(`option --pool: ${(e as Error).message}${at}`);
      }
    }
  }
  const { app, args } = opts.app("compare");
  const appFile = resolveApp(app);
  if (report !== undefined) checkOutputFile("--report", report);
  if (traceDir !== undefined) checkOutputFolder("--trace-dir", traceDir);
  return {
    ranks,
    pools: pools.length > 0 ? [...new Set(pools)] : defaultPools(),
    repeat,
    report,
    traceDir,
    timeoutSeconds,
    ignore,
    baseline,
    launchArgs,
    app: appFile,
    args,
  };
}
