// The launcher's deadlock check (launcher/stalls.ts), in-process, on reports as ranks send them: it declares a
// deadlock only when every rank's last report says it waits, each read what the launcher sent it, and no message
// is on its way; a rank's report from before the message that woke it cannot fool it.
import test from "ava";
import { Stalls } from "../../launcher/stalls.ts";
import { readRankRecord, type WaitsRecord } from "../../lib/internal-start.ts";

function stalls(np: number) {
  const declared: string[] = [];
  const told = new Array<number>(np).fill(0);
  const state = { died: false, running: new Array<boolean>(np).fill(true) };
  const s = new Stalls({
    np,
    running: (rank) => state.running[rank] === true,
    anyDied: () => state.died,
    toldTo: (rank) => told[rank] ?? 0,
    where: (rank) => `rank ${rank}`,
    deadlock: (reason) => declared.push(reason),
  });
  return { s, declared, told, state };
}

let seq = 0;
/** A report: waits `w`, messages handed to others `o` (by rank), `i` received, `l` launcher records read. */
function waits(w: string[], o: Record<number, number> = {}, i = 0, l = 0, q: string[] = []): WaitsRecord {
  return { t: "waits", s: ++seq, w, q, o: Object.entries(o).flatMap(([r, n]) => [Number(r), n]), i, l };
}

test("every rank waits and nothing is on its way: a deadlock, naming each rank's waits and held messages", (t) => {
  const { s, declared } = stalls(2);
  s.waits(0, waits(["barrier (from rank 1)"], { 1: 1 }, 0));
  t.deepEqual(declared, []);
  s.waits(1, waits(["recv (from rank 0, tag 6)"], {}, 1, 0, ["from rank 0, tag 5"]));
  t.is(declared.length, 1);
  t.is(
    declared[0],
    "workpool: deadlock: every rank waits for a message, and none is on its way, so none will come (a send and a " +
      "receive that do not match, or a collective some rank did not call):\n" +
      "  rank 0 waits in barrier (from rank 1)\n" +
      "  rank 1 waits in recv (from rank 0, tag 6); it holds messages no receive took: from rank 0, tag 5",
  );
  // Once.
  s.waits(1, waits(["recv (from rank 0, tag 6)"], {}, 1));
  t.is(declared.length, 1);
});

test("a message on its way: no deadlock, until it has arrived", (t) => {
  const { s, declared } = stalls(2);
  s.waits(0, waits(["recv (from rank 1)"], { 1: 2 }, 0));
  s.waits(1, waits(["recv (from rank 0, tag 9)"], {}, 1));
  t.deepEqual(declared, []);
  s.waits(1, waits(["recv (from rank 0, tag 9)"], {}, 2));
  t.is(declared.length, 1);
});

test("a report from before the message that woke its rank does not make a deadlock (the count tells)", (t) => {
  // Rank 1 reported that it waits, having received 3. Rank 0 then sent it a 4th (which woke it) and reports
  // that it waits too: rank 1's report is stale, and its count says so.
  const { s, declared } = stalls(3);
  s.waits(1, waits(["recv (from rank 0)"], { 0: 3 }, 3));
  s.waits(2, waits(["recv (from rank 0, tag 2)"], {}, 0));
  s.waits(0, waits(["recv (from rank 1)"], { 1: 4 }, 3));
  t.deepEqual(declared, []);
  // Rank 1 answered (its 4th to rank 0) and waits again: rank 0's report is now the stale one.
  s.waits(1, waits(["recv (from rank 0)"], { 0: 4 }, 4));
  t.deepEqual(declared, []);
  s.waits(0, waits(["recv (from rank 1)"], { 1: 4 }, 4));
  t.is(declared.length, 1);
});

test("a rank that no longer waits, or has launcher records still to read, or a report older than the last: no deadlock", (t) => {
  const { s, declared, told } = stalls(2);
  s.waits(0, waits(["barrier (from rank 1)"]));
  const old = waits(["barrier (from rank 0)"]);
  s.waits(1, waits([]));
  s.waits(1, old);
  t.deepEqual(declared, [], "an older report than the last is ignored");
  told[1] = 1;
  s.waits(1, waits(["barrier (from rank 0)"], {}, 0, 0));
  t.deepEqual(declared, [], "a launcher record (a rank's leave notice, say) may still wake rank 1");
  s.waits(1, waits(["barrier (from rank 0)"], {}, 0, 1));
  t.is(declared.length, 1);
});

test("no deadlock is declared once a rank died, or while a rank is not running", (t) => {
  const died = stalls(2);
  died.state.died = true;
  died.s.waits(0, waits(["recv (from rank 1)"]));
  died.s.waits(1, waits(["recv (from rank 0)"]));
  t.deepEqual(died.declared, []);
  const gone = stalls(2);
  gone.state.running[1] = false;
  gone.s.waits(0, waits(["recv (from rank 1)"]));
  gone.s.waits(1, waits(["recv (from rank 0)"]));
  t.deepEqual(gone.declared, []);
});

test("for --timeout: the ranks whose last report says they wait, and no other", (t) => {
  const { s, declared, state } = stalls(3);
  s.waits(0, waits(["recv (from rank 1, tag 9)"], { 1: 1 }, 0, 0, ["from rank 2, tag 4"]));
  s.waits(1, waits(["barrier (from rank 0; collective step 2)"], {}, 1));
  s.waits(1, waits([]));
  s.waits(2, waits(["recv (from rank 0)"]));
  state.running[2] = false;
  t.deepEqual(declared, []);
  t.deepEqual(s.waiting(), [
    "  rank 0 waits in recv (from rank 1, tag 9); it holds messages no receive took: from rank 2, tag 4",
  ]);
  // Rank 1 said it no longer waits (and rank 2 has exited): it is the one to look at.
  t.is(
    s.others(),
    "ranks still busy (running their own code, or waiting on a timer, a file or a socket rather than on " +
      "messages; ranks tell every second): rank 1",
  );
  s.waits(1, waits(["recv (from rank 0)"]));
  t.is(s.others(), undefined, "every rank still running waits on messages");
});

test("many ranks: the message lists the first 16 and counts the rest", (t) => {
  const { s, declared } = stalls(40);
  for (let r = 0; r < 40; r++) s.waits(r, waits([`barrier (from rank ${(r + 1) % 40})`]));
  t.is(declared.length, 1);
  const lines = (declared[0] as string).split("\n");
  t.is(lines.length, 18);
  t.is(lines.at(-1), "  (and 24 more ranks)");
});

test("a waits record is checked: counts for ranks that exist, texts of bounded length", (t) => {
  const good = { t: "waits", s: 1, w: ["recv (from rank 1)"], q: [], o: [1, 5], i: 2, l: 0 };
  t.deepEqual(readRankRecord(good, 2), good);
  for (const bad of [
    { ...good, o: [2, 5] },
    { ...good, o: [1] },
    { ...good, o: [1, -1] },
    { ...good, w: "recv" },
    { ...good, w: ["x".repeat(501)] },
    { ...good, s: "1" },
    { ...good, i: 1.5 },
  ]) {
    t.regex(readRankRecord(bad, 2) as string, /^a waits record without/, JSON.stringify(bad));
  }
});
