import * as zmq from "zeromq";

/**
 * The rank side of a benchmark's control channel: rank 0 of a measured program connects a PAIR socket to the
 * endpoint the bench gave it and runs one command at a time, answering each with one JSON result. The bench
 * can then interleave phases of several programs (workpool, raw zeromq) so that drift in machine load hits
 * them alike. The channel is idle while a phase runs, so it costs the measured sockets nothing.
 */
export async function serveControl<C extends { op: string }>(
  endpoint: string,
  run: (command: C) => Promise<unknown>,
): Promise<void> {
  const ctl = new zmq.Pair({ linger: 1000 });
  ctl.connect(endpoint);
  try {
    await ctl.send(JSON.stringify({ op: "ready" }));
    for (;;) {
      const [raw] = await ctl.receive();
      const command = JSON.parse(String(raw)) as C;
      const result = await run(command);
      await ctl.send(JSON.stringify(result ?? null));
      if (command.op === "quit") return;
    }
  } finally {
    ctl.close();
  }
}
