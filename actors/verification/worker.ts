// The verification worker: takes editions off the VERIFY work queue, builds and signs their reports, and stores
// each report once together with the trust samples it yields. Stateless: run more worker processes to verify
// faster; JetStream hands each queued edition to one of them.
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { Names } from '../../contracts/index.ts';
import { activeKey, addTrustSamples, getArtifact, getEdition, type Sql, storeReport } from '../../storage/index.ts';
import { weightAtEpoch } from '../catalog/trust.ts';
import type { Clock } from '../runtime/clock.ts';
import { consumeConcurrently } from '../runtime/consume.ts';
import { buildReport, meetsFloor, signReport } from './report.ts';

export interface VerifyOutcome {
  stored: boolean;
  digest: string | null;
  artifactId: string | null;
}

/** Verify one edition: build, sign and store its report unless it has one. */
export async function verifyEdition(sql: Sql, editionId: string, clock: Clock): Promise<VerifyOutcome> {
  const edition = await getEdition(sql, editionId);
  if (!edition) return { stored: false, digest: null, artifactId: null };
  if (edition.report_digest) return { stored: false, digest: edition.report_digest, artifactId: edition.artifact_id };
  const artifact = await getArtifact(sql, edition.artifact_id);
  const key = await activeKey(sql, 'report');
  if (!artifact || !key) throw new Error(`cannot verify edition ${editionId}: artifact or report key missing`);
  const at = clock.nowIso();
  const report = signReport(
    buildReport({
      artifactId: artifact.id,
      editionId: edition.id,
      contentHash: edition.content_hash,
      content: edition.content,
      floor: edition.floor,
      judgeVersion: edition.judge_version,
      createdAt: at,
    }),
    key,
  );
  const pass = meetsFloor(report, edition.floor);
  const weight = weightAtEpoch(clock.nowMs());
  let stored = false;
  await sql.begin(async (tx) => {
    // A verification outcome is a trust sample for the artifact and for the principal who published it. Samples
    // go first (they are idempotent by edition) so the artifact row, which the listing projector also updates,
    // is locked only for the end of the transaction.
    await addTrustSamples(
      tx as unknown as Sql,
      [`artifact:${artifact.id}`, `principal:${artifact.owner_principal_id}`].map((subject) => ({
        subject,
        sourceKind: 'verification',
        sourceId: edition.id,
        pass,
        at,
        weightAtEpoch: weight,
      })),
    );
    stored = await storeReport(tx as unknown as Sql, {
      digest: report.digest,
      editionId: edition.id,
      artifactId: artifact.id,
      sandbox: artifact.sandbox,
      judgeModel: report.judgeModel,
      judgeVersion: report.judgePromptVersion,
      meanEntailment: report.summary.meanEntailment,
      signingKeyId: report.signingKeyId,
      body: JSON.stringify(report),
      createdAt: at,
      judgeUsage: null,
    });
  });
  return {
    stored,
    digest: stored ? report.digest : ((await getEdition(sql, editionId))?.report_digest ?? null),
    artifactId: artifact.id,
  };
}

/** Consume the VERIFY queue until `signal` aborts, `concurrency` editions at a time. */
export async function runVerifier(
  nc: NatsConnection,
  sql: Sql,
  n: Names,
  clock: Clock,
  log: Logger,
  signal: AbortSignal,
  concurrency = 8,
): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(n.streams.verify.name, {
    durable_name: n.consumers.verifier,
    ack_policy: AckPolicy.Explicit,
    ack_wait: 60_000_000_000,
    max_ack_pending: 1000,
  });
  const consumer = await jetstream(nc).consumers.get(n.streams.verify.name, n.consumers.verifier);
  await consumeConcurrently(
    consumer,
    concurrency,
    async (m) => {
      const { editionId } = m.json<{ editionId: string }>();
      const outcome = await verifyEdition(sql, editionId, clock);
      if (!outcome.digest) log.warn({ editionId }, 'edition to verify does not exist; dropped');
      // Purchase quotes cached in actor hosts carry the current edition's report: tell them it landed.
      if (outcome.stored && outcome.artifactId) nc.publish(n.notices.artifact(outcome.artifactId));
      m.ack();
    },
    signal,
    log,
    'verification',
  );
}
