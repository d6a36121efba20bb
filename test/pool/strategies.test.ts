/**
 * The strategy registries and everything that lists strategies agree: config.ts names, the registries,
 * the numbering of message kinds, the docs, and the launcher's help.
 */
import { readFileSync } from "node:fs";
import test from "ava";
import { INITIATION_STRATEGIES } from "../../lib/pool/balance/registry.ts";
import {
  DISTRIBUTED_COMBINATIONS,
  INITIATIONS,
  PARTNERED,
  PARTNERS,
  TERMINATIONS,
  TOPOLOGIES,
  TOPOLOGY_READERS,
} from "../../lib/pool/config.ts";
import { ENGINE_MESSAGES, ENGINE_TASK_MESSAGES, protocolFor } from "../../lib/pool/distributed/protocol.ts";
import { PARTNER_POLICIES } from "../../lib/pool/partner/registry.ts";
import { TERMINATION_DETECTORS } from "../../lib/pool/termination/registry.ts";
import { resolvePoolConfig } from "../../lib/pool/options.ts";
import type { StrategyInfo } from "../../lib/pool/strategy.ts";
import { startWorkpool } from "../helpers/run.ts";

test("the registries hold exactly the names config.ts lists, in the same order", (t) => {
  t.deepEqual(Object.keys(INITIATION_STRATEGIES), [...INITIATIONS]);
  t.deepEqual(Object.keys(PARTNER_POLICIES), [...PARTNERS]);
  t.deepEqual(Object.keys(TERMINATION_DETECTORS), [...TERMINATIONS]);
});

test("every configuration numbers its message kinds 1..n without a clash, the engine's first", (t) => {
  for (const i of INITIATIONS) {
    for (const d of TERMINATIONS) {
      const initiation = INITIATION_STRATEGIES[i];
      const detector = TERMINATION_DETECTORS[d];
      const p = protocolFor(initiation, detector);
      const all = [
        ...ENGINE_TASK_MESSAGES,
        ...ENGINE_MESSAGES,
        ...initiation.taskMessages,
        ...initiation.messages,
        ...detector.messages,
      ];
      t.deepEqual(
        all.map((k) => p.tag.get(k)),
        all.map((_, n) => n + 1),
        `${i}/${d}`,
      );
      for (const k of initiation.taskMessages) t.is(p.kinds[p.tag.get(k) as number]?.owner, "tasks");
      for (const k of detector.messages) t.is(p.kinds[p.tag.get(k) as number]?.owner, "detector");
    }
  }
  t.throws(() => protocolFor({ taskMessages: ["transfer"], messages: ["token"] }, { messages: ["token"] }), {
    message: /message kind "token" declared twice/,
  });
});

test("docs/distributed.md names every strategy in its option table", (t) => {
  const docs = readFileSync(new URL("../../docs/distributed.md", import.meta.url), "utf8");
  const row = (option: string) => docs.split("\n").find((l) => l.startsWith(`| \`${option}\``)) ?? "";
  for (const name of INITIATIONS) t.true(row("initiation").includes(`\`${name}\``), `initiation ${name}`);
  for (const name of PARTNERS) t.true(row("partner").includes(`\`${name}\``), `partner ${name}`);
  for (const name of TERMINATIONS) t.true(row("termination").includes(`\`${name}\``), `termination ${name}`);
});

test("PARTNERED and TOPOLOGY_READERS say what the strategies declare they read", (t) => {
  for (const i of INITIATIONS) {
    const reads = (INITIATION_STRATEGIES[i] as StrategyInfo).reads ?? [];
    t.is(PARTNERED[i], reads.includes("partner"), `initiation ${i} reads partner`);
  }
  const declared = [
    ...PARTNERS.filter((p) => PARTNER_POLICIES[p].reads?.includes("topology")).map((name) => `partner ${name}`),
    ...INITIATIONS.filter((i) => (INITIATION_STRATEGIES[i] as StrategyInfo).reads?.includes("topology")).map(
      (name) => `initiation ${name}`,
    ),
  ];
  t.deepEqual(
    TOPOLOGY_READERS.map((r) => `${r.option} ${r.name}`),
    declared,
  );
});

test("docs/distributed.md counts the combinations and names the strategies that read partner and topology", (t) => {
  const docs = readFileSync(new URL("../../docs/distributed.md", import.meta.url), "utf8");
  t.true(
    docs.replace(/\s+/g, " ").includes(`${DISTRIBUTED_COMBINATIONS.length} combinations`),
    `docs/distributed.md says "${DISTRIBUTED_COMBINATIONS.length} combinations"`,
  );
  const row = (option: string) => docs.split("\n").find((l) => l.startsWith(`| \`${option}\``)) ?? "";
  for (const name of INITIATIONS.filter((i) => PARTNERED[i])) t.true(row("partner").includes(name), `partner: ${name}`);
  for (const r of TOPOLOGY_READERS) {
    const named = r.option === "partner" ? `\`partner=${r.name}\`` : `\`${r.name}\``;
    t.true(row("topology").includes(named), `topology: ${named}`);
  }
});

test("the README's distributed mode names every strategy and topology", (t) => {
  const readme = readFileSync(new URL("../../README.md", import.meta.url), "utf8");
  const from = readme.indexOf("### Distributed mode");
  const section = readme.slice(from, readme.indexOf("\n### ", from + 1));
  for (const name of [...INITIATIONS, ...PARTNERS, ...TERMINATIONS, ...TOPOLOGIES]) {
    t.true(section.includes(`\`${name}\``), `README names \`${name}\``);
  }
});

test("workpool launch --help lists every strategy with its summary", async (t) => {
  const r = await startWorkpool(["launch", "--help"]).result;
  t.is(r.code, 0, r.stderr);
  const registries = [INITIATION_STRATEGIES, PARTNER_POLICIES, TERMINATION_DETECTORS] as const;
  for (const registry of registries) {
    for (const [name, s] of Object.entries(registry)) {
      t.true(r.stdout.includes(name), `help names ${name}`);
      t.true(r.stdout.replace(/\s+/g, " ").includes(s.summary), `help gives the summary of ${name}`);
    }
  }
});

test("an option the configured strategies do not read is an error naming it, not ignored", (t) => {
  const resolve = (options: Record<string, unknown>, spec?: string) =>
    resolvePoolConfig({ mode: "distributed", ...options }, spec, 8);
  const partnered = INITIATIONS.filter((i) => PARTNERED[i]).join(" and ");
  t.throws(() => resolve({ initiation: "lifeline", partner: "ring" }), {
    message: `pool option \`partner\` applies to the ${partnered} initiations only; initiation lifeline picks its own partners`,
  });
  t.throws(() => resolve({ initiation: "ripple" }, "distributed,partner=random"), { message: /option `partner`/ });
  const readers = TOPOLOGY_READERS.map((r) => `${r.option} ${r.name}`).join(" and ");
  t.throws(() => resolve({ topology: "torus" }), {
    message: `pool option \`topology\` applies to ${readers} only; this pool uses ${TOPOLOGY_READERS.length === 2 ? "neither" : "none of them"}`,
  });
  t.is(resolve({ initiation: "diffusion", topology: "torus" }).topology, "torus");
  t.is(resolve({ partner: "neighbours", topology: "ring" }).topology, "ring");
  t.is(resolve({ initiation: "lifeline" }).initiation, "lifeline");
  t.throws(() => resolve({ initiation: "diffusion", topology: "mesh" }), {
    message: "pool option `topology` must be one of hypercube, torus, ring; got `mesh`",
  });
});

test("a pool naming no mode is distributed, unless it sets an option only centralized pools have", (t) => {
  const mode = (options: object | undefined, spec?: string) => resolvePoolConfig(options, spec, 4).mode;
  t.is(mode(undefined), "distributed");
  t.is(mode({}, ""), "distributed");
  t.is(mode({ retries: 1 }), "centralized");
  t.is(mode({ coordinatorWorks: true }), "centralized");
  t.is(mode(undefined, "keep=0"), "centralized");
  t.is(mode(undefined, "initiation=lifeline"), "distributed");
  t.throws(() => mode({ initiation: "sender" }, "centralized"), {
    message: /`initiation` applies to distributed pools only; this pool is centralized/,
  });
  t.is(mode({ order: "fifo" }, "centralized"), "centralized", "a spec's mode stands when code implies none");
  t.throws(() => mode({ retries: 1, partner: "ring" }), { message: /`partner` applies to distributed pools only/ });
});
