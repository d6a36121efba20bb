import { describe, RankFailedError, TaskError } from "../../errors.ts";
import { INITIATION_STRATEGIES } from "../balance/registry.ts";
import type { TaskKey } from "../keys.ts";
import type { WireResult } from "../results.ts";
import { type Engine, type PendingPut, PoolRuntime } from "../runtime.ts";
import type { DetectionStrategy, Detector, DistributedHost } from "../strategy.ts";
import { EVENT_LOOP_TIMERS, type Timers } from "../timers.ts";
import type { TaskContext, TaskHandler } from "../types.ts";
import { Commits } from "./commits.ts";
import { DistributedEngine } from "./engine.ts";
import { type Commit, type Entry, Ledger, type LedgerNews } from "./ledger.ts";
import { protocolFor, ROOT } from "./protocol.ts";

/** The tags of a COMMIT and an ACK (ledger.ts) in the pool's context, apart from the engine's small tags. */
export const COMMIT_TAG = 900;
export const ACK_TAG = 901;
/**
 * A rank other than the root commits at least this often while it works (at the start of a task): what it did
 * since its last commit is what its death costs, done again from the ledger.
 */
export const COMMIT_MS = 100;
/** A request that gets exactly one answer, and the answer that means "nothing for you" (a dead partner's). */
const REFUSAL_OF: Readonly<Record<string, string>> = { request: "refuse", steal: "decline" };
/**
 * The answers to those requests, by kind name (receiver's OPEN, WANT, HAVE and GIVE answer no request, so their
 * names must not be among these).
 */
const ANSWERS = new Set(["refuse", "transfer", "decline", "gift"]);

/** A put made by the running task, held back until it ends (so no commit can count it before its task). */
interface HeldPut<T> {
  readonly entry: Entry<T>;
  readonly to: number | undefined;
}

/**
 * One rank of a distributed pool that survives the death of ranks other than the root (`retries` > 0;
 * docs/survival.md has the design). A DistributedEngine runs underneath, with its balancer and its queues
 * unchanged, over `Entry` objects that carry each task's ledger id; this class stands between it and the
 * pool's messages:
 *
 * - On a rank other than the root, it reports to the root's ledger (ledger.ts) in COMMITs (their contents are
 *   gathered in commits.ts): at the start of a task once COMMIT_MS have passed since the last, when the rank
 *   goes passive, before every task message it sends (the commit names the tasks and where they go), when the
 *   app puts a task on a passive rank, and when it learns of a death (its answer). A task's puts are held back
 *   until it ends, so a commit sent while an async task awaits (before a transfer, an answer) never counts a
 *   task's puts without its value.
 * - On the root, it keeps the ledger, re-deals a dead rank's tasks into its own queue, and ends the run when
 *   the ledger says that nothing is left anywhere: the termination detector of such a pool (the configured
 *   token ring or tree does not run; a dead rank needs no bypass).
 * - On every rank, it drops messages from ranks known dead, and answers on a dead partner's behalf each
 *   request the balancer sent it that no answer will come for, so that balancing goes on among the living.
 *   Tasks for a dead rank (a transfer, a pinned put) stay here, movable.
 */
export class ResilientDistributed<T> implements Engine<T> {
  /** The engine underneath (the in-process simulation drives its steps). */
  readonly engine: DistributedEngine<Entry<T>>;
  readonly done: Promise<void>;
  private readonly isRoot: boolean;
  private readonly dead: Uint8Array;
  /** Ranks this rank sent a request to that has had no answer. */
  private readonly outstanding: Uint8Array;
  private readonly kinds: readonly { readonly kind: string; readonly owner: string }[];
  private readonly refusalTag: number;
  private host: DistributedHost | undefined;
  private readonly ledger: Ledger<T> | undefined;
  private nextId = 0;
  private transfers = 0;
  /** On a rank other than the root: what its next commit says. */
  private readonly commits: Commits<T>;
  /** The task running now, and what it has put so far. */
  private current: Entry<T> | undefined;
  private held: HeldPut<T>[] = [];
  /** Transfers waiting for the root's ACK of the commit before them, by that commit's sequence number. */
  private readonly waiting = new Map<number, { dest: number; tag: number; body: Record<string, unknown> }>();

  constructor(
    private readonly rt: PoolRuntime,
    handler: TaskHandler<T>,
    ctx: TaskContext<T>,
    initial: readonly PendingPut<T>[],
    private readonly timers: Timers = EVENT_LOOP_TIMERS,
    /** COMMIT_MS, or a simulation's choice (0: a commit at the start of every task). */
    commitMs = COMMIT_MS,
  ) {
    const { rank, size, config } = rt;
    this.isRoot = rank === ROOT;
    this.dead = new Uint8Array(size);
    this.outstanding = new Uint8Array(size);
    const detection: DetectionStrategy = {
      summary: "the root's ledger: nothing recorded anywhere and every live rank passive",
      messages: [],
      create: (host) => this.detectorFor(host),
    };
    const protocol = protocolFor(INITIATION_STRATEGIES[config.initiation], detection);
    this.kinds = protocol.kinds;
    const refusal = config.initiation === "lifeline" ? "decline" : "refuse";
    this.refusalTag = protocol.tag.get(refusal) ?? -1;
    if (this.isRoot) this.ledger = new Ledger<T>(size, ROOT);
    this.commits = new Commits<T>(commitMs, rt.results, () => this.newId());
    const inner = new PoolRuntime(
      { rank, size, send: (dest, tag, body) => this.intercept(dest, tag, body) },
      config,
      rt.epoch,
      rt.stats,
      rt.results,
      rt.trace,
    );
    inner.concurrency = rt.concurrency;
    const run = (e: Entry<T>): unknown => {
      if (!this.isRoot && this.commits.due()) this.commit();
      this.current = e;
      const r = handler(e.t, ctx) as unknown;
      if (r !== undefined && typeof (r as Promise<unknown>).then === "function") {
        return (r as Promise<unknown>).then((v) => {
          this.ended(e);
          return v;
        });
      }
      this.ended(e);
      return r;
    };
    const entries: PendingPut<Entry<T>>[] = initial.map((p) => {
      const e = this.entryOf(p.task, p.priority, p.key);
      if (!this.isRoot) this.commits.addFresh(e);
      return { task: e, priority: p.priority, to: p.to, ...(p.key === undefined ? {} : { key: p.key }) };
    });
    this.engine = new DistributedEngine<Entry<T>>(
      inner,
      run as TaskHandler<Entry<T>>,
      ctx as unknown as TaskContext<Entry<T>>,
      entries,
      timers,
      detection,
    );
    // A TaskError names the app's task, not the entry it travelled in.
    this.done = this.engine.done.catch((e: unknown) => {
      throw e instanceof TaskError && isEntry(e.task) ? appTaskError(e, e.task) : e;
    });
  }

  private entryOf(task: T, priority: number, key: TaskKey | undefined): Entry<T> {
    const e: Entry<T> = { t: task, i: 0, h: 0 };
    if (priority !== 0) e.p = priority;
    if (key !== undefined) e.k = key;
    return e;
  }

  private newId(): number {
    return ++this.nextId * this.rt.size + this.rt.rank;
  }

  // ---- Engine ----

  start(): void {
    this.engine.start();
  }

  queued(): number {
    return this.engine.queued();
  }

  fail(error: Error): void {
    this.engine.fail(error);
  }

  stop(result: WireResult): void {
    this.engine.stop(result);
  }

  put(task: T, priority: number, to: number | undefined, fromTask?: boolean, key?: TaskKey): void {
    if (this.engine.over) return;
    const e = this.entryOf(task, priority, key);
    if (this.isRoot) {
      this.engine.put(e, priority, to, fromTask, key);
      return;
    }
    if (fromTask && this.current !== undefined) {
      this.held.push({ entry: e, to });
      return;
    }
    // The app's own put: the next commit reports it held. A rank whose latest commit said it was passive
    // commits at once, or the root could end the run without it.
    this.commits.addFresh(e);
    this.engine.put(e, priority, to, fromTask, key);
    if (this.commits.passive) this.commit();
  }

  /** The running task `e` ended here: its puts join the queues, and the next commit reports its end. */
  private ended(e: Entry<T>): void {
    this.current = undefined;
    if (this.isRoot) return;
    this.commits.ended(e);
    const held = this.held;
    if (held.length === 0) return;
    this.held = [];
    for (const { entry, to } of held) {
      this.commits.addFresh(entry);
      this.engine.put(entry, entry.p ?? 0, to, true, entry.k);
    }
  }

  onMessage(source: number, tag: number, body: Record<string, unknown>): void {
    if (this.dead[source] === 1) return;
    if (tag === COMMIT_TAG) {
      if (this.ledger !== undefined) this.onCommit(source, body as unknown as Commit);
      return;
    }
    if (tag === ACK_TAG) {
      for (const s of body.a as number[]) this.release(s);
      return;
    }
    const route = this.kinds[tag];
    if (route === undefined) return;
    if (ANSWERS.has(route.kind)) this.outstanding[source] = 0;
    if (route.owner !== "tasks" || this.engine.over) {
      this.engine.onMessage(source, tag, body);
      return;
    }
    // Tasks: their receipt goes to the ledger (at once on the root, else with the next commit).
    const entries = body.t as Entry<T>[];
    const n = body.z as number;
    const ledger = this.ledger;
    if (ledger !== undefined) {
      const news = emptyNews<T>();
      ledger.receivedAtRoot(entries, news);
      this.engine.onMessage(source, tag, body);
      this.act(news);
      return;
    }
    this.commits.received(source, n, entries);
    this.engine.onMessage(source, tag, body);
  }

  onPeerDead(rank: number, error: RankFailedError): number | undefined {
    if (rank === ROOT) {
      // The ledger dies with it: the launcher ends the job (the root is essential), and so does this run.
      this.engine.fail(error);
      return undefined;
    }
    if (this.dead[rank] === 1 || rank === this.rt.rank) return undefined;
    this.dead[rank] = 1;
    if (this.outstanding[rank] === 1) this.refuseFor(rank);
    if (this.engine.over) return undefined;
    const ledger = this.ledger;
    if (ledger === undefined) {
      this.commits.died(rank);
      this.commit();
      return undefined;
    }
    this.rt.count("workersLost");
    const held = ledger.heldBy(rank);
    const news = emptyNews<T>();
    ledger.death(rank, news);
    this.act(news);
    return held;
  }

  // ---- the link under the engine ----

  /** Every message the engine sends passes here. */
  private intercept(dest: number, tag: number, body: Record<string, unknown>): number {
    const route = this.kinds[tag];
    const tasks = route?.owner === "tasks";
    if (this.dead[dest] === 1) {
      if (tasks) {
        // Never sent: the tasks stay here, movable (a pinned task's rank is gone).
        for (const e of body.t as Entry<T>[]) this.engine.put(e, e.p ?? 0, undefined, false, e.k);
      } else if (route !== undefined && REFUSAL_OF[route.kind] !== undefined) this.refuseFor(dest);
      return 0;
    }
    if (route?.kind === "fail" && isEntry(body.task)) {
      const entry = body.task;
      body.task = entry.t;
      if (typeof body.msg === "string") body.msg = body.msg.replace(describe(entry), describe(entry.t));
    }
    if (tasks) {
      const n = ++this.transfers;
      body.z = n;
      const entries = body.t as Entry<T>[];
      const ledger = this.ledger;
      if (ledger !== undefined) {
        const news = emptyNews<T>();
        for (const e of entries) {
          if (e.i === 0) e.i = this.newId();
          e.h++;
          ledger.sentFromRoot(e, dest, news);
        }
      } else if (dest === ROOT && this.rt.link.fifo === true) {
        // To the root over an ordered link: the commit that names it is applied there first, and if this rank
        // dies the transfer cannot arrive without it, so it leaves at once (its ACK finds nothing waiting).
        this.commit(dest, n, entries);
        this.rt.count("transfersToRootAtOnce");
      } else {
        // It leaves once the root has applied the commit that names it (ACK): see ledger.ts.
        this.waiting.set(this.commit(dest, n, entries), { dest, tag, body });
        return 0;
      }
    } else if (route !== undefined && REFUSAL_OF[route.kind] !== undefined) this.outstanding[dest] = 1;
    return this.rt.link.send(dest, tag, body);
  }

  /** The root applied commit `s`: the transfer it precedes leaves (or stays here, if its receiver died). */
  private release(s: number): void {
    const t = this.waiting.get(s);
    if (t === undefined) return;
    this.waiting.delete(s);
    if (this.engine.over) return;
    if (this.dead[t.dest] === 1) {
      // The ledger records its tasks at the dead receiver, and re-deals them from there.
      return;
    }
    this.rt.stats.bytesSent += this.rt.link.send(t.dest, t.tag, t.body);
  }

  /** The balancer's request to `dead` will get no answer: it gets the refusal, from the dead rank, soon. */
  private refuseFor(dead: number): void {
    this.outstanding[dead] = 0;
    const tag = this.refusalTag;
    if (tag < 0) return;
    this.timers.soon(() => {
      if (!this.engine.over) this.engine.onMessage(dead, tag, { e: this.rt.epoch });
    });
  }

  // ---- a rank other than the root ----

  /** Sends the root one COMMIT (commits.ts) with everything since the last; `dest`, `n`, `entries`: the transfer it precedes. */
  private commit(dest?: number, n?: number, entries?: readonly Entry<T>[]): number {
    const host = this.host as DistributedHost;
    const c = this.commits.next(host.passive && this.held.length === 0, host.lastActivityAt, dest, n, entries);
    this.rt.count("commitsSent");
    this.rt.send(ROOT, COMMIT_TAG, c as unknown as Record<string, unknown>);
    return c.s;
  }

  // ---- the root ----

  private onCommit(source: number, c: Commit): void {
    if (this.engine.over) return;
    const news = emptyNews<T>();
    const results: WireResult[] = [];
    (this.ledger as Ledger<T>).apply(source, c, news, results);
    for (const r of results) this.rt.results.merge(r);
    if (news.acks.length > 0) this.rt.send(source, ACK_TAG, { a: news.acks });
    this.act(news);
  }

  /** Re-deals what the ledger gave back, then ends the run if nothing is left anywhere. */
  private act(news: LedgerNews<T>): void {
    if (news.lost.length > 0) {
      this.engine.fail(
        new RankFailedError(
          this.rt.rank,
          `a pool that survives deaths lost ${news.lost.length} task(s): two ranks that had just exchanged them ` +
            "died before the root heard of the exchange",
        ),
      );
      return;
    }
    if (news.redeal.length > 0) {
      this.rt.count("tasksRedealt", news.redeal.length);
      for (const e of news.redeal) this.engine.put(e, e.p ?? 0, undefined, false, e.k);
    }
    this.checkEnd();
  }

  private checkEnd(): void {
    const host = this.host;
    const ledger = this.ledger;
    if (host === undefined || ledger === undefined || !host.passive || !ledger.quiescent) return;
    host.terminate(Math.max(ledger.lastActivity, host.lastActivityAt));
  }

  // ---- termination ----

  /** The engine's detector: the root's ledger (checkEnd); elsewhere, a commit whenever the rank goes passive. */
  private detectorFor(host: DistributedHost): Detector {
    this.host = host;
    return {
      stamp: 0,
      sent() {},
      received() {},
      onMessage() {},
      idle: () => {
        if (this.isRoot) this.checkEnd();
        else if (!this.commits.passive || this.commits.hasNews()) this.commit();
      },
    };
  }
}

function isEntry(v: unknown): v is Entry<unknown> {
  return typeof v === "object" && v !== null && "t" in v && "i" in v && "h" in v;
}

/** `e`, about the app's task in `entry` rather than the entry. */
function appTaskError(e: TaskError, entry: Entry<unknown>): TaskError {
  const out = new TaskError(e.rank, entry.t, e.message.replace(describe(entry), describe(entry.t)), { cause: e.cause });
  if (e.stack !== undefined) out.stack = e.stack.replace(describe(entry), describe(entry.t));
  return out;
}

function emptyNews<T>(): LedgerNews<T> {
  return { redeal: [], lost: [], acks: [] };
}
