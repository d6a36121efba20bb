/**
 * Message contexts are u32 numbers, like MPI communicator contexts: traffic in one never matches receives in
 * another. Each communicator owns a block of them: its point-to-point context, its collective context, then
 * one per pool it makes. The world's block is [0, WORLD_CONTEXTS); a sub-communicator's (World#split) is
 * SUB_CONTEXTS long, above the world's. The largest u32 is `close`'s own.
 */
export const CONTEXT = { user: 0, collective: 1, firstFree: 2 } as const;
export const WORLD_CONTEXTS = 2 ** 24;
export const SUB_CONTEXTS = 2 ** 12;
export const CLOSE_CONTEXT = 2 ** 32 - 1;

/** Where `context` sits in its communicator's block: CONTEXT.user, CONTEXT.collective, or a pool's (close's aside). */
export function offsetInBlock(context: number): number {
  return context < WORLD_CONTEXTS ? context : (context - WORLD_CONTEXTS) % SUB_CONTEXTS;
}

/** The index of the block of SUB_CONTEXTS contexts (of a communicator from split) that `context` is in. */
export function blockOf(context: number): number {
  return Math.floor((context - WORLD_CONTEXTS) / SUB_CONTEXTS);
}

/**
 * Collective sequence numbers wrap at 2^28: the tag on the wire, a u32, carries the collective's kind above
 * them (channel.ts `wireTag`), so that a message of one kind never matches a receive of another. Ranks that
 * call different collectives at the same step (a reduce on some, a barrier on others) would otherwise take each
 * other's messages: a barrier's token was summed into a reduce. They now wait, and the deadlock check names
 * each one's collective (stall.ts).
 */
export const SEQUENCE_WRAP = 2 ** 28;

/** The sequence number (the step) of a collective's tag on the wire. */
export function collectiveStep(wire: number): number {
  return wire % SEQUENCE_WRAP;
}
