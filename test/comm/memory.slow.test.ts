import test from "ava";
import { fixture, linesOf, ok, run } from "../helpers/run.ts";

// Issue 30: a 1 GiB world.send peaked at 4.2 GiB on the sender. Now the data and the copy send makes of it (so the
// app may change the data at once), nothing of the whole size more: under CURVE a large body travels in pieces
// (lib/comm/transport.ts), which CURVE copies one at a time. The receiver copies each piece into the body as it
// comes, so it peaks at about the message; a typed array in a msgpack body is then a view of that body, not a copy
// (lib/comm/codec.ts `typedArray`: the Float64Array case peaked at 2.12x when msgpackr copied it out, 1.25x now).
// The fixture measures the kernel's peak RSS (VmHWM) against the RSS before the data was made, on each side.
const SENDER_BOUND = 2.5;

const cases = [
  { kind: "bytes", insecure: false, receiverBound: 1.5 },
  { kind: "floats", insecure: false, receiverBound: 1.5 },
  { kind: "bytes", insecure: true, receiverBound: 1.5 },
] as const;

for (const { kind, insecure, receiverBound } of cases) {
  const how = `${kind}, ${insecure ? "--insecure" : "CURVE"}`;
  test(`a 256 MiB send (${how}) peaks under ${SENDER_BOUND}x its size on the sender, ${receiverBound}x on the receiver`, async (t) => {
    const r = await run(["-n", "2", ...(insecure ? ["--insecure"] : []), fixture("send-memory.ts"), "256", kind]);
    ok(t, r);
    const lines = linesOf(r.stdout);
    const sent = JSON.parse(lines.find((l) => l.startsWith("[0] "))?.slice(4) ?? "null") as { ratio: number };
    const received = /^\[1\] received 268435456, ratio ([\d.]+)$/.exec(lines.find((l) => l.startsWith("[1] ")) ?? "");
    t.truthy(received, r.stdout);
    t.log(`sender ${sent.ratio}x, receiver ${received?.[1]}x`);
    t.true(sent.ratio < SENDER_BOUND, `sender peak ${sent.ratio}x the message`);
    t.true(Number(received?.[1]) < receiverBound, `receiver peak ${received?.[1]}x the message`);
  });
}
