/** The data `workpool compare` gathers and reports (compare.ts runs, rows.ts measures, report-html.ts draws). */

export interface CompareOptions {
  /** Rank counts to run every configuration at, ascending, no repeats (`-n 2,4,8`). */
  readonly ranks: readonly number[];
  readonly pools: readonly string[];
  readonly repeat: number;
  readonly report: string | undefined;
  readonly traceDir: string | undefined;
  readonly timeoutSeconds: number | undefined;
  /** Result-line keys to leave out of the agreement check, besides the timing rule (`--ignore KEY`). */
  readonly ignore: readonly string[];
  /** A shell command line run as the sequential reference (`--baseline "CMD"`). */
  readonly baseline: string | undefined;
  readonly app: string;
  /** Host options passed to every `workpool launch` as given (--hostfile, -H, --agent, --oversubscribe, -x). */
  readonly launchArgs: readonly string[];
  readonly args: readonly string[];
}

/** Rank 0's JSON result line as compared: canonical text without the ignored keys, and the keys left out. */
export interface ResultLine {
  readonly text: string;
  readonly ignored: readonly string[];
}

/** Measurements of one launch. Times in ms. */
export interface RunMetrics {
  readonly wallMs: number;
  readonly tasks: number;
  readonly moved: number;
  readonly messages: number;
  readonly busyMs: number;
  readonly idleMs: number;
  readonly rankWallMs: number;
  readonly terminationMs: number;
  readonly result: ResultLine | undefined;
  readonly perRank: { busyMs: number; idleMs: number }[];
}

/** Every run of one configuration at one rank count. */
export interface ConfigSummary {
  readonly spec: string;
  readonly np: number;
  readonly runs: RunMetrics[];
  readonly failed: string | undefined;
  readonly tracePath: string | undefined;
}

/** The sequential reference: the median of its runs, in seconds. */
export interface Baseline {
  readonly command: string;
  readonly runsS: readonly number[];
  readonly seconds: number;
  /** Where the times came from: the command's wall time, or the `seconds` key of its JSON line. */
  readonly source: "wall" | "json";
}

export type Agreement =
  /** Every run printed the same result line (after leaving out `ignored`). */
  | { readonly kind: "agree"; readonly runs: number; readonly ignored: readonly string[] }
  /** No run printed a JSON result line on rank 0. */
  | { readonly kind: "unchecked"; readonly runs: number }
  /** Runs printed different lines (a run without a line counts as one more line). */
  | {
      readonly kind: "disagree";
      readonly lines: readonly { readonly line: string; readonly runs: readonly string[] }[];
      /** Dotted paths of the keys whose values differ between the lines. */
      readonly differing: readonly string[];
      readonly ignored: readonly string[];
    }
  /** No run finished. */
  | { readonly kind: "none" };

/** A figure over a configuration's runs: its median, and the least and greatest a run gave. */
export interface Spread {
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

export interface Row {
  readonly spec: string;
  /** A short readable name (`dist recv/random/token`); `spec` is the full one. */
  readonly label: string;
  readonly np: number;
  readonly medianS: number;
  readonly minS: number;
  readonly maxS: number;
  readonly tasks: number;
  readonly moved: number;
  readonly messages: number;
  readonly idleFraction: number;
  /** Busy time / (ranks x wall). */
  readonly busyFraction: number;
  readonly terminationMs: number;
  /** The median over runs of baseline seconds / wall seconds (paired by round); undefined without a baseline. */
  readonly speedup: number | undefined;
  /** Speedup / ranks; undefined without a baseline. */
  readonly efficiency: number | undefined;
  /**
   * Each figure's spread over the runs (the fields above are the medians). Speedup and efficiency are taken run
   * by run, each run against the baseline run of its round (compare interleaves them), so load that drifts
   * during a compare widens the spread instead of shifting one configuration.
   */
  readonly spread: {
    readonly tasks: Spread;
    readonly moved: Spread;
    readonly messages: Spread;
    readonly idleFraction: Spread;
    readonly busyFraction: Spread;
    readonly terminationMs: Spread;
    readonly speedup: Spread | undefined;
    readonly efficiency: Spread | undefined;
  };
  /** The fastest row at its rank count; never set when the results disagree. */
  readonly fastest: boolean;
}

/** Everything a compare produced, as the report draws it. */
export interface CompareOutcome {
  readonly options: CompareOptions;
  readonly configs: readonly ConfigSummary[];
  readonly rows: readonly Row[];
  readonly baseline: Baseline | undefined;
  readonly baselineFailed: string | undefined;
  readonly agreement: Agreement;
}
