// Checks of jobs run on test hosts (test/helpers/hosts.ts): how a job of test/fixtures/hosts-job.ts ends, and
// that a job leaves no process behind on the hosts.
import { writeFileSync } from "node:fs";
import type { ExecutionContext } from "ava";
import { parseResult } from "../fixtures/hosts-job-check.ts";
import { expectedTotal } from "../fixtures/hosts-values.ts";
import type { Sshd, TestHosts } from "./hosts.ts";
import { until } from "./pids.ts";
import { ok, type Running } from "./run.ts";

export { ok };

/**
 * Lets a waiting job of hosts-job.ts go on (creates its `go` file), then checks that it ended well: status 0,
 * nothing on stderr, and rank 0's result with the exact total and `addresses`, each rank's host addresses.
 */
export async function finishes(t: ExecutionContext, job: Running, go: string, addresses: string[][]): Promise<void> {
  writeFileSync(go, "");
  const r = await job.result;
  ok(t, r);
  t.is(r.stderr, "");
  t.deepEqual(parseResult(r.stdout), { total: expectedTotal(addresses.length), addresses });
}

/** Processes on the hosts other than `except`, as `host: pids`; empty when none is left. */
function leftovers(hosts: TestHosts, except: readonly number[]): string[] {
  return hosts.hosts
    .map((h) => ({ h, pids: hosts.pids(h).filter((p) => !except.includes(p)) }))
    .filter(({ pids }) => pids.length > 0)
    .map(({ h, pids }) => `${h.name}: ${pids.join(" ")}`);
}

/**
 * Waits until no process other than `except` (the hosts' sshds) is left on any host, then checks it, with
 * `message`. What a job leaves may outlive it by a moment (tsx's esbuild service, which ends when its input does;
 * sshd's session processes, which end after the ssh client the launcher waited for) and nothing tells us when
 * it goes: this waits with a deadline.
 */
export async function nothingLeft(
  t: ExecutionContext,
  hosts: TestHosts,
  message = "no process is left on any host",
  except: readonly number[] = [],
): Promise<void> {
  await until(() => leftovers(hosts, except).length === 0);
  t.deepEqual(leftovers(hosts, except), [], message);
}

/**
 * Waits until the hosts run nothing but their sshds: sshd's session processes end a moment after the ssh client
 * that the launcher waited for.
 */
export function nothingButSshd(t: ExecutionContext, hosts: TestHosts, sshds: readonly Sshd[]): Promise<void> {
  return nothingLeft(
    t,
    hosts,
    "nothing but sshd is left on the hosts",
    sshds.map((d) => d.pid),
  );
}
