/**
 * Unit tests of the two termination detectors against a scripted host: each rule of token-ring.ts and
 * tree.ts, one step at a time. (test/pool/simulation.test.ts runs them in whole pools under adversarial
 * schedules.)
 */
import test from "ava";
import { resolvePoolConfig } from "../../lib/pool/options.ts";
import { Results } from "../../lib/pool/results.ts";
import { PoolRuntime } from "../../lib/pool/runtime.ts";
import type { Detector, DistributedHost } from "../../lib/pool/strategy.ts";
import { tokenRing } from "../../lib/pool/termination/token-ring.ts";
import { tree } from "../../lib/pool/termination/tree.ts";
import { emptyStats } from "../../lib/pool/types.ts";

interface Sent {
  dest: number;
  kind: string;
  body: Record<string, unknown>;
}

/** One rank's side of the contract, scripted: the test says when it is passive and reads what it sent. */
class ScriptedHost implements DistributedHost {
  readonly rt: PoolRuntime;
  readonly root = 0;
  readonly load = 0;
  readonly movable = 0;
  readonly topPriority = 0;
  readonly running = false;
  readonly longTasks = false;
  readonly meanTaskMs = 0;
  dealing = false;
  passive = false;
  lastActivityAt = 100;
  readonly sent: Sent[] = [];
  terminated: number | undefined;

  constructor(rank: number, size: number) {
    const config = resolvePoolConfig({ mode: "distributed" }, undefined, size);
    const link = { rank, size, send: () => 0 };
    this.rt = new PoolRuntime(link, config, 1, emptyStats(rank, "distributed"), Results.of(undefined));
  }

  send(dest: number, kind: string, body: Record<string, unknown>): void {
    this.sent.push({ dest, kind, body });
  }

  sendMovable(): number {
    throw new Error("a detector moves no tasks");
  }

  after(): () => void {
    throw new Error("a detector sets no timers");
  }

  now(): number {
    return 0;
  }

  recentKeys(): readonly never[] {
    return [];
  }

  release(): void {}

  terminate(last: number): void {
    this.terminated = last;
  }

  /** Takes what was sent since the last call. */
  take(): Sent[] {
    return this.sent.splice(0);
  }
}

function ring(rank: number, size: number): [ScriptedHost, Detector] {
  const host = new ScriptedHost(rank, size);
  return [host, tokenRing.create(host)];
}

test("token ring: the root starts a round only when passive, and a white round with q = 0 terminates", (t) => {
  const [root, d] = ring(0, 3);
  d.idle();
  t.deepEqual(root.take(), [], "an active root starts no round");
  root.passive = true;
  d.idle();
  const [first] = root.take();
  t.like(first, { dest: 1, kind: "token", body: { q: 0, b: 0, n: 1 } });
  d.idle();
  t.deepEqual(root.take(), [], "one round at a time");
  d.onMessage(2, "token", { q: 0, b: 0, m: 250, n: 1 });
  t.is(root.terminated, 250, "the latest task end on the ring");
});

test("token ring: a rank holds the token until passive, adds its count, and stamps task messages", (t) => {
  const [host, d] = ring(1, 3);
  d.sent(2);
  d.sent(2);
  d.received(0, 0);
  t.is(d.stamp, 0);
  d.onMessage(0, "token", { q: 0, b: 0, m: 50, n: 4 });
  t.deepEqual(host.take(), [], "held while active");
  host.passive = true;
  d.idle();
  const [passed] = host.take();
  t.like(passed, { dest: 2, kind: "token", body: { q: 1, b: 0, m: 100, n: 4 } });
  t.is(d.stamp, 4, "task messages now carry the round this rank passed");
});

test("token ring: a task message stamped later than the receiver's round blackens it, once per round", (t) => {
  const [host, d] = ring(2, 3);
  d.received(1, 3); // sent by a rank the token of round 3 had visited, to one it had not
  host.passive = true;
  d.onMessage(1, "token", { q: 1, b: 0, m: 0, n: 3 });
  t.like(host.take()[0], { body: { q: 0, b: 1 } }, "the token leaves black");
  d.received(1, 3);
  d.onMessage(1, "token", { q: 1, b: 0, m: 0, n: 4 });
  t.like(host.take()[0], { body: { b: 0 } }, "a message stamped with a round already passed does not blacken");
});

test("token ring: the root does not terminate on a black token or a non-zero sum; it starts a new round", (t) => {
  const [root, d] = ring(0, 2);
  root.passive = true;
  d.idle();
  root.take();
  d.onMessage(1, "token", { q: 0, b: 1, m: 0, n: 1 });
  t.is(root.terminated, undefined);
  t.like(root.take()[0], { body: { n: 2, b: 0 } });
  d.onMessage(1, "token", { q: 1, b: 0, m: 0, n: 2 });
  t.is(root.terminated, undefined, "one task message still in flight");
  t.like(root.take()[0], { body: { n: 3 } });
  // Rank 1 sent a task message after passing round 3's token; it reaches the root before the token does.
  d.received(1, 3);
  d.onMessage(1, "token", { q: 1, b: 0, m: 0, n: 3 });
  t.is(root.terminated, undefined, "stamped later than the root's last round: the root is black");
  d.onMessage(1, "token", { q: 1, b: 0, m: 0, n: 4 });
  t.not(root.terminated, undefined, "counts balance on a white round");
});

test("token ring: partial results ride on the token and reach the root", (t) => {
  const [host, d] = ring(1, 2);
  host.rt.results.add(5);
  host.passive = true;
  d.onMessage(0, "token", { q: 0, b: 0, m: 0, n: 1, r: [2] });
  t.deepEqual(host.take()[0]?.body.r, [7]);
});

function treeRank(rank: number, size: number): [ScriptedHost, Detector] {
  const host = new ScriptedHost(rank, size);
  return [host, tree.create(host)];
}

test("tree: every rank starts engaged under the root and acknowledges the start when it first goes idle", (t) => {
  const [host, d] = treeRank(2, 3);
  host.passive = true;
  d.idle();
  t.like(host.take(), [{ dest: 0, kind: "ack", body: { n: 1, m: 100 } }]);
  d.idle();
  t.deepEqual(host.take(), [], "left the tree: nothing more to acknowledge");
});

test("tree: a rank outside the tree joins under the first sender and acknowledges others at once", (t) => {
  const [host, d] = treeRank(1, 3);
  host.passive = true;
  d.idle();
  host.take();
  host.passive = false;
  d.received(2, 0);
  t.deepEqual(host.take(), [], "joined: the joining message's acknowledgement is held back");
  d.received(0, 0);
  t.like(host.take(), [{ dest: 0, kind: "ack", body: { n: 1, m: 0 } }], "engaged: acknowledged at once");
  d.sent(0);
  host.passive = true;
  d.idle();
  t.deepEqual(host.take(), [], "deficit 1: stays in the tree");
  d.onMessage(0, "ack", { n: 1, m: 300 });
  t.like(
    host.take(),
    [{ dest: 2, kind: "ack", body: { n: 1, m: 300 } }],
    "leaves to its parent, with the subtree's latest end",
  );
});

test("tree: the root terminates when passive with every start and task message acknowledged", (t) => {
  const [root, d] = treeRank(0, 3);
  root.passive = true;
  d.idle();
  t.is(root.terminated, undefined, "two starts unacknowledged");
  d.onMessage(1, "ack", { n: 1, m: 120, r: [3] });
  d.onMessage(2, "ack", { n: 1, m: 90 });
  t.is(root.terminated, 120);
  t.deepEqual(root.rt.results.take(), [3], "the children's partial results reached the root");
});
