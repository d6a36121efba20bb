import type * as Zmq from "zeromq";
import { loadZmq, whenZmqLoads, zmqInProcess } from "./zmq.ts";

/**
 * How many sends and receives the app has waiting on ZeroMQ sockets of its own (not the job's: see `ownSocket`).
 *
 * A pending zeromq.js receive keeps the process alive, yet it is not among the resources Node lists
 * (`process.getActiveResourcesInfo()`): its poller lives in the addon. The idle watch (router.ts) would then
 * take a rank that awaits its own socket, say a control socket of a benchmark or a service the app talks to,
 * for an app that forgot `close()`. So `send` and `receive` of every zeromq.js socket in this process are
 * counted while they are pending: once, on the shared prototype, from the moment zeromq is in the process. That
 * is when this module loads if the app loaded zeromq first, else when workpool loads it, as a world of more than
 * one rank connects, before the idle watch starts (a world of one has none); an operation the app started on a
 * socket of its own before its world connected is not counted. An app whose zeromq package is another copy than
 * workpool's is not seen (its sockets' prototype is another).
 */

const own = new WeakSet<object>();
let pending = 0;

/** Marks `socket` as one of the job's own (a rank's inbox or outbox): its operations are not the app's. */
export function ownSocket(socket: Zmq.Socket): void {
  own.add(socket);
}

/** Sends and receives now waiting on sockets that are not the job's own. */
export function appZmqWaiting(): number {
  return pending;
}

type Method = (this: Zmq.Socket, ...args: unknown[]) => Promise<unknown>;
const COUNTED = Symbol.for("workpool.zmqCounted");

function count(zmq: typeof Zmq, name: "send" | "receive"): void {
  const proto = zmq.Socket.prototype as unknown as Record<string, Method & { [COUNTED]?: true }>;
  const original = proto[name];
  if (!original || original[COUNTED]) return;
  const counted = function (this: Zmq.Socket, ...args: unknown[]): Promise<unknown> {
    if (own.has(this)) return original.apply(this, args);
    pending++;
    let promise: Promise<unknown>;
    try {
      promise = original.apply(this, args);
    } catch (e) {
      pending--;
      throw e;
    }
    const done = () => {
      pending--;
    };
    promise.then(done, done);
    return promise;
  } as Method & { [COUNTED]?: true };
  counted[COUNTED] = true;
  // The addon defines its methods read-only but configurable.
  Object.defineProperty(proto, name, { value: counted, writable: false, enumerable: false, configurable: true });
}

/** Counts on zeromq's socket prototype (`count` skips a method counted already). */
function install(zmq: typeof Zmq): void {
  count(zmq, "send");
  count(zmq, "receive");
}

if (zmqInProcess()) install(loadZmq());
else whenZmqLoads(install);
