// The slow suites (see ava.config.js): `npm run test:slow`.
import fast, { SLOW } from "./ava.config.js";

export default { ...fast, files: SLOW.map((glob) => (glob.endsWith("/**") ? `${glob}/*.test.ts` : glob)) };
