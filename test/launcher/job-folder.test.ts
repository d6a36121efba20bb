// Job folders left by a launcher killed together with its reaper are removed by the next launch; a live
// launcher's folder is never touched.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import test from "ava";
import { makeJobFolder, removeStaleJobFolders } from "../../launcher/job-folder.ts";

/** The pid of a process that has exited (so no process has it, barring reuse). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "console.log(process.pid)"], { encoding: "utf8" });
  return Number(r.stdout.trim());
}

test("a folder whose owner is gone, or whose pid was reused by a later process, is removed; others stay", (t) => {
  const root = mkdtempSync(join(tmpdir(), "wp-test-root-"));
  try {
    const mine = makeJobFolder(root);
    t.regex(readFileSync(join(mine, "owner"), "utf8"), new RegExp(`^${process.pid} \\d+\\n$`));
    const dead = join(root, "wp-dead");
    mkdirSync(dead);
    writeFileSync(join(dead, "owner"), `${deadPid()} 12345\n`);
    writeFileSync(join(dead, "rendezvous"), "");
    const reused = join(root, "wp-reused");
    mkdirSync(reused);
    writeFileSync(join(reused, "owner"), `${process.pid} 1\n`);
    const unowned = join(root, "wp-unowned");
    mkdirSync(unowned);
    const other = join(root, "other-dead");
    mkdirSync(other);
    writeFileSync(join(other, "owner"), `${deadPid()} 1\n`);
    t.deepEqual(removeStaleJobFolders(root).sort(), [dead, reused].sort());
    t.true(existsSync(mine), "a live launcher's folder stays");
    t.true(existsSync(unowned), "a folder without an owner file stays");
    t.true(existsSync(other), "only wp- folders are looked at");
    const next = makeJobFolder(root);
    t.true(existsSync(next));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
