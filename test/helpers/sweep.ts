/**
 * Sweeps over configurations split between the suites, so that `npm test` stays a few minutes on 2 cores: the
 * fast suite runs the cases a file picks (one per kind of engine at least), and the slow suite runs the rest by
 * importing the same file with WORKPOOL_TEST_SWEEP=rest (see concurrency.slow.test.ts). Tests of such a file
 * that are not part of its sweep run in the fast suite only (`inFastSuite`).
 */
const REST = () => process.env.WORKPOOL_TEST_SWEEP === "rest";

/** The cases this suite runs: those `fast` picks in the fast suite, the others in the slow one. */
export function sweep<T>(cases: readonly T[], fast: (c: T, index: number) => boolean): T[] {
  return cases.filter((c, i) => fast(c, i) !== REST());
}

/** True in the fast suite, false when the slow suite runs a file's sweep rest. */
export function inFastSuite(): boolean {
  return !REST();
}

/** `register` (ava's `test`) in the fast suite; when the slow suite runs a file's sweep rest, one that adds nothing. */
export function fastOnly<T>(register: T): T {
  return inFastSuite() ? register : ((() => undefined) as unknown as T);
}

/** The other way round: `register` when the slow suite runs a file's sweep rest, one that adds nothing otherwise. */
export function slowOnly<T>(register: T): T {
  return inFastSuite() ? ((() => undefined) as unknown as T) : register;
}
