// --trace and --stats (workpool compare and its report: compare.slow.test.ts).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { fixture, run } from "../helpers/run.ts";

const TREE = fixture("pool-tree.ts");

function scratch(): string {
  return mkdtempSync(join(tmpdir(), "wp-observe-"));
}

test("--trace writes Trace Event Format JSON with one track per rank", async (t) => {
  const dir = scratch();
  const file = join(dir, "trace.json");
  const r = await run(["-n", "4", "--pool", "centralized", "--trace", file, TREE, "5", "4"]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stderr, /^workpool: trace of 4 ranks written to \S+trace\.json \(\d+ events; open it in /m);
  const trace = JSON.parse(readFileSync(file, "utf8")) as {
    traceEvents: {
      ph: string;
      pid: number;
      name: string;
      args?: { name?: string };
      ts?: number;
      dur?: number;
      id?: string;
    }[];
  };
  const names = trace.traceEvents.filter((e) => e.ph === "M" && e.name === "process_name");
  t.deepEqual(
    names.map((e) => [e.pid, e.args?.name]),
    [0, 1, 2, 3].map((r) => [r, `rank ${r}`]),
  );
  for (const e of trace.traceEvents.filter((e) => e.ph !== "M")) {
    t.true(Number.isInteger(e.ts) && e.pid >= 0 && e.pid < 4, JSON.stringify(e));
  }
  // Every task of the tree (1365) is on a worker's track exactly once (which workers ran them is the
  // scheduler's business: a worker keeps the tasks it puts, and 1365 no-op tasks may all run on one before
  // the others ask); the coordinator's track shows dealing; every flow that starts also ends.
  const taskSpans = trace.traceEvents.filter((e) => e.ph === "X" && e.name.startsWith("task"));
  t.true(taskSpans.every((e) => e.pid >= 1 && e.pid <= 3));
  t.is(
    taskSpans.reduce((sum, e) => sum + ((e.args as { tasks?: number } | undefined)?.tasks ?? 0), 0),
    1365,
  );
  t.true(trace.traceEvents.some((e) => e.pid === 0 && e.name === "coordinating"));
  const starts = new Set(trace.traceEvents.filter((e) => e.ph === "s").map((e) => e.id));
  const ends = new Set(trace.traceEvents.filter((e) => e.ph === "f").map((e) => e.id));
  t.true(starts.size > 0);
  t.deepEqual([...ends].sort(), [...starts].sort());
  rmSync(dir, { recursive: true, force: true });
});

test("--trace: events the launcher cannot write are a warning and a trace without them, never the job's end", async (t) => {
  const dir = scratch();
  const file = join(dir, "trace.json");
  const r = await run(["-n", "2", "--trace", file, fixture("trace-folder-broken.ts")]);
  t.is(r.code, 0, r.stderr);
  t.is(r.stdout, "[0] total 5050\n");
  const lines = r.stderr.split("\n").filter((l) => l !== "");
  t.is(lines.filter((l) => l.startsWith("workpool: warning: could not write rank")).length, 1, r.stderr);
  t.regex(
    r.stderr,
    /^workpool: warning: could not write rank \d's trace events to the job folder \(ENOTDIR: .*\); the job goes on, the trace \S+ will lack them$/m,
  );
  t.regex(r.stderr, /^workpool: warning: trace \S+ lacks \d+ events of ranks? [\d, ]+ that could not be written$/m);
  const trace = JSON.parse(readFileSync(file, "utf8")) as { traceEvents: { ph: string }[] };
  t.deepEqual(
    trace.traceEvents.map((e) => e.ph),
    Array.from({ length: 6 }, () => "M"),
    "the ranks' tracks, without events",
  );
  rmSync(dir, { recursive: true, force: true });
});

test("--stats prints the per-rank table; no progress line when stderr is piped", async (t) => {
  const r = await run(["-n", "3", "--pool", "centralized", "--stats", TREE, "5", "4"]);
  t.is(r.code, 0, r.stderr);
  t.regex(r.stderr, /workpool: pool1 run 1 \(centralized\) statistics/);
  t.regex(r.stderr, /\nall\s+1,365\s+1,365\s/);
  t.notRegex(r.stderr, /tasks done/);
  t.false(r.stderr.includes("\r"));
});
