// Tests that need something a machine may lack (root and network namespaces, sshd, mpirun, Slurm): they run where
// it is there, are skipped with the reason where it is not, and fail instead under CI=true, so that a CI machine
// that cannot run them does not pass silently.
import type { ImplementationFn } from "ava";

/** How a test is declared: `(title, implementation)`. */
type Declare = (title: string, implementation: ImplementationFn<[]>) => void;

/** ava's `test` or `test.serial`: what `needs` declares its tests with. */
export type Declarer = Declare & { readonly skip: Declare };

/**
 * The test function for tests that need something: `test` itself (pass ava's `test`, or `test.serial` for tests
 * that share hosts or daemons) if `reason` (why the tests cannot run here, from canMakeHosts, mpiAvailable, ...)
 * is undefined. Otherwise each test is skipped with the reason in its title, or under CI=true fails with it.
 */
export function needs(test: Declarer, reason: string | undefined): Declare {
  if (reason === undefined) return (title, implementation) => test(title, implementation);
  if (process.env.CI === "true") {
    return (title) => test(title, (t) => t.fail(`CI=true and this test cannot run: ${reason}`));
  }
  return (title, implementation) => test.skip(`${title} (skipped: ${reason})`, implementation);
}
