import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Job folders live in the system's temporary folder under this prefix. */
const PREFIX = "wp-";
/** The file in a job folder that names the launcher owning it: `pid starttime`. */
const OWNER = "owner";

/** When process `pid` started (clock ticks since boot, /proc/PID/stat field 22); undefined if it is gone. */
function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}

/**
 * Makes this job's folder (ipc sockets, the control socket, traces) and writes who owns it. Before that,
 * removes the folders of launchers that died without cleaning up (killed together with their reaper): a
 * folder whose owner process is gone, or whose pid now belongs to a process started at another time.
 * Folders without an owner file, or that this user may not remove, are left alone.
 */
export function makeJobFolder(root = tmpdir()): string {
  removeStaleJobFolders(root);
  const dir = mkdtempSync(join(root, PREFIX));
  writeFileSync(join(dir, OWNER), `${process.pid} ${startTime(process.pid) ?? "?"}\n`);
  return dir;
}

/** Removes job folders under `root` that no live launcher owns; returns the ones removed. */
export function removeStaleJobFolders(root = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(root);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(root, name);
    let owner: string;
    try {
      owner = readFileSync(join(dir, OWNER), "utf8");
    } catch {
      continue;
    }
    const [pid, started] = owner.trim().split(" ");
    if (startTime(Number(pid)) === started) continue;
    try {
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      /* another user's, or being removed by someone else */
    }
  }
  return removed;
}
