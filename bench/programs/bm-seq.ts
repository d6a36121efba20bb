// Sequential reference for `npm run bench -- apps`: generates the sequence the block-matching app matches and
// times matchFrame (early exit on, as the app's tasks) over every frame pair. Prints one JSON line.
//   bm-seq.ts WxH:FRAMES block range
import { generateSequence } from "../../apps/block-matching/generate.ts";
import { matchFrame } from "../../apps/block-matching/search.ts";

const [spec = "1280x720:8", blockArg = "16", rangeArg = "16"] = process.argv.slice(2);
const block = Number(blockArg);
const range = Number(rangeArg);
const { frames } = generateSequence(spec);
let blocks = 0;
let sadTotal = 0;
const t0 = performance.now();
for (let k = 1; k < frames.length; k++) {
  for (const v of matchFrame(frames[k]!, frames[k - 1]!, block, range)) {
    blocks++;
    sadTotal += v.sad;
  }
}
const seconds = (performance.now() - t0) / 1000;
console.log(JSON.stringify({ frames: frames.length - 1, blocks, sadTotal, seconds }));
