// From an edition's content to a signed verification report: extract claims, judge each against its cited
// passage, summarise, canonicalise (RFC 8785), hash and sign (ES256) with the active report key.
import { createPrivateKey, sign } from 'node:crypto';
import { canonicalBytes, type ClaimT, sha256Digest, type VerificationReportT } from '../../contracts/index.ts';
import type { StoredKey } from '../../storage/index.ts';
import { parseArtifact } from './format.ts';
import { judgeClaim, judgeModel, judgePromptHash } from './judge.ts';

export const pipelineVersion = 'assay-verify/1.0.0';

export interface ReportInput {
  artifactId: string;
  editionId: string;
  contentHash: string;
  content: string;
  floor: number;
  judgeVersion: string;
  createdAt: string;
}

export type UnsignedReport = Omit<VerificationReportT, 'digest' | 'signature' | 'signingKeyId'> & {
  subject: { artifactId: string; editionId: string; contentHash: string };
};

export function buildReport(input: ReportInput): UnsignedReport {
  const parsed = parseArtifact(input.content);
  const claims: ClaimT[] = parsed.claims.map((c) => {
    const source = parsed.sources.get(c.sourceId);
    if (!source) return { ...c, entailment: 0, state: 'source_missing' };
    const passage = c.locator === '' ? source.text : source.sections.get(c.locator.toLowerCase());
    if (passage === undefined) return { ...c, entailment: 0, state: 'locator_missing' };
    return { ...c, ...judgeClaim(c.text, passage, input.judgeVersion) };
  });
  const total = claims.reduce((s, c) => s + c.entailment, 0);
  return {
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
    judgeModel,
    judgePromptVersion: input.judgeVersion,
    judgePromptHash: judgePromptHash(input.judgeVersion),
    createdAt: input.createdAt,
  };
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
  const privateKey = createPrivateKey({ key: key.privateJwk as Record<string, unknown>, format: 'jwk' });
  return sign('sha256', bytes, { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url');
}

/** An edition's report meets a floor f when its mean entailment is at least f. */
export function meetsFloor(report: { summary: { meanEntailment: number } }, floor: number): boolean {
  return report.summary.meanEntailment >= floor;
}
