/** `missing`: no build in dist/; `stale`: a source under lib/ or launcher/ changed after it; else `fresh`. */
export function buildState(root: string): "missing" | "stale" | "fresh";
