// The weights of trust samples (catalog/trust.ts has the score they make). A sample's weight halves every
// `trustHalfLifeDays`; sums are stored anchored at a fixed epoch (weight 2^((t - epoch) / halfLife)), so adding a
// sample is one addition (the verification worker's and the ledger projection's) and reading a score multiplies the
// sums by 2^(-(now - epoch) / halfLife).
export const trustHalfLifeDays = 30;
const halfLifeMs = trustHalfLifeDays * 86_400_000;
const epochMs = Date.parse('2026-01-01T00:00:00.000Z');

/** A sample taken at `atMs`, weighed as at the epoch the stored sums are anchored to. */
export function weightAtEpoch(atMs: number): number {
  return 2 ** ((atMs - epochMs) / halfLifeMs);
}

/** What the epoch-anchored sums are multiplied by to weigh them as seen at `nowMs`. */
export function trustDecay(nowMs: number): number {
  return 2 ** (-(nowMs - epochMs) / halfLifeMs);
}
