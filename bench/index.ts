/**
 * The benchmark dispatcher: `npm run bench` runs every registered suite, `npm run bench -- comm pool` only
 * those named; options after a suite's name are that suite's (`npm run bench -- apps --graph my.gr`). A suite
 * is one file `bench/<name>.ts` exporting `suite: Suite` (see harness.ts) plus one line in SUITES below.
 */
import { BenchUsageError, formatTable, machineFacts, type Suite } from "./harness.ts";

const SUITES: Record<string, () => Promise<Suite>> = {
  comm: async () => (await import("./comm.ts")).suite,
  pool: async () => (await import("./pool.ts")).suite,
  apps: async () => (await import("./apps.ts")).suite,
  trees: async () => (await import("./trees.ts")).suite,
  startup: async () => (await import("./startup.ts")).suite,
  hosts: async () => (await import("./hosts.ts")).suite,
  faults: async () => (await import("./faults.ts")).suite,
  strategies: async () => (await import("./strategies.ts")).suite,
  loops: async () => (await import("./loops.ts")).suite,
  defaults: async () => (await import("./defaults.ts")).suite,
  tasks: async () => (await import("./tasks.ts")).suite,
  map: async () => (await import("./map.ts")).suite,
  longtasks: async () => (await import("./longtasks.ts")).suite,
  "node-tasks": async () => (await import("./node-tasks.ts")).suite,
  scale: async () => (await import("./scale.ts")).suite,
  dashboard: async () => (await import("./dashboard.ts")).suite,
};

const USAGE = `Usage: npm run bench [-- <suite> [options]...]

Runs the named benchmark suites, or all of them: ${Object.keys(SUITES).join(", ")}. Options after a suite's
name go to that suite.
`;

/**
 * Splits the command line into suites and their options: a suite's name starts a group, and every option after
 * it (a word starting with `-`, with the word after it as its value unless that starts with `-` too) is that
 * suite's. No suite named: every suite, with no options.
 */
function parseCommandLine(argv: readonly string[]): [name: string, args: string[]][] {
  const groups: [string, string[]][] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i] as string;
    if (word.startsWith("-")) {
      const group = groups.at(-1);
      if (!group) throw new BenchUsageError(`option ${word} comes before any suite name (see --help)`);
      group[1].push(word);
      const value = argv[i + 1];
      if (!word.includes("=") && value !== undefined && !value.startsWith("-")) {
        group[1].push(value);
        i++;
      }
    } else if (Object.hasOwn(SUITES, word)) groups.push([word, []]);
    else throw new BenchUsageError(`unknown suite \`${word}\`; known: ${Object.keys(SUITES).join(", ")}`);
  }
  return groups.length > 0 ? groups : Object.keys(SUITES).map((name) => [name, []]);
}

async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes("-h") || argv.includes("--help")) {
    process.stdout.write(USAGE);
    for (const name of Object.keys(SUITES)) {
      const suite = await (SUITES[name] as () => Promise<Suite>)();
      process.stdout.write(`  ${name.padEnd(10)} ${suite.description}\n`);
      for (const line of suite.options ?? []) process.stdout.write(`           ${line}\n`);
    }
    return 0;
  }
  let groups: [string, string[]][];
  try {
    groups = parseCommandLine(argv);
    // Every suite checks its options before the first one starts: a typo fails at once, not after minutes.
    for (const [name, args] of groups) {
      const suite = await (SUITES[name] as () => Promise<Suite>)();
      if (args.length > 0 && !suite.options)
        throw new BenchUsageError(`suite ${name} takes no options; got ${args.join(" ")}`);
      suite.check?.(args);
    }
  } catch (e) {
    if (!(e instanceof BenchUsageError)) throw e;
    process.stderr.write(`bench: ${e.message}\n`);
    return 2;
  }

  for (const line of machineFacts()) process.stdout.write(`# ${line}\n`);
  const summary: string[][] = [["suite", "targets", "missed", "status"]];
  let failed = false;
  for (const [name, args] of groups) {
    const suite = await (SUITES[name] as () => Promise<Suite>)();
    process.stdout.write(`\n== ${suite.name}: ${suite.description}\n`);
    const started = performance.now();
    try {
      const report = await suite.run(args);
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      summary.push([name, String(report.targets), String(report.misses), `done in ${seconds} s`]);
    } catch (e) {
      failed = true;
      process.stderr.write(`bench ${name} failed: ${e instanceof Error ? e.message : String(e)}\n`);
      summary.push([name, "-", "-", "FAILED"]);
    }
  }
  if (groups.length > 1) process.stdout.write(`\n${formatTable(summary)}\n`);
  return failed ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
