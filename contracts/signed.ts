// Signed, content-addressed documents (verification reports now, compliance bundles later): the digest is sha256
// of the RFC 8785 canonical form of the signed body, and the signature is ES256 (P-256, SHA-256) over those same
// canonical bytes, encoded as base64url of the 64-byte r||s value. These checks need nothing but the public keys.
import { createHash, createPublicKey, verify } from 'node:crypto';
import { canonicalJson } from './canonical.ts';

export function canonicalBytes(value: unknown): Buffer {
  return Buffer.from(canonicalJson(value), 'utf8');
}

export function sha256Digest(bytes: Uint8Array): string {
  return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
}

/** A report as served: its signed body plus `digest` and `signature`. */
export interface SignedReport {
  digest: string;
  signature: string;
  signingKeyId: string;
  [field: string]: unknown;
}

/** The part of a report that is hashed and signed: everything except `digest` and `signature`. */
export function reportSignedBody(report: SignedReport): Record<string, unknown> {
  const { digest: _d, signature: _s, ...body } = report;
  return body;
}

export type VerifyOutcome = { ok: true; keyId: string } | { ok: false; reason: string };

/**
 * The canonical bytes of a document's signed part, or why it has none. A parsed document can still hold what
 * canonical JSON refuses (a lone surrogate written as an escape); nothing the service signed does, so checking such
 * a document is a failed verification, not a crash.
 */
function signedBytes(body: unknown): Buffer | string {
  try {
    return canonicalBytes(body);
  } catch (err) {
    if (!(err instanceof TypeError)) throw err;
    return `cannot canonicalise the signed content: ${err.message.replace(/^canonical JSON: /, '')}`;
  }
}

/** Check a report's digest and signature against a JWK Set (current and retired keys). */
export function verifyReport(report: SignedReport, jwks: { keys: JsonWebKey[] }): VerifyOutcome {
  if (typeof report?.digest !== 'string' || typeof report.signature !== 'string') {
    return { ok: false, reason: 'not a signed report: digest or signature missing' };
  }
  const bytes = signedBytes(reportSignedBody(report));
  if (typeof bytes === 'string') return { ok: false, reason: bytes };
  const digest = sha256Digest(bytes);
  if (digest !== report.digest) {
    return { ok: false, reason: `digest mismatch: the report says ${report.digest}, its content hashes to ${digest}` };
  }
  return verifyEs256(bytes, report.signature, report.signingKeyId, jwks);
}

export function verifyEs256(
  bytes: Uint8Array,
  signature: string,
  keyId: string,
  jwks: { keys: JsonWebKey[] },
): VerifyOutcome {
  const jwk = jwks.keys.find((k) => (k as { kid?: string }).kid === keyId);
  if (!jwk) return { ok: false, reason: `no key with id ${keyId} in the key set` };
  let ok = false;
  try {
    const key = createPublicKey({ key: jwk as Record<string, unknown>, format: 'jwk' });
    ok = verify('sha256', bytes, { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(signature, 'base64url'));
  } catch (err) {
    return { ok: false, reason: `signature check failed: ${(err as Error).message}` };
  }
  return ok ? { ok: true, keyId } : { ok: false, reason: `the signature does not match key ${keyId}` };
}

/** A compliance bundle: `{ digest, body, signature: { keyId, alg, value } }`, the signature over JCS(body). */
export interface SignedBundle {
  digest: string;
  body: Record<string, unknown>;
  signature: { keyId: string; alg: string; value: string };
}

export function verifyBundle(bundle: SignedBundle, jwks: { keys: JsonWebKey[] }): VerifyOutcome {
  if (!bundle?.body || typeof bundle.digest !== 'string' || !bundle.signature) {
    return { ok: false, reason: 'not a signed bundle: body, digest or signature missing' };
  }
  if (bundle.signature.alg !== 'ES256') return { ok: false, reason: `unsupported algorithm ${bundle.signature.alg}` };
  const bytes = signedBytes(bundle.body);
  if (typeof bytes === 'string') return { ok: false, reason: bytes };
  const digest = sha256Digest(bytes);
  if (digest !== bundle.digest) {
    return { ok: false, reason: `digest mismatch: the bundle says ${bundle.digest}, its body hashes to ${digest}` };
  }
  return verifyEs256(bytes, bundle.signature.value, bundle.signature.keyId, jwks);
}
