// From an edition's content to a signed verification report: extract claims, judge each against its cited
// passage, summarise, canonicalise (RFC 8785), hash and sign (ES256) with the active report key.
import { createPrivateKey, type KeyObject, sign } from 'node:crypto';
import { metrics } from '../../contracts/index.ts';
import { canonicalBytes, type ClaimT, sha256Digest, type VerificationReportT } from '../../contracts/index.ts';
import type { StoredKey } from '../../storage/index.ts';
import { parseArtifact } from './format.ts';
import type { ClaimCase, Judge, JudgeUsage } from './judges/port.ts';

export const pipelineVersion = 'assay-verify/1.0.0';

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

/** ES256 over canonical bytes, as base64url of the 64-byte r||s (what verifyEs256 in contracts checks). */
export function signBytes(bytes: Uint8Array, key: StoredKey): string {
  let privateKey = privateKeys.get(key.kid);
  if (!privateKey) {
    // Importing a JWK costs more than the signature; keys are few and never change under a kid.
    privateKey = createPrivateKey({ key: key.privateJwk as Record<string, unknown>, format: 'jwk' });
    privateKeys.set(key.kid, privateKey);
  }
  return sign('sha256', bytes, { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
}
const privateKeys = new Map<string, KeyObject>();

/** An edition's report meets a floor f when its mean entailment is at least f. */
export function meetsFloor(report: { summary: { meanEntailment: number } }, floor: number): boolean {
  return report.summary.meanEntailment >= floor;
}
