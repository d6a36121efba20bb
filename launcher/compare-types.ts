/** The data `workpool compare` gathers and reports (compare.ts measures, report-html.ts draws). */

export interface CompareOptions {
  readonly np: number;
  readonly pools: readonly string[];
  readonly repeat: number;
  readonly report: string | undefined;
  readonly traceDir: string | undefined;
  readonly timeoutSeconds: number | undefined;
  readonly app: string;
  readonly args: readonly string[];
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
  readonly result: string | undefined;
  readonly perRank: { busyMs: number; idleMs: number }[];
}

export interface ConfigSummary {
  readonly spec: string;
  readonly runs: RunMetrics[];
  readonly failed: string | undefined;
  readonly tracePath: string | undefined;
}

export interface Row {
  readonly spec: string;
  readonly medianS: number;
  readonly minS: number;
  readonly maxS: number;
  readonly tasks: number;
  readonly moved: number;
  readonly messages: number;
  readonly idleFraction: number;
  readonly efficiency: number;
  readonly terminationMs: number;
}
