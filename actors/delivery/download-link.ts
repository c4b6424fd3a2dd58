// Signed download links (docs/purchases.md, "Signed links"): a delivery's download_url carries its own authorization,
// as object stores sign theirs, so a browser or a download tool fetches the bytes without the bearer token. The link
// names the order, the format, the agent it was handed to, when it expires and the key it is signed with; the
// signature is HMAC-SHA256 over all of them, so changing any one (another order, another format, a later expiry)
// makes it fail. The HMAC key is derived (HKDF-SHA256) from the private part of a report signing key: every worker
// that delivers can derive it, nothing new is stored, and a link signed before a rotation keeps working until it
// expires, because retired keys stay in the table.
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import type { StoredKey } from '../../storage/index.ts';

export type LinkFormat = 'md' | 'pdf';

/** What a link grants: one format of one order, for the agent it was handed to, until `expiresS`. */
export interface LinkGrant {
  orderId: string;
  format: LinkFormat;
  agentId: string;
  /** Unix seconds. */
  expiresS: number;
}

/** The query parameters of a link, as the download route reads them. */
export interface LinkQuery {
  expires?: number;
  agent?: string;
  key?: string;
  signature?: string;
}

/** Why a link is refused; each is answered 401 unauthorized, in words that say how to get a good one. */
export type LinkCheck =
  | { ok: true; grant: LinkGrant }
  | { ok: false; reason: 'incomplete' | 'unknown_key' | 'bad_signature' | 'expired' };

const hkdfInfo = 'assay download link v1';

/** The HMAC key of a signing key (32 bytes), never the signing key itself. */
export function linkKeyOf(key: StoredKey): Buffer {
  const d = key.privateJwk.d;
  if (!d) throw new Error(`key ${key.kid} has no private part to derive a link key from`);
  return Buffer.from(hkdfSync('sha256', Buffer.from(d, 'base64url'), Buffer.alloc(0), hkdfInfo, 32));
}

function mac(linkKey: Buffer, kid: string, g: LinkGrant): Buffer {
  return createHmac('sha256', linkKey)
    .update(`assay-download-link/1\n${kid}\n${g.orderId}\n${g.format}\n${g.agentId}\n${g.expiresS}`, 'utf8')
    .digest();
}

/** The query string of a link for `grant`, signed with `key` (its link key derived once by the caller). */
export function signLink(grant: LinkGrant, kid: string, linkKey: Buffer): string {
  const signature = mac(linkKey, kid, grant).toString('base64url');
  return `format=${grant.format}&expires=${grant.expiresS}&agent=${grant.agentId}&key=${encodeURIComponent(kid)}&signature=${signature}`;
}

/**
 * Check a link for `orderId` and `format` as the request names them. The signature is compared in constant time,
 * and checked before the expiry, so an altered link says nothing about when a real one expires.
 */
export function checkLink(
  orderId: string,
  format: LinkFormat,
  q: LinkQuery,
  linkKeyFor: (kid: string) => Buffer | null,
  nowS: number,
): LinkCheck {
  if (q.expires === undefined || q.agent === undefined || q.key === undefined || q.signature === undefined) {
    return { ok: false, reason: 'incomplete' };
  }
  const linkKey = linkKeyFor(q.key);
  if (linkKey === null) return { ok: false, reason: 'unknown_key' };
  const grant: LinkGrant = { orderId, format, agentId: q.agent, expiresS: q.expires };
  const expected = mac(linkKey, q.key, grant);
  const given = Buffer.from(q.signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { ok: false, reason: 'bad_signature' };
  if (nowS >= q.expires) return { ok: false, reason: 'expired' };
  return { ok: true, grant };
}
