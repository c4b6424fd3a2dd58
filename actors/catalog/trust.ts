// Trust: a recency-weighted beta estimate over outcome samples.
//
//   weight of a sample taken at t, seen at now:  w = 2^(-(now - t) / halfLife),  halfLife = 30 days
//   score    = (1 + sum of w over passes) / (2 + sum of w over all samples)     (Beta(1,1) prior, posterior mean)
//   sampleSize = number of samples;  passRate = passes / samples (unweighted), null without samples
//
// With no samples the score is 0.5. A sample's weight halves every 30 days, so old outcomes fade but never flip
// the sign of the evidence. Sums are stored anchored at a fixed epoch (weight 2^((t - epoch) / halfLife)), so
// adding a sample is one addition and reading a score multiplies the sums by 2^(-(now - epoch) / halfLife).
import type { TrustAggregate } from '../../storage/index.ts';

export const trustHalfLifeDays = 30;
const halfLifeMs = trustHalfLifeDays * 86_400_000;
const epochMs = Date.parse('2026-01-01T00:00:00.000Z');

export function weightAtEpoch(atMs: number): number {
  return 2 ** ((atMs - epochMs) / halfLifeMs);
}

export interface TrustValue {
  score: number;
  sampleSize: number;
  passRate: number | null;
}

/** What the epoch-anchored sums are multiplied by to weigh them as seen at `nowMs`. */
export function trustDecay(nowMs: number): number {
  return 2 ** (-(nowMs - epochMs) / halfLifeMs);
}

export function trustScore(agg: TrustAggregate | undefined, nowMs: number): TrustValue {
  if (!agg || agg.samples === 0) return { score: 0.5, sampleSize: 0, passRate: null };
  const k = trustDecay(nowMs);
  const pass = agg.pass_weight * k;
  const all = (agg.pass_weight + agg.fail_weight) * k;
  return {
    score: round6((1 + pass) / (2 + all)),
    sampleSize: agg.samples,
    passRate: round6(agg.passes / agg.samples),
  };
}

const round6 = (x: number) => Math.round(x * 1e6) / 1e6;
