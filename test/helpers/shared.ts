// Something the tests of one file share (test hosts, a Slurm cluster): made when the first test asks for it, so a
// file whose tests are all skipped makes nothing, and ended once the file's tests are done.
import type { TestFn } from "ava";

/**
 * The function that returns the value the tests of this file share: `make()`'s, called when a test first asks
 * for it. `end(value)` runs once the file's tests are done (in `test.after.always`), if the value was made. If
 * `make` returns a promise that rejects, every test that asks gets the rejection, and `end` is not called.
 */
export function shared<T>(test: TestFn, make: () => T, end: (value: Awaited<T>) => unknown): () => T {
  let made: { readonly value: T } | undefined;
  test.after.always(async () => {
    if (made === undefined) return;
    const settled = await Promise.resolve(made.value).then(
      (value) => ({ value }),
      () => undefined,
    );
    if (settled !== undefined) await end(settled.value);
  });
  return () => (made ??= { value: make() }).value;
}
