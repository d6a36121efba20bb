/**
 * The run loop of one simulated rank of a distributed pool, taken one step at a time. DistributedEngine's own
 * loop (lib/pool/distributed/engine.ts `loop`) is a thin async driver over synchronous steps: `open` before the
 * first task, then `afterTask`, `standBy` (the balancer may hold a rank back to deal its tasks), `next`,
 * `execute`, `settle` when the queues run dry and `park` when there is nothing left to do. A simulation drives the same steps in an order of its choosing: the adversarial ones
 * (test/helpers/simulation.ts, surviving-sim.ts) one step per scheduler pick, the timed one (bench/sim/timed.ts)
 * in stretches between virtual times.
 *
 * Invariants: `open` is the first step, once; a parked or gated rank is not runnable until the engine calls its
 * `wakeup`, and then resumes with `afterTask`, as the engine's loop does; a task the driver hands out (`step`
 * says "task") runs with `end`, now or later, and the rank takes no step in between. A step that throws fails
 * the engine (`advance`, or the timed simulation's caller), as it would a real rank's loop.
 */
import type { DistributedEngine } from "../lib/internal.ts";

/**
 * What a step did: nothing (the run is over here), the step before the first task, the `afterTask` of a rank
 * that resumes, standing by (waiting to be woken, as a parked rank, but active), handing out a task, or finding the queues dry (`settle`, then `park` unless work came back).
 */
export type DriverStep = "over" | "open" | "resume" | "standby" | "task" | "idle";

export class RankDriver<T> {
  /** Has a step to take: not parked, not waiting for its offers, not running a task, not over. */
  runnable = true;
  /** The task handed out and not yet ended. */
  running: T | undefined = undefined;
  /** The next step is the `afterTask` of a rank that resumes (at the start, and after a wake-up). */
  private resumed = true;
  private opened = false;
  /** Set as the engine's `wakeup` while the rank is parked or gated. */
  private readonly wake: () => void;

  /**
   * @param idleResumes After `settle` finds work again, or `park` finds the run still going, the next step is
   *   `afterTask` (true), as in the engine's loop; or `next` at once (false), as the adversarial simulations'
   *   schedules were recorded.
   * @param onWake Called after a parked or gated rank became runnable again (the timed simulation resumes it).
   */
  constructor(
    readonly engine: DistributedEngine<T>,
    private readonly idleResumes: boolean,
    onWake?: () => void,
  ) {
    this.wake = () => {
      this.runnable = true;
      this.resumed = true;
      onWake?.();
    };
  }

  /** Takes the rank's next step. After "task", `running` holds the task, for `end`. */
  step(): DriverStep {
    const e = this.engine;
    if (e.over) {
      this.runnable = false;
      return "over";
    }
    if (!this.opened) {
      this.opened = true;
      if (e.open()) this.wait();
      return "open";
    }
    if (this.resumed) {
      this.resumed = false;
      e.afterTask();
      return "resume";
    }
    if (e.standBy()) {
      this.wait();
      return "standby";
    }
    const task = e.next();
    if (task !== undefined) {
      this.running = task;
      this.runnable = false;
      return "task";
    }
    if (e.settle()) {
      if (this.idleResumes) this.resumed = true;
      return "idle";
    }
    if (e.park()) this.wait();
    else if (this.idleResumes) this.resumed = true;
    return "idle";
  }

  /**
   * Takes the rank's next step and runs a task handed out at once (the adversarial simulations: a task is one
   * step). A throw fails the engine, as it would a real rank's loop; then the rank takes no more steps, and
   * the step is undefined.
   */
  advance(): DriverStep | undefined {
    try {
      const kind = this.step();
      if (kind === "task") this.end();
      return kind;
    } catch (err) {
      this.engine.fail(err as Error);
      this.runnable = false;
      return undefined;
    }
  }

  /** Runs the task handed out, then the balancer's look at the queue unless the run ended with it. */
  end(): void {
    const task = this.running as T;
    this.running = undefined;
    this.runnable = true;
    const e = this.engine;
    e.execute(task);
    if (!e.over) e.afterTask();
  }

  /** Parked, or waiting on its offers: the engine calls `wakeup` when the rank has something to do. */
  private wait(): void {
    this.runnable = false;
    this.engine.wakeup = this.wake;
  }
}
