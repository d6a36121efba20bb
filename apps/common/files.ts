import { type FileHandle, open } from "node:fs/promises";
import { InputError } from "./errors.ts";

/**
 * Opens an input file for reading. A directory (or a device, a socket) opens without error on Linux and only
 * fails at the first read (EISDIR), or reads as nonsense: it is refused here, by name, as bad input.
 */
export async function openInput(path: string): Promise<FileHandle> {
  const fh = await open(path, "r");
  const st = await fh.stat();
  if (st.isFile()) return fh;
  await fh.close();
  const kind = st.isDirectory() ? "a directory" : "not a regular file";
  throw new InputError(`${path} is ${kind}; expected a file`, { file: path });
}

/** Reads a whole input file (see openInput). */
export async function readInput(path: string): Promise<Buffer> {
  await using fh = await openInput(path);
  return fh.readFile();
}
