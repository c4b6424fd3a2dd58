// Signed documents the service issues about an order (compliance bundles, delivery receipts): `{ digest, body,
// signature }`, the digest sha256 of the body's canonical JSON (RFC 8785) and the signature ES256 over the same
// bytes, by the active report key. contracts/signed.ts verifies them with the public keys alone.
import { createPrivateKey, type KeyObject, sign } from 'node:crypto';
import { canonicalBytes, sha256Digest } from '../../contracts/index.ts';
import type { StoredKey } from '../../storage/index.ts';

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
