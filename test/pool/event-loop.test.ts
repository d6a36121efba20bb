import test from "ava";
import { createSocket, type Socket } from "node:dgram";
import { yieldToEventLoop } from "../../lib/pool/executor.ts";

async function bound(): Promise<{ socket: Socket; port: number }> {
  const socket = createSocket("udp4");
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return { socket, port: socket.address().port };
}

// What a rank's yield between tasks must guarantee: I/O that is ready when it yields (a request in its inbox) is
// read before it goes on, even when it yields from the loop's poll phase, where one setImmediate fires in the
// same turn's check phase, before any poll. A datagram over loopback stands for the request: it is in the
// kernel's buffer of a socket the loop watches when the yield begins (libuv sends at once when nothing is queued).
test("a yield from the poll phase reads the I/O that is ready", async (t) => {
  const a = await bound();
  const b = await bound();
  t.teardown(() => {
    a.socket.close();
    b.socket.close();
  });
  const atB: string[] = [];
  b.socket.on("message", (data) => atB.push(data.toString()));
  const seen = new Promise<readonly string[]>((resolve, reject) => {
    a.socket.once("message", () => {
      // In the poll phase (an I/O callback): the datagram to b is ready before the yield begins.
      a.socket.send("request", b.port, "127.0.0.1", (e) => e && reject(e));
      yieldToEventLoop().then(() => resolve([...atB]), reject);
    });
  });
  b.socket.send("go", a.port, "127.0.0.1");
  t.deepEqual(await seen, ["request"]);
});
