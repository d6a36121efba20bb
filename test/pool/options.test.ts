// Pool options (lib/pool/options.ts): an unknown key is a ConfigError that names it and lists the known ones;
// an option of a run given to the pool (the usual slip: `world.pool({ reduce })`) says where it goes.
import test from "ava";
import { ConfigError } from "../../lib/errors.ts";
import { type PoolOptions, resolvePoolConfig } from "../../lib/pool/options.ts";

test("an unknown pool option names itself; a run's option says it belongs to run", (t) => {
  const err = t.throws(() => resolvePoolConfig({ colour: 1 } as unknown as PoolOptions, undefined, 2), {
    instanceOf: ConfigError,
  });
  t.regex(err?.message ?? "", /^unknown pool option `colour` \(known: mode, /);
  for (const key of ["reduce", "gather", "signal"]) {
    const e = t.throws(() => resolvePoolConfig({ [key]: 1 } as unknown as PoolOptions, undefined, 2));
    t.regex(
      e?.message ?? "",
      new RegExp(
        `^unknown pool option \`${key}\`: it is an option of a run, \`pool\\.run\\(handler, \\{ ${key} \\}\\)\``,
      ),
    );
  }
});
