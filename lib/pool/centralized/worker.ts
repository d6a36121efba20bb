import { FLUSH_TASKS, TaskBatch } from "../batch.ts";
import { LONG_TASK_MS, now } from "../executor.ts";
import { Flight } from "../flight.ts";
import { withResult } from "../results.ts";
import type { PendingPut, PoolRuntime } from "../runtime.ts";
import type { TaskContext, TaskHandler } from "../types.ts";
import { type Status, TAG } from "./plain-protocol.ts";
import { MAX_CAPACITY, WorkerCore } from "./worker-core.ts";

/** Largest factor by which running dry raises the capacity computed from round trips. */
const MAX_BOOST = 64;
/** Most tasks a worker holds while its tasks are long (Executor `longTasks`): the next one and one more. */
const LONG_HOLD = 2;

/** Below this share of a core since a worker's first async task began, its async tasks mostly wait (`waits`). */
const WAITING_CPU_SHARE = 0.5;

/**
 * A centralized-pool worker (the queues, requests, RELEASE and ending it shares with the resilient worker are
 * in worker-core.ts). It holds a local queue of the tasks the coordinator granted it and of the tasks
 * its handlers put (up to the `keep` option), and runs them in the pool's `order` (newest first by default,
 * so a task tree is walked depth-first here, as by a plain loop). It never waits a round trip for work while
 * work exists:
 *
 * - It asks for more when its queue falls to half of its capacity, the number of tasks it wants to hold:
 *   enough to cover two grant turnarounds at its measured task time (seed 001: grain from run-time rates).
 *   The turnaround is a moving average of what grants really took, not the fastest one; and a worker that
 *   ran dry while the coordinator still had tasks doubles its capacity (up to MAX_BOOST times), since it
 *   asked too little.
 * - Tasks beyond `keep`, and every put with `keep` 0 (the seed slides' protocol), go to the coordinator in
 *   batches with the status messages. When the coordinator asks (RELEASE: other workers ran dry), it sends
 *   about half of its queue, from the oldest end, where a tree's big subtrees are.
 * - When its queue fills up again while a request is pending, it says so, so the coordinator does not ask
 *   others to release work for it.
 * - While its tasks are long (Executor `longTasks`), it holds at most LONG_HOLD (or what the coordinator
 *   asked it to hold) and sends the rest back after each task: it could not release them during the next one.
 *
 * Its statuses carry cumulative counts (run, kept, given back, sent), so the coordinator knows exactly how
 * many tasks it holds as of each status, and the values its handlers returned since the last status.
 */
export class CentralWorker<T> extends WorkerCore<T, T> {
  /** Cumulative counts, as in STATUS. */
  private executed = 0;
  private kept = 0;
  private given = 0;
  private sent = 0;
  private reportedDone = 0;
  /**
   * Tasks waiting to go to the coordinator with the next status: sent once full (batch.ts), else at the end
   * of the slice or when idle.
   */
  private readonly out = new TaskBatch<T>();
  private boost = 1;
  /** Tasks the coordinator asked this worker to hold (0: none asked), when it answers late (plain-protocol.ts). */
  private hold = 0;
  /**
   * Async tasks in flight (PoolOptions `concurrency`). They count as held until they settle (the coordinator
   * sees them in `d`, tasks run), so the run cannot end while one is in flight.
   */
  private readonly flight: Flight;
  /** Tasks this worker runs at once: 1, or the flight's limit once a handler returned a promise. */
  private width = 1;
  /** This process's CPU time and the clock when its first async task began (`waits`). */
  private cpuAtFirst: NodeJS.CpuUsage | undefined;
  private firstAt = 0;
  /** The promise of the async task `runSync` started, for the loop to await or keep in flight. */
  private started: Promise<void> | undefined;

  constructor(rt: PoolRuntime, handler: TaskHandler<T>, ctx: TaskContext<T>, initial: readonly PendingPut<T>[]) {
    super(rt, handler, ctx);
    this.flight = new Flight(
      rt.concurrency,
      () => this.executed++,
      (e) => this.fail(e),
    );
    this.putInitial(initial);
  }

  put(task: T, priority: number): void {
    if (this.finished) return;
    const own = this.own;
    if (own.size < this.keep) {
      own.push(task, priority);
      this.kept++;
      if (this.parked) this.wakeUp();
      else this.flight.wake();
      return;
    }
    if (this.keep > 0) {
      // Full: keep the newest (it runs next) and send the oldest.
      own.push(task, priority);
      this.kept++;
      this.giveBack(1);
    } else this.out.add(task, priority);
    if (this.parked) this.wakeUp();
    else {
      this.flight.wake();
      if (this.out.size >= FLUSH_TASKS) this.report(false);
    }
  }

  /**
   * Moves up to `n` queued tasks to the outbox: dealt ones first (not started here), then own ones from the oldest
   * end.
   */
  protected giveBack(n: number): number {
    const dealt = this.out.takeFrom(this.dealt, n);
    const moved = dealt + this.out.takeFrom(this.own, n - dealt);
    this.given += moved;
    return moved;
  }

  /** Sends a STATUS: cumulative counts, the tasks in the outbox, the values returned since the last one. */
  protected report(request: boolean): void {
    const body: Status = {
      s: this.seq++,
      d: this.executed,
      k: this.kept,
      v: this.given,
      n: this.sent + this.out.size,
      t: [],
      // The tasks in flight are held too: room for them beyond the capacity that covers the turnaround.
      c: Math.max(this.capacity, this.hold) + this.width - 1,
      m: this.exec.meanTaskMs(),
      l: this.queued(),
      w: 0,
      o: this.owed ? 1 : 0,
    };
    if (this.width > 1 && this.waits()) body.x = this.width;
    withResult(body as unknown as Record<string, unknown>, this.rt.results.take());
    const t = this.out.drainInto(body);
    if (this.rt.trace && t.length > 0) body.f = this.rt.trace.flowOut(`put ${t.length} to coordinator`);
    this.sent += t.length;
    this.reportedDone = this.executed;
    if (request) this.requestSentAt = now();
    body.w = this.requestSentAt >= 0 ? 1 : 0;
    this.rt.count("statusesSent");
    this.rt.send(this.rt.config.coordinator, TAG.status, body as unknown as Record<string, unknown>);
  }

  /**
   * Whether this worker's async tasks are long and mostly wait (I/O, timers): one has ended, and its process used
   * under WAITING_CPU_SHARE of a core since the first began. Then the coordinator deals it a task a place in its
   * flight even though its tasks are long (status `x`). Tasks that mostly compute only share the core in flight,
   * and stay dealt one at a time, so that the last ones are not held by one worker while another idles (7 async
   * tasks of 300 ms of CPU on 2 workers: 1.26-1.30 s one at a time, 1.56-1.89 s when a worker told its width
   * regardless). On a machine with more ranks than cores a worker that computes gets less than a core and may
   * read as waiting. Counting its run-queue wait as well (Linux schedstat) avoids that, but may read a worker
   * that waits on short timers as computing, since each wakeup waits in the run queue there; under a load of 5
   * test files a keep=0 tree of 1-2 ms timer tasks then kept a worker at one in flight in 1 run of 16. The
   * worse error of the two, so CPU time it is.
   */
  private waits(): boolean {
    if (this.executed === 0 || this.cpuAtFirst === undefined || this.exec.meanTaskMs() <= LONG_TASK_MS) return false;
    const cpu = process.cpuUsage(this.cpuAtFirst);
    return (cpu.user + cpu.system) / 1000 < WAITING_CPU_SHARE * (now() - this.firstAt);
  }

  /**
   * Capacity from rates: tasks to cover two grant turnarounds, plus the one running; raised after running dry.
   * What counts is how fast the queue drains of work that came from elsewhere: tasks this worker's handlers
   * put and it kept refill it, so a worker walking a tree of its own asks only when it is nearly out.
   */
  private updateCapacity(): void {
    if (this.rt.config.chunk > 0 || this.executed === 0 || this.rttMs <= 0) return;
    const drained = Math.max(1, this.executed + this.given - this.kept);
    const netMs = this.rt.stats.busyMs / drained;
    const want = (Math.ceil((2 * this.rttMs) / Math.max(netMs, 1e-4)) + 1) * this.boost;
    this.capacity = Math.min(MAX_CAPACITY, Math.max(2, Math.ceil(want)));
  }

  /**
   * Runs queued tasks back to back while their handlers are sync, acting after each as the loop does (`afterTask`);
   * returns why it stopped (an async task's promise is left in `started`). Small and synchronous, as the
   * distributed engine's: inside the async loop a tree of tiny tasks ran no faster on 2 ranks than on one.
   */
  private runSync(): "empty" | "async" | "over" | "slice" {
    const exec = this.exec;
    for (let task = this.next(); task !== undefined; task = this.next()) {
      const running = exec.execute(task);
      if (running) {
        this.started = running;
        return "async";
      }
      this.executed++;
      if (this.finished || this.stopping) return "over";
      // What it sent may wait for the event loop to turn (PoolRuntime `sendsHeld`), and the next task may be long.
      if (this.afterTask() && this.rt.sendsHeld) return "slice";
      if (exec.sliceOver()) return "slice";
    }
    return "empty";
  }

  /**
   * After a task: a RELEASE owed is answered, and the worker asks for work, or stops asking, as its queue says.
   * True if it sent the coordinator anything.
   */
  private afterTask(): boolean {
    const size = this.own.size + this.dealt.size;
    let sent = false;
    if (this.owed && size > 0) {
      this.release();
      sent = true;
    }
    if (this.requestSentAt < 0) {
      if (size * 2 <= Math.max(this.capacity, this.hold)) {
        this.updateCapacity();
        this.report(true);
        sent = true;
      }
    } else if (size >= 2 * this.capacity && this.kept > 0) {
      // Its own puts refilled the queue: no longer hungry, so the coordinator stops seeking work for it.
      this.requestSentAt = -1;
      this.report(false);
      sent = true;
    }
    return sent;
  }

  protected async loop(): Promise<void> {
    const exec = this.exec;
    exec.resume();
    this.report(true);
    while (!this.finished) {
      const flight = this.flight;
      for (let stop = this.runSync(); stop !== "empty"; stop = this.runSync()) {
        if (stop === "over") return;
        if (stop === "async") {
          const running = this.started as Promise<void>;
          this.started = undefined;
          if (flight.limit === 1) {
            await running;
            this.executed++;
          } else {
            // In flight (counted run when it settles): the next task starts now, unless the flight is full.
            flight.add(running);
            if (this.width === 1) {
              this.width = flight.limit;
              this.cpuAtFirst = process.cpuUsage();
              this.firstAt = now();
              if (this.requestSentAt < 0) this.report(true);
            }
            while (flight.full && !this.finished && !this.stopping) await flight.wait();
          }
          if (this.finished || this.stopping) return;
          // (Until the flight first fills, the event loop turns before the next task goes in flight: Flight `ramping`.)
          if (!(this.afterTask() && this.rt.sendsHeld) && !flight.ramping && !exec.sliceOver()) continue;
        }
        // The slice is up. Long tasks: this rank answers nothing while one runs, so what it holds beyond the next
        // two waits a whole task for whoever needs it; it goes back to the coordinator to be dealt (issue 29).
        // With no other worker (2 ranks, the coordinator only dealing) there is nobody to give them to, and a
        // task handed back would only come back later, away from the data it kept near (a loop's ranges).
        const others = this.rt.size - (this.rt.config.coordinatorWorks ? 1 : 2);
        if (others > 0 && exec.longTasks()) {
          const surplus = this.queued() - Math.max(LONG_HOLD, this.hold);
          if (surplus > 0) this.rt.count("tasksShed", this.giveBack(surplus));
        }
        if (this.out.size > 0) this.report(false);
        await exec.yield();
        if (this.finished || this.stopping) return;
      }
      if (this.finished) return;
      exec.pause();
      // Idle: report what was run and put, so the coordinator can see termination, and ask for work unless a
      // request is pending. A pending RELEASE is answered too: nothing to give. (Clearing it without a status
      // would leave the coordinator waiting for the answer, and never asking this worker again.)
      const owed = this.owed;
      this.owed = false;
      if (owed || this.executed > this.reportedDone || this.out.size > 0 || this.requestSentAt < 0) {
        this.report(this.requestSentAt < 0);
      }
      if (this.queued() > 0) continue;
      if (flight.size > 0) {
        // Not idle while tasks are in flight: wait for one to settle, or for work (a grant, a put).
        await flight.wait();
        continue;
      }
      this.parked = true;
      await this.woken();
      this.parked = false;
      exec.resume();
    }
  }

  onMessage(_source: number, tag: number, body: Record<string, unknown>): void {
    if (this.finished) return;
    if (tag === TAG.grant) {
      const tasks = body.t as T[];
      const prios = body.q as number[] | undefined;
      for (let i = 0; i < tasks.length; i++) this.dealt.push(tasks[i] as T, prios ? (prios[i] as number) : 0);
      this.hold = (body.h as number | undefined) ?? 0;
      if (body.f !== undefined) this.rt.trace?.flowIn(`${tasks.length} tasks from coordinator`, body.f as string);
      this.rt.count("grantsReceived");
      this.rt.count("tasksReceived", tasks.length);
      if (this.requestSentAt >= 0) {
        // Only a request the coordinator could answer from its queue measures the turnaround; one it had to
        // find work for (releases from other workers) measures scarcity, which a larger capacity cannot cure.
        if (body.z === 1) {
          this.measureTurnaround();
          if (this.parked && this.executed > 0) {
            // Ran dry while the coordinator had work: the capacity was too small for the real turnaround.
            this.boost = Math.min(MAX_BOOST, this.boost * 2);
            this.rt.count("ranDry");
          }
          this.updateCapacity();
        }
        this.requestSentAt = -1;
      }
      this.wakeUp();
    } else if (tag === TAG.release) {
      this.rt.count("releasesAsked");
      // A standing request: answered with tasks as soon as some are queued here, or with nothing when this
      // worker next goes idle (not at once while it is parked: the coordinator, told "nothing", would ask again
      // at once, for as long as a grant to this worker is on its way).
      this.owed = true;
      if (!this.parked) this.release();
    } else if (this.ended(tag, body) && tag === TAG.done) {
      this.rt.stats.counters.rttUs = Math.round(this.rttMs * 1000);
    }
  }

  protected override wakeUp(): void {
    super.wakeUp();
    this.flight.wake();
  }
}
