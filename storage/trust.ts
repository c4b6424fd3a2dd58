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
      INSERT INTO trust_samples (subject, source_kind, source_id, pass, at, weight_at_epoch)
      VALUES (${s.subject}, ${s.sourceKind}, ${s.sourceId}, ${s.pass}, ${s.at}, ${s.weightAtEpoch})
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

/**
 * The same as addTrustSamples for a large batch, in two statements: insert the samples (skipping ones recorded
 * before), then add the ones actually inserted to their subjects' sums, grouped per subject.
 */
export async function addTrustSamplesBulk(tx: Sql, samples: TrustSample[]): Promise<void> {
  const inserted = await tx<{ subject: string; source_kind: string; source_id: string }[]>`
    INSERT INTO trust_samples (subject, source_kind, source_id, pass, at, weight_at_epoch)
    SELECT * FROM unnest(${tx.array(samples.map((s) => s.subject) as never[], 25)}::text[],
                         ${tx.array(samples.map((s) => s.sourceKind) as never[], 25)}::text[],
                         ${tx.array(samples.map((s) => s.sourceId) as never[], 25)}::text[],
                         ${tx.array(samples.map((s) => s.pass) as never[], 16)}::boolean[],
                         ${tx.array(samples.map((s) => s.at) as never[], 1184)}::timestamptz[],
                         ${tx.array(samples.map((s) => s.weightAtEpoch) as never[], 701)}::float8[])
    ON CONFLICT DO NOTHING
    RETURNING subject, source_kind, source_id`;
  const key = (s: {
    subject: string;
    source_kind?: string;
    sourceKind?: string;
    source_id?: string;
    sourceId?: string;
  }) => `${s.subject}\u0000${s.source_kind ?? s.sourceKind}\u0000${s.source_id ?? s.sourceId}`;
  const fresh = new Set(inserted.map(key));
  const sums = new Map<string, { samples: number; passes: number; pass: number; fail: number }>();
  for (const s of samples) {
    if (!fresh.delete(key(s))) continue;
    const a = sums.get(s.subject) ?? { samples: 0, passes: 0, pass: 0, fail: 0 };
    a.samples++;
    if (s.pass) {
      a.passes++;
      a.pass += s.weightAtEpoch;
    } else a.fail += s.weightAtEpoch;
    sums.set(s.subject, a);
  }
  if (sums.size === 0) return;
  const rows = [...sums].sort(([a], [b]) => (a < b ? -1 : 1));
  await tx`
    INSERT INTO trust_aggregates (subject, samples, passes, pass_weight, fail_weight)
    SELECT * FROM unnest(${tx.array(rows.map(([s]) => s) as never[], 25)}::text[],
                         ${tx.array(rows.map(([, a]) => a.samples) as never[], 23)}::int[],
                         ${tx.array(rows.map(([, a]) => a.passes) as never[], 23)}::int[],
                         ${tx.array(rows.map(([, a]) => a.pass) as never[], 701)}::float8[],
                         ${tx.array(rows.map(([, a]) => a.fail) as never[], 701)}::float8[])
    ON CONFLICT (subject) DO UPDATE SET
      samples = trust_aggregates.samples + EXCLUDED.samples,
      passes = trust_aggregates.passes + EXCLUDED.passes,
      pass_weight = trust_aggregates.pass_weight + EXCLUDED.pass_weight,
      fail_weight = trust_aggregates.fail_weight + EXCLUDED.fail_weight`;
}

/** Drop every sample of one kind and recompute all aggregates from the samples that remain. */
export async function dropTrustSamples(tx: Sql, sourceKind: string): Promise<void> {
  await tx`DELETE FROM trust_samples WHERE source_kind = ${sourceKind}`;
  await tx`TRUNCATE trust_aggregates`;
  await tx`
    INSERT INTO trust_aggregates (subject, samples, passes, pass_weight, fail_weight)
    SELECT subject, count(*)::int, (count(*) FILTER (WHERE pass))::int,
           coalesce(sum(weight_at_epoch) FILTER (WHERE pass), 0), coalesce(sum(weight_at_epoch) FILTER (WHERE NOT pass), 0)
    FROM trust_samples GROUP BY subject`;
}
