// Lint rules: typescript-eslint's recommended set, with the few exceptions this codebase needs.
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "bench/out/**"] },
  ...tseslint.configs.recommended,
  {
    rules: {
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-this-alias": "off",
      "no-constant-condition": ["error", { checkLoops: false }],
    },
  },
  // Layers point down: messaging knows nothing of pools (world.pool() is defined in lib/pool/pool.ts), and
  // the launcher, the benchmarks and the simulation kernel reach the library only through its entries.
  {
    files: ["lib/comm/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        { patterns: [{ group: ["**/pool/**"], message: "lib/comm must not depend on lib/pool" }] },
      ],
    },
  },
  {
    files: ["launcher/**", "bench/**", "sim/**"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["**/lib/**", "!**/lib/index.ts", "!**/lib/internal.ts", "!**/lib/internal-start.ts"],
              message:
                "the launcher, bench/ and sim/ import lib/index.ts, lib/internal.ts or lib/internal-start.ts only",
            },
          ],
        },
      ],
    },
  },
);
