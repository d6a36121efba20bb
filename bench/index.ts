/**
 * The benchmark dispatcher: `npm run bench` runs every registered suite, `npm run bench -- comm pool` only
 * those named. A suite is one file `bench/<name>.ts` exporting `suite: Suite` (see harness.ts) plus one line
 * in SUITES below.
 */
import { formatTable, machineFacts, type Suite } from "./harness.ts";

const SUITES: Record<string, () => Promise<Suite>> = {
  comm: async () => (await import("./comm.ts")).suite,
  pool: async () => (await import("./pool.ts")).suite,
  apps: async () => (await import("./apps.ts")).suite,
};

const USAGE = `Usage: npm run bench [-- <suite>...]

Runs the named benchmark suites, or all of them: ${Object.keys(SUITES).join(", ")}.
`;

async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes("-h") || argv.includes("--help")) {
    process.stdout.write(USAGE);
    for (const name of Object.keys(SUITES)) {
      const suite = await (SUITES[name] as () => Promise<Suite>)();
      process.stdout.write(`  ${name.padEnd(8)} ${suite.description}\n`);
    }
    return 0;
  }
  const names = argv.length > 0 ? [...argv] : Object.keys(SUITES);
  const unknown = names.filter((n) => !Object.hasOwn(SUITES, n));
  if (unknown.length > 0) {
    process.stderr.write(
      `bench: unknown suite ${unknown.map((n) => `\`${n}\``).join(", ")}; known: ${Object.keys(SUITES).join(", ")}\n`,
    );
    return 2;
  }

  for (const line of machineFacts()) process.stdout.write(`# ${line}\n`);
  const summary: string[][] = [["suite", "targets", "missed", "status"]];
  let failed = false;
  for (const name of names) {
    const suite = await (SUITES[name] as () => Promise<Suite>)();
    process.stdout.write(`\n== ${suite.name}: ${suite.description}\n`);
    const started = performance.now();
    try {
      const report = await suite.run();
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      summary.push([name, String(report.targets), String(report.misses), `done in ${seconds} s`]);
    } catch (e) {
      failed = true;
      process.stderr.write(`bench ${name} failed: ${e instanceof Error ? e.message : String(e)}\n`);
      summary.push([name, "-", "-", "FAILED"]);
    }
  }
  if (names.length > 1) process.stdout.write(`\n${formatTable(summary)}\n`);
  return failed ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
