// Ids derived from (principal, operation, Idempotency-Key): a retried call creates the same artifact, edition or
// listing, so the service it is forwarded to can be idempotent by id alone.
import { hash } from 'node:crypto';

export function derivedId(...parts: string[]): string {
  // One-shot hashing: a Hash object per call cost more than the hash (this is on the purchase path).
  const h = hash('sha256', parts.join('\u0000'), 'buffer');
  h[6] = (h[6]! & 0x0f) | 0x50; // version 5 (name-based, SHA-derived)
  h[8] = (h[8]! & 0x3f) | 0x80; // RFC 4122 variant
  const hex = h.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

/** The order a purchase under this Idempotency-Key makes: a retry finds the same order, and so does the index. */
export function purchaseOrderId(principalId: string, idempotencyKey: string): string {
  return derivedId(principalId, 'order', idempotencyKey);
}
