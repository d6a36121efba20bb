// The hosts of a job as the command line gives them (launcher/hosts.ts): hostfiles and -H lists, where ranks go,
// the agent's command line, -x, which hosts are this machine; and the launcher's usage errors for them.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, networkInterfaces, tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import {
  forwardVariable,
  isLocalHost,
  parseHostfile,
  parseHostList,
  placeRanks,
  splitCommand,
  totalSlots,
} from "../../launcher/hosts.ts";
import { UsageError } from "../../launcher/usage-error.ts";
import { fixture, linesOf, run, startWorkpool } from "../helpers/run.ts";

const HELLO = fixture("hello.ts");

/** Checks that `fn` throws a UsageError whose message is `message` (a string: exactly; a RegExp: matching). */
function usageError(t: ExecutionContext, fn: () => unknown, message: string | RegExp): void {
  const e = t.throws(fn, { instanceOf: UsageError });
  if (typeof message === "string") t.is(e?.message, message);
  else t.regex(e?.message ?? "", message);
}

// --- hostfiles ----------------------------------------------------------------------------------------------

test("parseHostfile: hosts in order, slots=N (or one), max_slots=M a cap, comments and blank lines skipped, a host named twice adds up", (t) => {
  const text = [
    "# the cluster",
    "node1 slots=4",
    "",
    "   node2   # one slot",
    "\tnode3 slots=2\t",
    "node1 slots=2 # four more on node1? two",
    "10.0.0.7 max_slots=3",
    "[fe80::1] max-slots=1",
    "node4\r",
    "# done",
  ].join("\n");
  t.deepEqual(parseHostfile(text, "hosts.txt"), [
    { name: "node1", slots: 6 },
    { name: "node2", slots: 1 },
    { name: "node3", slots: 2 },
    { name: "10.0.0.7", slots: 1, maxSlots: 3 },
    { name: "[fe80::1]", slots: 1, maxSlots: 1 },
    { name: "node4", slots: 1 },
  ]);
});

const BAD_HOSTFILES: readonly [string, string, string][] = [
  [
    "a word that is not slots=N",
    "a\nb cpus=2\n",
    'hostfile F, line 2: expected HOST slots=N [max_slots=M]; got "b cpus=2"',
  ],
  ["max_slots below slots", "a slots=4 max_slots=2", "hostfile F, line 1: max_slots=2 is less than slots=4"],
  ["slots=0", "# x\n\na slots=0\n", "hostfile F, line 3: slots must be a whole number from 1 to 65536; got 0"],
  ["too many slots", "a slots=65537", "hostfile F, line 1: slots must be a whole number from 1 to 65536; got 65537"],
  [
    "slots = N with blanks",
    "a slots = 2",
    'hostfile F, line 1: expected HOST slots=N [max_slots=M]; got "a slots = 2"',
  ],
  ["a host name with a slash", "ok\nuser@host/x", 'hostfile F, line 2: "user@host/x" is not a host name'],
  ["only comments", "# nothing\n\n   # here\n", "hostfile F names no host"],
  ["an empty file", "", "hostfile F names no host"],
];

for (const [what, text, message] of BAD_HOSTFILES) {
  test(`parseHostfile refuses ${what}, naming the file and the line`, (t) => {
    usageError(t, () => parseHostfile(text, "F"), message);
  });
}

// --- -H lists -----------------------------------------------------------------------------------------------

test("parseHostList: HOST:SLOTS or HOST (one slot), IPv6 in brackets, blanks around items, repeats add up", (t) => {
  t.deepEqual(parseHostList("a:8,b:8,c"), [
    { name: "a", slots: 8 },
    { name: "b", slots: 8 },
    { name: "c", slots: 1 },
  ]);
  t.deepEqual(parseHostList("[::1]:2, 10.0.0.2 ,[fe80::2]"), [
    { name: "[::1]", slots: 2 },
    { name: "10.0.0.2", slots: 1 },
    { name: "[fe80::2]", slots: 1 },
  ]);
  t.deepEqual(parseHostList("a:2,b,a:3"), [
    { name: "a", slots: 5 },
    { name: "b", slots: 1 },
  ]);
  t.is(totalSlots(parseHostList("a:2,b,c:5")), 8);
});

for (const [list, message] of [
  ["a,,b", 'option --host "a,,b": expected HOST or HOST:SLOTS; got ""'],
  ["a:0", 'option --host "a:0": slots must be a whole number from 1 to 65536; got 0'],
  ["a:x", 'option --host "a:x": expected HOST or HOST:SLOTS; got "a:x"'],
  ["a:2:3", 'option --host "a:2:3": expected HOST or HOST:SLOTS; got "a:2:3"'],
  ["::1:2", 'option --host "::1:2": expected HOST or HOST:SLOTS; got "::1:2"'],
  ["a b:2", 'option --host "a b:2": "a b" is not a host name'],
] as const) {
  test(`parseHostList refuses ${JSON.stringify(list)}`, (t) => {
    usageError(t, () => parseHostList(list), message);
  });
}

// --- placement ----------------------------------------------------------------------------------------------

const HOSTS = parseHostList("a:2,b:1,c:3");

test("placeRanks fills the hosts in order, each up to its slots, rank 0 on the first", (t) => {
  t.deepEqual(placeRanks(HOSTS, 1, false), ["a"]);
  t.deepEqual(placeRanks(HOSTS, 3, false), ["a", "a", "b"]);
  t.deepEqual(placeRanks(HOSTS, 4, false), ["a", "a", "b", "c"]);
  t.deepEqual(placeRanks(HOSTS, 6, false), ["a", "a", "b", "c", "c", "c"]);
  t.deepEqual(placeRanks(HOSTS, 6, true), ["a", "a", "b", "c", "c", "c"], "--oversubscribe changes nothing that fits");
});

test("placeRanks with oversubscribe deals the ranks beyond the slots round-robin, ranks of a host together", (t) => {
  t.deepEqual(placeRanks(HOSTS, 7, true), ["a", "a", "a", "b", "c", "c", "c"]);
  t.deepEqual(placeRanks(HOSTS, 9, true), ["a", "a", "a", "b", "b", "c", "c", "c", "c"]);
  t.deepEqual(placeRanks(parseHostList("x"), 3, true), ["x", "x", "x"]);
});

test("max_slots=M caps what --oversubscribe puts on a host; it never adds slots", (t) => {
  const hosts = parseHostfile("a slots=2 max_slots=3\nb max_slots=4\nc slots=1", "F");
  t.deepEqual(hosts, [
    { name: "a", slots: 2, maxSlots: 3 },
    { name: "b", slots: 1, maxSlots: 4 },
    { name: "c", slots: 1 },
  ]);
  usageError(t, () => placeRanks(hosts, 5, false), /^5 ranks do not fit in the 4 slots of a:2,b:1,c:1;/);
  t.deepEqual(placeRanks(hosts, 7, true), ["a", "a", "a", "b", "b", "c", "c"]);
  t.deepEqual(placeRanks(hosts, 10, true), ["a", "a", "a", "b", "b", "b", "b", "c", "c", "c"]);
  const capped = parseHostfile("a slots=1 max_slots=2\nb slots=1 max_slots=1", "F");
  usageError(
    t,
    () => placeRanks(capped, 4, true),
    "4 ranks do not fit under the hosts' max_slots (a:2,b:1), even with --oversubscribe",
  );
});

test("placeRanks refuses more ranks than slots without oversubscribe, saying what would help", (t) => {
  usageError(
    t,
    () => placeRanks(HOSTS, 7, false),
    "7 ranks do not fit in the 6 slots of a:2,b:1,c:3; give fewer ranks, more slots, or --oversubscribe",
  );
  usageError(t, () => placeRanks(parseHostList("x"), 2, false), /^2 ranks do not fit in the 1 slot of x:1;/);
});

// --- the agent's command line -------------------------------------------------------------------------------

test("splitCommand splits as a POSIX shell: blanks, quotes, backslashes, no expansion", (t) => {
  t.deepEqual(splitCommand("ssh -o BatchMode=yes  -o ConnectTimeout=8", "--agent"), [
    "ssh",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=8",
  ]);
  t.deepEqual(splitCommand(`ssh -o 'ProxyCommand=ssh -W %h:%p gw' -i "/keys/my key"`, "--agent"), [
    "ssh",
    "-o",
    "ProxyCommand=ssh -W %h:%p gw",
    "-i",
    "/keys/my key",
  ]);
  t.deepEqual(splitCommand(String.raw`a\ b 'it'\''s' "say \"hi\"" '' x""y $HOME`, "--agent"), [
    "a b",
    "it's",
    'say "hi"',
    "",
    "xy",
    "$HOME",
  ]);
  t.deepEqual(splitCommand(String.raw`"a\b" "c\\d" 'e\f' "\$x"`, "--agent"), [
    String.raw`a\b`,
    String.raw`c\d`,
    String.raw`e\f`,
    "$x",
  ]);
  t.deepEqual(splitCommand("\tdocker exec\n", "--agent"), ["docker", "exec"]);
});

test("splitCommand refuses an unclosed quote and an empty command, naming the option", (t) => {
  usageError(t, () => splitCommand(`ssh -o 'x`, "--agent"), `option --agent: unclosed ' in "ssh -o 'x"`);
  usageError(t, () => splitCommand(`ssh "x`, "--agent"), `option --agent: unclosed " in "ssh \\"x"`);
  usageError(t, () => splitCommand("  ", "--agent"), 'option --agent needs a command; got "  "');
});

// --- -x -----------------------------------------------------------------------------------------------------

test("forwardVariable: VAR takes the launcher's value, VAR=VALUE its own (= and blanks kept)", (t) => {
  const env = { HOME: "/root", EMPTY: "" };
  t.deepEqual(forwardVariable("HOME", env), ["HOME", "/root"]);
  t.deepEqual(forwardVariable("EMPTY", env), ["EMPTY", ""]);
  t.deepEqual(forwardVariable("HOME=/elsewhere", env), ["HOME", "/elsewhere"]);
  t.deepEqual(forwardVariable("OPTS=a=b c", env), ["OPTS", "a=b c"]);
  t.deepEqual(forwardVariable("_X1=", env), ["_X1", ""]);
});

test("forwardVariable refuses an unset VAR, a bad name, and the launcher's own WORKPOOL_ variables", (t) => {
  usageError(t, () => forwardVariable("NOPE", {}), "option -x: NOPE is not set in the launcher's environment");
  usageError(t, () => forwardVariable("1X=2", {}), 'option -x takes VAR or VAR=VALUE; "1X" is not a variable name');
  usageError(t, () => forwardVariable("=x", {}), 'option -x takes VAR or VAR=VALUE; "" is not a variable name');
  usageError(
    t,
    () => forwardVariable("WORKPOOL_KEY=x", {}),
    "option -x: WORKPOOL_KEY is set by the launcher for each rank, and cannot be forwarded",
  );
  usageError(t, () => forwardVariable("WORKPOOL_RANK", { WORKPOOL_RANK: "0" }), /^option -x: WORKPOOL_RANK is set/);
});

// --- this machine -------------------------------------------------------------------------------------------

test("isLocalHost: localhost, loopback, this machine's names and addresses; not another host", (t) => {
  for (const name of ["localhost", "LOCALHOST", "127.0.0.1", "::1", "[::1]", hostname(), hostname().toUpperCase()]) {
    t.true(isLocalHost(name), name);
  }
  t.true(isLocalHost(hostname().split(".")[0] as string), "the short host name");
  for (const a of Object.values(networkInterfaces()).flatMap((list) => list ?? [])) {
    t.true(isLocalHost(a.family === "IPv6" ? `[${a.address}]` : a.address), a.address);
  }
  // TEST-NET-1 and a reserved name: no machine has them.
  for (const name of ["192.0.2.1", "[2001:db8::1]", "example.invalid", `${hostname()}x`]) {
    t.false(isLocalHost(name), name);
  }
});

// --- the command line ---------------------------------------------------------------------------------------

let scratch: string | undefined;
/** A file in this file's temporary folder, with `text` in it. */
function file(name: string, text: string): string {
  scratch ??= mkdtempSync(join(tmpdir(), "wp-hosts-args-test-"));
  const path = join(scratch, name);
  writeFileSync(path, text);
  return path;
}
test.after.always(() => {
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

/** Runs `workpool launch args...`, which must fail as a usage error: status 2 and one stderr line, returned. */
async function usage(t: ExecutionContext, args: readonly string[]): Promise<string> {
  const r = await startWorkpool(["launch", ...args]).result;
  t.is(r.code, 2, r.stderr);
  t.is(r.stdout, "");
  t.is(linesOf(r.stderr).length, 1, r.stderr);
  return r.stderr.trim();
}

test("--hostfile that cannot be read: status 2, naming the file", async (t) => {
  const missing = join(tmpdir(), "wp-no-such-hostfile");
  t.regex(
    await usage(t, ["--hostfile", missing, HELLO]),
    new RegExp(`^workpool: option --hostfile: cannot read ${missing}: ENOENT`),
  );
});

test("a hostfile with a bad line: status 2, naming the file and the line", async (t) => {
  const bad = file("bad-hosts", "# ok\nnode1 slots=2\nnode2 slots=many\n");
  t.is(
    await usage(t, ["--hostfile", bad, HELLO]),
    `workpool: hostfile ${bad}, line 3: expected HOST slots=N [max_slots=M]; got "node2 slots=many"`,
  );
});

test("--hostfile and --host together: status 2, either order", async (t) => {
  const hosts = file("hosts", "node1\n");
  for (const args of [
    ["--hostfile", hosts, "-H", "node2"],
    ["--host", "node2", "--hostfile", hosts],
  ]) {
    t.is(await usage(t, [...args, HELLO]), "workpool: give the hosts once: --hostfile or --host, not both");
  }
});

test("more ranks than slots, a bad -x, a bad --agent: status 2 before any host is reached", async (t) => {
  // 192.0.2.1 (TEST-NET-1) answers nobody: reaching it would hang, not fail at once.
  t.regex(await usage(t, ["-H", "192.0.2.1:2", "-n", "3", HELLO]), /^workpool: 3 ranks do not fit in the 2 slots/);
  t.regex(await usage(t, ["-x", "WORKPOOL_POOL=centralized", HELLO]), /^workpool: option -x: WORKPOOL_POOL is set/);
  t.is(
    await usage(t, ["-H", "192.0.2.1", "--agent", "ssh -o 'x", HELLO]),
    `workpool: option --agent: unclosed ' in "ssh -o 'x"`,
  );
});

test("hosts that are all this machine run as a local job, without the agent", async (t) => {
  const r = await run(["-H", `localhost:1,${hostname()}:1`, "--agent", "false", HELLO]);
  t.is(r.code, 0, r.stderr);
  t.deepEqual(
    linesOf(r.stdout)
      .filter((l) => l.includes("hello"))
      .sort(),
    ["[0] hello from 0 of 2", "[1] hello from 1 of 2"],
  );
});
