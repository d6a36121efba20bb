// The start-up benchmark's hello world (bench/startup.ts), in JavaScript so that nothing needs compiling: connect,
// print the rank, close. Rank 0 also prints when each step ended, in ms since its process started.
import { connect } from "workpool";

const imported = performance.now();
const world = await connect();
const connected = performance.now();
console.log(`rank ${world.rank} of ${world.size}`);
await world.close();
const closed = performance.now();
if (world.rank === 0) {
  process.on("exit", () => {
    console.log(JSON.stringify({ imported, connected, closed, exit: performance.now() }));
  });
}
