/** Text printed by test/fixtures/lines.ts, shared with the test that checks it. */

/** Line `i` of rank `rank`: its own letter repeated, so a line mixed with another rank's cannot pass for one. */
export function longLine(rank: number, i: number, length: number): string {
  return `rank ${rank} line ${i} ${String.fromCharCode(97 + ((rank * 7 + i) % 26)).repeat(length)}`;
}

/** What rank 0 prints in `solo` mode: empty lines, a tab, non-ASCII. */
export const SOLO_TEXT = "first line\n\n\tindented ü€𝄞\nlast line\n";
