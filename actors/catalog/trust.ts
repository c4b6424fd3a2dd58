// Trust: a recency-weighted beta estimate over outcome samples.
//
//   weight of a sample taken at t, seen at now:  w = 2^(-(now - t) / halfLife),  halfLife = 30 days
//   score    = (1 + sum of w over passes) / (2 + sum of w over all samples)     (Beta(1,1) prior, posterior mean)
//   sampleSize = number of samples;  passRate = passes / samples (unweighted), null without samples
//
// With no samples the score is 0.5. A sample's weight halves every 30 days, so old outcomes fade but never flip
// the sign of the evidence. The weights and their decay are shared/trust-weight.ts's.
import type { TrustAggregate } from '../../storage/index.ts';
import { trustDecay } from '../shared/trust-weight.ts';

export interface TrustValue {
  score: number;
  sampleSize: number;
  passRate: number | null;
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
