// Signed documents the service issues about an order (compliance bundles, delivery receipts): `{ digest, body,
// signature }`, the digest sha256 of the body's canonical JSON (RFC 8785) and the signature ES256 over the same
// bytes, by the active report key. contracts/signed.ts verifies them with the public keys alone.
import { canonicalBytes, sha256Digest } from '../../contracts/index.ts';
import type { StoredKey } from '../../storage/index.ts';
import { signBytes } from '../verification/report.ts';

export interface SignedDocument<B> {
  digest: string;
  body: B;
  signature: { keyId: string; alg: 'ES256'; value: string };
}

export function signDocument<B>(body: B, key: StoredKey): SignedDocument<B> {
  const bytes = canonicalBytes(body);
  return {
    digest: sha256Digest(bytes),
    body,
    signature: { keyId: key.kid, alg: 'ES256', value: signBytes(bytes, key) },
  };
}
