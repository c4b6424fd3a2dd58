// From an edition's content to a signed verification report: extract claims, judge each against its cited
// passage, summarise, canonicalise (RFC 8785), hash and sign (ES256) with the active report key.
import { metrics } from '../runtime/telemetry.ts';
import { canonicalBytes, type ClaimT, sha256Digest, type VerificationReportT } from '../../contracts/index.ts';
import type { StoredKey } from '../../storage/index.ts';
import { signBytes } from '../shared/signed-document.ts';
import { parseArtifact } from './format.ts';
import { type ClaimCase, type Judge, JudgeUnavailable, type JudgeUsage } from './judges/port.ts';
import { judgeQualityOf } from './judges/quality.ts';

/**
 * The report format. 1.1.0 adds `judgeQuality` (the judge version's measured quality on the reference set) to the
 * signed body; reports of 1.0.0 lack it and still verify.
 */
export const pipelineVersion = 'assay-verify/1.1.0';

export interface ReportInput {
  artifactId: string;
  editionId: string;
  contentHash: string;
  content: string;
  floor: number;
  /** The judge version the edition is to be judged with (recorded when it was published). */
  judgeVersion: string;
  createdAt: string;
}

export type UnsignedReport = Omit<VerificationReportT, 'digest' | 'signature' | 'signingKeyId'> & {
  subject: { artifactId: string; editionId: string; contentHash: string };
};

/**
 * Judge an edition's claims and summarise them into an unsigned report. A claim whose source or locator is missing
 * is settled without the judge; the others go to `judge` in one batch. Throws JudgeUnavailable when the judge
 * cannot answer (the edition stays pending). Returns what the judging cost at a model endpoint beside the report.
 */
export async function buildReport(
  input: ReportInput,
  judge: Judge,
): Promise<{ report: UnsignedReport; usage: JudgeUsage | null }> {
  const parsed = parseArtifact(input.content);
  const cases: ClaimCase[] = [];
  const resolved = parsed.claims.map((c) => {
    const source = parsed.sources.get(c.sourceId);
    if (!source) return { ...c, entailment: 0, state: 'source_missing' };
    const passage = c.locator === '' ? source.text : source.sections.get(c.locator.toLowerCase());
    if (passage === undefined) return { ...c, entailment: 0, state: 'locator_missing' };
    cases.push({ claim: c.text, passage });
    return null;
  });
  const started = performance.now();
  const run = await judge.judge(cases, input.judgeVersion);
  metrics.judgeSeconds.observe({ judge: judge.driver }, (performance.now() - started) / 1000);
  // A claim the judge could not answer (a model's answer that was no verdict, twice) is not a judgement: counting it
  // as 0 would fail an edition for the judge's fault. The edition waits, pending, and is judged again later.
  const unanswered = run.judgements.filter((j) => j.state === 'judge_error').length;
  if (unanswered > 0) {
    throw new JudgeUnavailable(
      `the judge gave no verdict for ${unanswered} of ${cases.length} claims; the edition waits`,
    );
  }
  let next = 0;
  const claims: ClaimT[] = parsed.claims.map((c, i) => resolved[i] ?? { ...c, ...run.judgements[next++]! });
  const total = claims.reduce((s, c) => s + c.entailment, 0);
  const report: UnsignedReport = {
    pipelineVersion,
    subject: { artifactId: input.artifactId, editionId: input.editionId, contentHash: input.contentHash },
    claims,
    summary: {
      claimsTotal: claims.length,
      verified: claims.filter((c) => c.state === 'verified').length,
      floor: input.floor,
      meanEntailment: claims.length === 0 ? 0 : Math.round((total / claims.length) * 10_000) / 10_000,
      humanReviewed: false,
    },
    judgeModel: run.model,
    judgePromptVersion: run.version,
    judgePromptHash: run.promptHash,
    judgeQuality: judgeQualityOf(run.version),
    judge: { driver: judge.driver, entailmentFrom: run.entailmentFrom },
    createdAt: input.createdAt,
  };
  return { report, usage: run.usage };
}

export function signReport(
  unsigned: UnsignedReport,
  key: StoredKey,
): VerificationReportT & { subject: UnsignedReport['subject'] } {
  const body = { ...unsigned, signingKeyId: key.kid };
  const bytes = canonicalBytes(body);
  return { ...body, digest: sha256Digest(bytes), signature: signBytes(bytes, key) };
}

/** An edition's report meets a floor f when its mean entailment is at least f. */
export function meetsFloor(report: { summary: { meanEntailment: number } }, floor: number): boolean {
  return report.summary.meanEntailment >= floor;
}
