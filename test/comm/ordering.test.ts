import test from "ava";
import { fixture, run } from "../helpers/run.ts";

// 3 senders each send 33,334 numbered messages to rank 0, which takes half with ANY source and ANY tag and
// the rest source by source and tag by tag; every sender's sequence must arrive strictly in order, complete.
test("100k messages from 3 senders arrive in per-sender order, with ANY and per-source receives", async (t) => {
  const result = await run(["-n", "4", fixture("ordering.ts"), "100000"]);
  t.is(result.code, 0, result.stderr);
  t.is(result.stdout, "[0] ordered 100002\n");
});
