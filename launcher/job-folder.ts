import {
  closeSync,
  constants,
  lstatSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { notPrivate, privateFolder, userId } from "../lib/internal-start.ts";

/**
 * Job folders: where a job keeps its ipc sockets, its control socket and its traces.
 *
 * They live in a parent folder of this user's own, `<tmpdir>/workpool-<uid>`, of mode 0700, as tmux keeps its
 * sockets in `/tmp/tmux-<uid>` and OpenSSH's agent its socket in a 0700 folder: another user can neither
 * plant a folder there, nor swap one of its subfolders for a symbolic link, nor connect to a socket in it. The
 * parent is used only if it is a real folder (not a link), owned by this user, that nobody else may write to
 * or look into; a folder of that name that fails any of those checks (planted by another user in a shared
 * `/tmp`) is never used nor touched: the job then gets a fresh folder of its own made by `mkdtemp` (mode 0700,
 * a name nobody could have guessed) directly under the temporary folder, and skips the clean-up.
 *
 * The clean-up removes only what it can prove is its own: folders inside the private parent named `wp-*`
 * that are real folders owned by this user, whose `owner` file (opened without following links) names a
 * launcher that is gone. Nothing outside the private parent is ever removed.
 */

/** Job folders are named with this prefix. */
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
 * Makes this job's folder and writes who owns it, in this user's private parent under `root` (see above).
 * Before that, removes the folders there of launchers that died without cleaning up (killed together with
 * their reaper): a folder whose owner process is gone, or whose pid now belongs to a process started at
 * another time. `warn` is told when the private parent cannot be used, and the job's folder is then made with
 * `mkdtemp` directly under `root`, with no clean-up.
 */
export function makeJobFolder(root = tmpdir(), warn: (message: string) => void = warnOnce): string {
  const parent = privateFolder(root);
  let dir: string;
  if ("dir" in parent) {
    removeStaleJobFolders(parent.dir);
    dir = mkdtempSync(join(parent.dir, PREFIX));
  } else {
    warn(
      `workpool: ${parent.why}; not using it (another user may have made it). This job's folder is a new ` +
        `one of its own under ${root}, and stale job folders are not cleaned up; remove that folder, or set ` +
        "TMPDIR to a folder of your own",
    );
    dir = mkdtempSync(join(root, PREFIX));
  }
  writeFileSync(join(dir, OWNER), `${process.pid} ${startTime(process.pid) ?? "?"}\n`, { flag: "wx", mode: 0o600 });
  return dir;
}

let warned = false;
function warnOnce(message: string): void {
  if (warned) return;
  warned = true;
  process.stderr.write(`${message}\n`);
}

/** The text of `dir`'s owner file, read without following a link; undefined if it is not a plain file. */
function readOwner(dir: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(join(dir, OWNER), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    return readFileSync(fd, "utf8").slice(0, 64);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes the job folders in `parent` that no live launcher owns; returns the ones removed. Only `parent`
 * itself is trusted to be private (privateFolder checked it): an entry is removed only if it is a real
 * folder owned by this user, and `rmSync` unlinks links inside it without following them.
 */
export function removeStaleJobFolders(parent: string): string[] {
  const removed: string[] = [];
  const why = (() => {
    try {
      return notPrivate(lstatSync(parent));
    } catch (e) {
      return (e as Error).message;
    }
  })();
  if (why !== undefined) return removed;
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(parent, name);
    try {
      const stats = lstatSync(dir);
      if (!stats.isDirectory() || stats.uid !== userId()) continue;
    } catch {
      continue;
    }
    const owner = readOwner(dir);
    if (owner === undefined) continue;
    const [pid, started] = owner.trim().split(" ");
    if (!/^\d+$/.test(pid ?? "") || startTime(Number(pid)) === started) continue;
    try {
      rmSync(dir, { recursive: true, force: true });
      removed.push(dir);
    } catch {
      /* being removed by someone else */
    }
  }
  return removed;
}
