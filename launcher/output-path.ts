import { accessSync, constants, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { UsageError } from "./usage-error.ts";

/**
 * Checks of the paths the launcher and compare write to (`--trace`, `--stats-json`, `--report`, `--trace-dir`),
 * made before any rank starts: a path that cannot be written is one line naming the option, the path and what
 * is wrong, and status 2, not a message after the whole run (with status 0) that its output was lost.
 */

/** What `stat` says about `path`: "file", "folder", "other", "missing", or the error code that kept it from saying. */
function kindOf(path: string): "file" | "folder" | "other" | "missing" | string {
  try {
    const s = statSync(path);
    return s.isDirectory() ? "folder" : s.isFile() ? "file" : "other";
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "error";
    return code === "ENOENT" ? "missing" : code === "ENOTDIR" ? "under a file" : code;
  }
}

function writable(path: string, mode = constants.W_OK): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

function refuse(flag: string, path: string, why: string): never {
  throw new UsageError(`option ${flag}: cannot write ${JSON.stringify(path)}: ${why}`);
}

/** The nearest folder of `path` that exists (it may be `path` itself), or why there is none. */
function folderOf(flag: string, path: string, start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    const kind = kindOf(dir);
    if (kind === "folder") {
      if (!writable(dir, constants.W_OK | constants.X_OK)) refuse(flag, path, `folder ${dir} is not writable`);
      return dir;
    }
    if (kind !== "missing" && kind !== "under a file") refuse(flag, path, `${dir} is not a folder`);
    if (dirname(dir) === dir) refuse(flag, path, "no folder of it exists");
  }
}

/**
 * Checks that `path`, given with `flag`, can be written as a file: not empty, not a folder, its folder exists
 * and may be written in (and the file too, when it exists). Throws a UsageError naming both.
 */
export function checkOutputFile(flag: string, path: string): void {
  if (path === "") throw new UsageError(`option ${flag} needs a file name; got an empty string`);
  const full = resolve(path);
  const kind = kindOf(full);
  if (kind === "folder") refuse(flag, path, "it is a folder; give a file name");
  if (kind === "file" || kind === "other") {
    if (!writable(full)) refuse(flag, path, "permission denied");
    return;
  }
  const parent = dirname(full);
  const parentKind = kindOf(parent);
  if (parentKind === "missing") refuse(flag, path, `folder ${parent} does not exist`);
  if (parentKind !== "folder") refuse(flag, path, `${parent} is not a folder`);
  if (!writable(parent, constants.W_OK | constants.X_OK)) refuse(flag, path, `folder ${parent} is not writable`);
}

/**
 * Checks that `path`, given with `flag`, is a folder that can be written in, or can be made (`mkdir -p`): the
 * nearest part of it that exists is a folder one may write in. Throws a UsageError naming both.
 */
export function checkOutputFolder(flag: string, path: string): void {
  if (path === "") throw new UsageError(`option ${flag} needs a folder name; got an empty string`);
  folderOf(flag, path, resolve(path));
}
