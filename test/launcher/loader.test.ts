/**
 * Each rank's old-generation headroom (launcher/heap.ts `rankHeapOptions`): given unless the app's node options
 * size the heap themselves, and smaller when many ranks share a machine.
 */
import test from "ava";
import { rankHeapOptions } from "../../launcher/heap.ts";

const GIB = 2 ** 30;

test("a rank gets --initial-old-space-size, at most 64 MiB and an eighth of memory over the ranks, or none", (t) => {
  t.deepEqual(rankHeapOptions([], 2, 24 * GIB), ["--initial-old-space-size=64"]);
  t.deepEqual(rankHeapOptions([], 64, 24 * GIB), ["--initial-old-space-size=48"]);
  t.deepEqual(rankHeapOptions([], 200, 24 * GIB), []);
  t.deepEqual(rankHeapOptions([], 1, 64 * 2 ** 20), []);
});

test("node options that size the heap, given to the ranks or in NODE_OPTIONS, leave it to them", (t) => {
  t.deepEqual(rankHeapOptions(["--max-old-space-size=3000"], 2, 24 * GIB), []);
  t.deepEqual(rankHeapOptions(["--stack-size=900", "--initial_old_space_size=8"], 2, 24 * GIB), []);
  t.deepEqual(rankHeapOptions(["--max-heap-size=100"], 2, 24 * GIB), []);
  t.deepEqual(rankHeapOptions(["--stack-size=900"], 2, 24 * GIB, "--max-old-space-size=200"), []);
  t.deepEqual(rankHeapOptions(["--stack-size=900"], 2, 24 * GIB, "--enable-source-maps"), [
    "--initial-old-space-size=64",
  ]);
});
