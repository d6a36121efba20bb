import { lstatSync, mkdirSync, type Stats } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * This user's private folder under the system's temporary folder, `<tmpdir>/workpool-<uid>` (mode 0700), where
 * the launcher keeps job folders and ranks started by mpirun or srun on one host meet. As tmux keeps its sockets
 * in `/tmp/tmux-<uid>` and OpenSSH's agent its socket in a 0700 folder: in a shared `/tmp`, another user can
 * neither plant a file or a folder there, nor swap one for a symbolic link, nor connect to a socket in it.
 */

/** Permission bits that let users other than the owner read, write or enter. */
const GROUP_OR_OTHER = 0o077;

/** This process's user id (-1 where the platform has none, which no file is owned by). */
export function userId(): number {
  return process.getuid?.() ?? -1;
}

/**
 * Why `stats` (from lstat or fstat) is not `kind` of this user's that nobody else may read or write, or
 * undefined if it is one.
 */
export function notPrivate(stats: Stats, kind: "folder" | "file" = "folder"): string | undefined {
  if (stats.isSymbolicLink()) return "is a symbolic link";
  if (kind === "folder" ? !stats.isDirectory() : !stats.isFile()) return `is not a ${kind}`;
  if (stats.uid !== userId()) return `is owned by uid ${stats.uid}, not this user (uid ${userId()})`;
  if ((stats.mode & GROUP_OR_OTHER) !== 0) {
    const expected = kind === "folder" ? "0700" : "0600";
    return `has mode ${(stats.mode & 0o777).toString(8).padStart(4, "0")}, which lets other users in (${expected} expected)`;
  }
  return undefined;
}

/**
 * This user's private folder under `root`, made (mode 0700) if missing; or why it cannot be used. Never changes
 * the mode or owner of a folder that is already there: one that fails the checks may be another user's.
 */
export function privateFolder(root = tmpdir()): { readonly dir: string } | { readonly why: string } {
  const dir = join(root, `workpool-${userId()}`);
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST")
      return { why: `${dir} cannot be made: ${(e as Error).message}` };
  }
  let stats: Stats;
  try {
    stats = lstatSync(dir);
  } catch (e) {
    return { why: `${dir} cannot be read: ${(e as Error).message}` };
  }
  const why = notPrivate(stats);
  return why === undefined ? { dir } : { why: `${dir} ${why}` };
}
