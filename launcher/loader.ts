/**
 * The TypeScript loader every rank (and every bench reference program) runs under: tsx's ESM hooks only.
 *
 * Not plain `tsx`, which also hooks `require` on the main thread. There tsx scans each CommonJS file with a
 * WebAssembly lexer, and a file larger than the lexer's memory (zeromq's index.js) grows that memory, which
 * detaches an ArrayBuffer. From then on V8 checks for a detached buffer at every typed-array access it
 * compiles: measured, the block-matching search ran 10-20% slower in any process that had loaded zeromq.
 * The ESM hooks run on their own thread, so their lexer cannot do this to the rank's code.
 */
export const TS_LOADER = import.meta.resolve("tsx/esm");
