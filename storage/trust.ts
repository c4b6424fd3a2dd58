// Trust samples and their aggregates. The weighting rule (half-life, epoch) belongs to the caller; this module
// stores the weight each sample carries at the epoch and the sums per subject.
import type { Sql } from './postgres.ts';

export interface TrustSample {
  subject: string;
  sourceKind: string;
  sourceId: string;
  pass: boolean;
  at: string;
  weightAtEpoch: number;
}

/** Record samples once each (by subject, source kind and source id) and add them to their subject's sums. */
export async function addTrustSamples(tx: Sql, samples: TrustSample[]): Promise<void> {
  for (const s of samples) {
    const inserted = await tx`
      INSERT INTO trust_samples (subject, source_kind, source_id, pass, at)
      VALUES (${s.subject}, ${s.sourceKind}, ${s.sourceId}, ${s.pass}, ${s.at})
      ON CONFLICT DO NOTHING`;
    if (inserted.count === 0) continue;
    await tx`
      INSERT INTO trust_aggregates (subject, samples, passes, pass_weight, fail_weight)
      VALUES (${s.subject}, 1, ${s.pass ? 1 : 0}, ${s.pass ? s.weightAtEpoch : 0}, ${s.pass ? 0 : s.weightAtEpoch})
      ON CONFLICT (subject) DO UPDATE SET
        samples = trust_aggregates.samples + 1,
        passes = trust_aggregates.passes + EXCLUDED.passes,
        pass_weight = trust_aggregates.pass_weight + EXCLUDED.pass_weight,
        fail_weight = trust_aggregates.fail_weight + EXCLUDED.fail_weight`;
  }
}

export interface TrustAggregate {
  subject: string;
  samples: number;
  passes: number;
  pass_weight: number;
  fail_weight: number;
}

export async function trustAggregates(sql: Sql, subjects: string[]): Promise<Map<string, TrustAggregate>> {
  if (subjects.length === 0) return new Map();
  const rows = await sql<TrustAggregate[]>`SELECT * FROM trust_aggregates WHERE subject = ANY(${subjects})`;
  return new Map(rows.map((r) => [r.subject, r]));
}
