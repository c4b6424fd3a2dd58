// Trust samples and their sums. The weighting rule (half-life, epoch) belongs to the caller; this module stores the
// weight each sample carries at the epoch, summed per subject and source kind.
import { columnLiteral, type Sql } from './postgres.ts';

export interface TrustSample {
  subject: string;
  sourceKind: string;
  sourceId: string;
  pass: boolean;
  at: string;
  weightAtEpoch: number;
}

/**
 * Record samples once each (by subject, source kind and source id) and add the new ones to their sums. For sources
 * that may repeat a sample (a verifier retrying an edition).
 */
export async function addTrustSamples(tx: Sql, samples: TrustSample[]): Promise<void> {
  for (const s of samples) {
    const inserted = await tx`
      INSERT INTO trust_samples (subject, source_kind, source_id, pass, at, weight_at_epoch)
      VALUES (${s.subject}, ${s.sourceKind}, ${s.sourceId}, ${s.pass}, ${s.at}, ${s.weightAtEpoch})
      ON CONFLICT DO NOTHING`;
    if (inserted.count > 0) await addToTrustSums(tx, [s]);
  }
}

/**
 * Add samples to their sums without recording each one: for a caller that applies every sample exactly once (a
 * checkpointed projection). One statement whatever the batch, grouped per subject and kind, in key order so
 * concurrent writers lock rows in the same order.
 */
export async function addToTrustSums(tx: Sql, samples: TrustSample[]): Promise<void> {
  const sums = new Map<
    string,
    { subject: string; kind: string; samples: number; passes: number; pass: number; fail: number }
  >();
  for (const s of samples) {
    const key = `${s.subject}\u0000${s.sourceKind}`;
    let a = sums.get(key);
    if (!a) {
      a = { subject: s.subject, kind: s.sourceKind, samples: 0, passes: 0, pass: 0, fail: 0 };
      sums.set(key, a);
    }

    a.samples++;
    if (s.pass) {
      a.passes++;
      a.pass += s.weightAtEpoch;
    } else a.fail += s.weightAtEpoch;
  }
  if (sums.size === 0) return;
  const rows = [...sums].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, a]) => a);
  await tx`
    INSERT INTO trust_sums (subject, source_kind, samples, passes, pass_weight, fail_weight)
    SELECT r.subject, r.kind, r.samples, r.passes, r.pass, r.fail
    FROM unnest(${columnLiteral(rows, 'subject')}::text[], ${columnLiteral(rows, 'kind')}::text[],
                ${columnLiteral(rows, 'samples')}::int[], ${columnLiteral(rows, 'passes')}::int[],
                ${columnLiteral(rows, 'pass')}::float8[], ${columnLiteral(rows, 'fail')}::float8[])
      AS r(subject, kind, samples, passes, pass, fail)
    ON CONFLICT (subject, source_kind) DO UPDATE SET
      samples = trust_sums.samples + EXCLUDED.samples,
      passes = trust_sums.passes + EXCLUDED.passes,
      pass_weight = trust_sums.pass_weight + EXCLUDED.pass_weight,
      fail_weight = trust_sums.fail_weight + EXCLUDED.fail_weight`;
}

export interface TrustAggregate {
  subject: string;
  samples: number;
  passes: number;
  pass_weight: number;
  fail_weight: number;
}

/** Each subject's sums over all source kinds. */
export async function trustAggregates(sql: Sql, subjects: string[]): Promise<Map<string, TrustAggregate>> {
  if (subjects.length === 0) return new Map();
  const rows = await sql<TrustAggregate[]>`
    SELECT subject, sum(samples)::int AS samples, sum(passes)::int AS passes, sum(pass_weight) AS pass_weight,
           sum(fail_weight) AS fail_weight
    FROM trust_sums WHERE subject = ANY(${subjects}) GROUP BY subject`;
  return new Map(rows.map((r) => [r.subject, r]));
}

/** Forget every sample of one source kind (for a rebuild of the projection that wrote them). */
export async function dropTrustSamples(tx: Sql, sourceKind: string): Promise<void> {
  await tx`DELETE FROM trust_samples WHERE source_kind = ${sourceKind}`;
  await tx`DELETE FROM trust_sums WHERE source_kind = ${sourceKind}`;
}
