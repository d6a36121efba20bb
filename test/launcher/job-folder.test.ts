// Job folders (launcher/job-folder.ts) live in a private parent of this user's, `<tmpdir>/workpool-<uid>`
// (mode 0700). Folders left there by a launcher killed together with its reaper are removed by the next launch; a
// live launcher's folder is never touched; nothing outside the private parent is ever removed, whoever planted it.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test, { type ExecutionContext } from "ava";
import { makeJobFolder, removeStaleJobFolders } from "../../launcher/job-folder.ts";
import { privateFolder } from "../../lib/internal.ts";
import { needs } from "../helpers/needs.ts";
import { fixture, run } from "../helpers/run.ts";

/** The uid and gid of another user (nobody), as a tester on a shared machine would be. */
const NOBODY = 65534;
/** How many launches run while the attacker swaps (the tester saw 658 of 1,000 files go in 25). */
const LAUNCHES = 8;
const asRoot = needs(test, process.getuid?.() === 0 ? undefined : "needs root, to act as another user");

/** The pid of a process that has exited (so no process has it, barring reuse). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
  return Number(r.stdout.trim());
}

/** A fresh folder standing for the system's temporary folder, removed when the test ends. */
function scratch(t: ExecutionContext, mode = 0o700): string {
  const root = mkdtempSync(join(tmpdir(), "wp-test-root-"));
  chmodSync(root, mode);
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

/** A folder of `n` files owned by this user, that another user must never be able to get removed. */
function victim(root: string, n: number): string {
  const dir = join(root, "victim");
  mkdirSync(dir);
  for (let i = 0; i < n; i++) writeFileSync(join(dir, `f${i}`), "precious\n");
  return dir;
}

test("a job folder is made in a private parent of this user's, mode 0700, and names its owner", (t) => {
  const root = scratch(t);
  const dir = makeJobFolder(root);
  const parent = join(root, `workpool-${process.getuid?.()}`);
  t.is(join(dir, ".."), parent);
  t.is(lstatSync(parent).mode & 0o777, 0o700);
  t.is(lstatSync(dir).mode & 0o777, 0o700);
  t.regex(readFileSync(join(dir, "owner"), "utf8"), new RegExp(`^${process.pid} \\d+\\n$`));
});

test("a folder whose owner is gone, or whose pid was reused by a later process, is removed; others stay", (t) => {
  const root = scratch(t);
  const mine = makeJobFolder(root);
  const parent = join(mine, "..");
  const dead = join(parent, "wp-dead");
  mkdirSync(dead);
  writeFileSync(join(dead, "owner"), `${deadPid()} 12345\n`);
  writeFileSync(join(dead, "rendezvous"), "");
  const reused = join(parent, "wp-reused");
  mkdirSync(reused);
  writeFileSync(join(reused, "owner"), `${process.pid} 1\n`);
  const unowned = join(parent, "wp-unowned");
  mkdirSync(unowned);
  const other = join(parent, "other-dead");
  mkdirSync(other);
  writeFileSync(join(other, "owner"), `${deadPid()} 1\n`);
  const outside = join(root, "wp-outside");
  mkdirSync(outside);
  writeFileSync(join(outside, "owner"), `${deadPid()} 1\n`);
  t.deepEqual(removeStaleJobFolders(parent).sort(), [dead, reused].sort());
  t.true(existsSync(mine), "a live launcher's folder stays");
  t.true(existsSync(unowned), "a folder without an owner file stays");
  t.true(existsSync(other), "only wp- folders are looked at");
  t.true(existsSync(makeJobFolder(root)));
  t.true(existsSync(outside), "nothing outside the private parent is removed");
});

test("a link in the private parent is never followed: not as a job folder, nor as its owner file", (t) => {
  const root = scratch(t);
  const parent = join(makeJobFolder(root), "..");
  const files = victim(root, 10);
  writeFileSync(join(files, "owner"), `${deadPid()} 1\n`);
  symlinkSync(files, join(parent, "wp-link"));
  const ownerLink = join(parent, "wp-owner-link");
  mkdirSync(ownerLink);
  symlinkSync(join(files, "owner"), join(ownerLink, "owner"));
  t.deepEqual(removeStaleJobFolders(parent), []);
  t.is(readdirSync(files).length, 11);
  t.true(existsSync(ownerLink), "an owner file that is a link proves nothing");
});

for (const [what, plant] of [
  ["a link", (dir: string, root: string) => symlinkSync(mkdtempSync(join(root, "elsewhere-")), dir)],
  ["open to others (0755)", (dir: string) => mkdirSync(dir, { mode: 0o755 })],
  ["a file", (dir: string) => writeFileSync(dir, "")],
] as const) {
  test(`a private parent that is ${what} is neither used nor touched: the job gets a folder of its own`, (t) => {
    const root = scratch(t);
    const parent = join(root, `workpool-${process.getuid?.()}`);
    plant(parent, root);
    chmodSync(root, 0o700); // the umask may have narrowed the 0755 above: set it again
    if (what.startsWith("open")) chmodSync(parent, 0o755);
    const before = lstatSync(parent);
    t.true("why" in privateFolder(root));
    const warnings: string[] = [];
    const dir = makeJobFolder(root, (w) => warnings.push(w));
    t.is(join(dir, ".."), root, "made with mkdtemp beside it");
    t.is(lstatSync(dir).mode & 0o777, 0o700);
    t.is(warnings.length, 1);
    t.regex(
      warnings[0] as string,
      new RegExp(`^workpool: ${parent} (is a symbolic link|has mode 0755|is not a folder)`),
    );
    const after = lstatSync(parent);
    t.is(after.mode, before.mode, "its mode is left as it was");
    t.is(after.ino, before.ino);
  });
}

asRoot("a private parent another user made is not used: the job gets a folder of its own", (t) => {
  const root = scratch(t, 0o1777);
  const parent = join(root, `workpool-${process.getuid?.()}`);
  mkdirSync(parent, { mode: 0o700 });
  chownSync(parent, NOBODY, NOBODY);
  const warnings: string[] = [];
  const dir = makeJobFolder(root, (w) => warnings.push(w));
  t.is(join(dir, ".."), root);
  t.regex(warnings[0] as string, /is owned by uid 65534, not this user \(uid 0\)/);
});

/**
 * Another user's process that plants `<root>/wp-evil` with an owner file naming a dead launcher and a
 * subfolder, then swaps the subfolder for a link to `target` and back, as fast as it can, until its stdin ends.
 */
function attacker(root: string, target: string): ChildProcess {
  const code = `
    const fs = require("node:fs"), p = require("node:path");
    const evil = p.join(${JSON.stringify(root)}, "wp-evil"), sub = p.join(evil, "sub");
    fs.mkdirSync(evil, { recursive: true });
    fs.writeFileSync(p.join(evil, "owner"), "1 1\\n");
    let stop = false;
    process.stdin.on("end", () => { stop = true; }).resume();
    console.log("planted");
    const swap = () => {
      for (let i = 0; i < 200 && !stop; i++) {
        try { fs.mkdirSync(sub); fs.writeFileSync(p.join(sub, "x"), ""); } catch {}
        try { fs.rmSync(sub, { recursive: true, force: true }); fs.symlinkSync(${JSON.stringify(target)}, sub); } catch {}
        try { fs.unlinkSync(sub); } catch {}
      }
      if (!stop) setImmediate(swap);
    };
    swap();
  `;
  return spawn(process.execPath, ["-e", code], { uid: NOBODY, gid: NOBODY, stdio: ["pipe", "pipe", "inherit"] });
}

asRoot("another user's planted folder and symlink race remove nothing, over 8 real launches", async (t) => {
  // The tester's attack (issue 27): uid 65534 plants wp-evil/owner naming a dead pid in a world-writable
  // temporary folder and swaps a subfolder for a link to root's files while the launcher cleans up.
  const root = scratch(t, 0o1777);
  const files = victim(mkdtempSync(join(tmpdir(), "wp-test-victim-")), 1000);
  t.teardown(() => rmSync(join(files, ".."), { recursive: true, force: true }));
  const evil = attacker(root, files);
  t.teardown(() => evil.kill("SIGKILL"));
  const [planted] = (await once(evil.stdout!, "data")) as [Buffer];
  t.is(planted.toString().trim(), "planted");
  for (let i = 0; i < LAUNCHES; i++) {
    const r = await run(["-n", "1", fixture("hello.ts")], { TMPDIR: root });
    t.is(r.code, 0, r.stderr);
  }
  evil.stdin!.end();
  await once(evil, "exit");
  t.is(readdirSync(files).length, 1000, "every one of root's files is still there");
  t.true(existsSync(join(root, "wp-evil", "owner")), "the other user's folder is not the launcher's to remove");
  t.is(lstatSync(join(root, `workpool-${process.getuid?.()}`)).uid, 0);
});
