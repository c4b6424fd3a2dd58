// The verification worker: takes editions off the VERIFY work queue, judges their claims with the judge their
// recorded version names, signs their reports, and stores each report once together with the trust samples it
// yields. Stateless: run more worker processes to verify faster; JetStream hands each queued edition to one of them.
// A judge that cannot answer leaves the edition pending: the work goes back to the queue and is tried again later.
import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Logger } from 'pino';
import type { Names } from '../../contracts/index.ts';
import { activeKey, addTrustSamples, getArtifact, getEdition, type Sql, storeReport } from '../../storage/index.ts';
import { weightAtEpoch } from '../shared/trust-weight.ts';
import type { Clock } from '../runtime/clock.ts';
import { consumeConcurrently } from '../runtime/consume.ts';
import { type Judges, JudgeUnavailable } from './judges/index.ts';
import { buildReport, meetsFloor, signReport } from './report.ts';

export interface VerifyOutcome {
  stored: boolean;
  digest: string | null;
  artifactId: string | null;
}

/**
 * Verify one edition: judge, sign and store its report unless it has one. Throws JudgeUnavailable when its judge
 * cannot answer: nothing is stored, and the edition stays pending.
 */
export async function verifyEdition(sql: Sql, editionId: string, clock: Clock, judges: Judges): Promise<VerifyOutcome> {
  const edition = await getEdition(sql, editionId);
  if (!edition) return { stored: false, digest: null, artifactId: null };
  if (edition.report_digest) return { stored: false, digest: edition.report_digest, artifactId: edition.artifact_id };
  const artifact = await getArtifact(sql, edition.artifact_id);
  const key = await activeKey(sql, 'report');
  if (!artifact || !key) throw new Error(`cannot verify edition ${editionId}: artifact or report key missing`);
  const at = clock.nowIso();
  const built = await buildReport(
    {
      artifactId: artifact.id,
      editionId: edition.id,
      contentHash: edition.content_hash,
      content: edition.content,
      floor: edition.floor,
      judgeVersion: edition.judge_version,
      createdAt: at,
    },
    judges.forVersion(edition.judge_version),
  );
  const report = signReport(built.report, key);
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
      judgeUsage: built.usage,
    });
  });
  return {
    stored,
    digest: stored ? report.digest : ((await getEdition(sql, editionId))?.report_digest ?? null),
    artifactId: artifact.id,
  };
}

/** How long the server waits for a verifier's acknowledgement before handing the edition to another. */
const ackWaitMs = 60_000;
/** While an edition is being judged (a model judge may take minutes), the verifier tells the server every so often. */
const workingEveryMs = 20_000;
/** An edition whose judge could not answer is tried again after 1 s, doubling per try, at most this long after. */
const retryDelayMaxMs = 300_000;

export interface VerifierDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  clock: Clock;
  log: Logger;
  judges: Judges;
}

/** Consume the VERIFY queue until `signal` aborts, `concurrency` editions at a time. */
export async function runVerifier(d: VerifierDeps, signal: AbortSignal, concurrency = 8): Promise<void> {
  const { nc, sql, names: n, clock, log } = d;
  const jsm = await jetstreamManager(nc);
  await jsm.consumers.add(n.streams.verify.name, {
    durable_name: n.consumers.verifier,
    ack_policy: AckPolicy.Explicit,
    ack_wait: ackWaitMs * 1_000_000,
    max_ack_pending: 1000,
  });
  const consumer = await jetstream(nc).consumers.get(n.streams.verify.name, n.consumers.verifier);
  await consumeConcurrently(
    consumer,
    concurrency,
    async (m) => {
      const { editionId } = m.json<{ editionId: string }>();
      const working = setInterval(() => m.working(), workingEveryMs);
      let outcome: VerifyOutcome;
      try {
        outcome = await verifyEdition(sql, editionId, clock, d.judges);
      } catch (err) {
        if (!(err instanceof JudgeUnavailable)) throw err;
        // Pending, not failed: the same edition goes back to the queue for a later try; no other judge is asked.
        const delayMs = Math.min(retryDelayMaxMs, 1000 * 2 ** Math.min(20, m.info.deliveryCount - 1));
        log.warn({ editionId, err: err.message, retryInMs: delayMs }, 'judge unavailable; the edition stays pending');
        m.nak(delayMs);
        return;
      } finally {
        clearInterval(working);
      }
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
