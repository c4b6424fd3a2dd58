// Client ID metadata documents (MCP authorization 2025-11-25; draft-ietf-oauth-client-id-metadata-document): a
// client whose client_id is an https URL is described by the JSON document at that URL. The document is fetched
// through the outbound rule every fetch of a user-named URL shares (actors/shared/outbound-fetch.ts: SSRF check,
// timeout, size cap, test-mode loopback and CA), checked, and kept for as long as its Cache-Control allows, within
// bounds.
import { grantTypes } from '../../contracts/index.ts';
import { addressNotPublic, getOutbound, hostNotPublic, type OutboundOptions } from '../shared/outbound-fetch.ts';
import { type Checked, type ClientMetadata, checkClientMetadata } from './rules.ts';

/** The draft's suggested limit on a document (section 6.6): 5 kB. */
export const metadataDocumentBytesMax = 5 * 1024;
/** Documents kept at once per worker; the oldest goes first. */
const cacheEntriesMax = 1000;
/** A document without Cache-Control is kept this long; none longer than the maximum, whatever it says. */
const cacheSecondsDefault = 300;
const cacheSecondsMax = 86_400;

/** Grants a metadata-document client may use: it is a browser-redirect client (the MCP authorization flow). */
const documentGrantTypes: readonly string[] = [grantTypes.authorizationCode, grantTypes.refreshToken];

const unusable = (
  problem: string,
): { ok: false; refusal: { refused: 'client_metadata_unusable'; problem: string } } => ({
  ok: false,
  refusal: { refused: 'client_metadata_unusable', problem },
});

/**
 * Why a client_id cannot be a metadata document's URL (draft section 3): https only, with a path, without a
 * fragment, user information or dot segments. Null when it can.
 */
export function metadataDocumentUrlProblem(clientId: string): string | null {
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return 'the client_id is neither a registered client nor a URL';
  }
  if (url.protocol !== 'https:') return 'a client_id that is a URL must be an https URL';
  if (url.pathname === '/' || url.pathname === '') return 'a client_id URL must have a path';
  if (clientId.includes('#')) return 'a client_id URL must not have a fragment';
  if (url.username !== '' || url.password !== '') return 'a client_id URL must not carry user information';
  if (/\/\.\.?(\/|$)/.test(clientId.slice(clientId.indexOf('//') + 2))) {
    return 'a client_id URL must not have . or .. segments';
  }
  return null;
}

/** The document's metadata as a client's: it names the URL it lives at, and registers like a public client. */
export function checkMetadataDocument(url: string, document: unknown): Checked<ClientMetadata> {
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return unusable('the metadata document is not a JSON object');
  }
  const d = document as Record<string, unknown>;
  // Section 4.1: the document says which URL it is, exactly (a simple string comparison).
  if (d.client_id !== url) return unusable('the client_id in the metadata document is not the URL it was fetched from');
  if (d.client_secret !== undefined || d.client_secret_expires_at !== undefined) {
    return unusable('a metadata document must not carry a client secret');
  }
  if (!Array.isArray(d.redirect_uris) || d.redirect_uris.length === 0) {
    return unusable('the metadata document names no redirect_uris');
  }
  const checked = checkClientMetadata({ grant_types: documentGrantTypes, ...d });
  if (!checked.ok) {
    const r = checked.refusal;
    return unusable(r.refused === 'protocol' ? r.description : 'the metadata document is not valid client metadata');
  }
  const extra = checked.value.grantTypes.filter((g) => !documentGrantTypes.includes(g));
  if (extra.length > 0 || !checked.value.grantTypes.includes(grantTypes.authorizationCode)) {
    return unusable(`a metadata-document client uses the grants ${documentGrantTypes.join(' and ')} only`);
  }
  return checked;
}

/** Seconds a fetched document may be kept: its Cache-Control, within [0, cacheSecondsMax]. */
export function cacheSecondsOf(cacheControl: string | undefined): number {
  if (cacheControl === undefined) return cacheSecondsDefault;
  const directives = cacheControl
    .toLowerCase()
    .split(',')
    .map((p) => p.trim());
  if (directives.some((p) => p === 'no-store' || p === 'no-cache')) return 0;
  const maxAge = directives.find((p) => p.startsWith('max-age='));
  const seconds = maxAge === undefined ? Number.NaN : Number(maxAge.slice('max-age='.length));
  if (!Number.isFinite(seconds)) return cacheSecondsDefault;
  return Math.min(cacheSecondsMax, Math.max(0, Math.floor(seconds)));
}

/** Words for why a fetch failed, for the person: the resolver's answer is never among them. */
function fetchProblem(error: string | null, status: number | null): string {
  if (error === addressNotPublic || error === hostNotPublic) return "the metadata document's address is not public";
  if (error === 'timeout') return 'the metadata document did not arrive in time';
  if (status !== null) return `fetching the metadata document answered HTTP ${status}`;
  return 'the metadata document could not be fetched';
}

/** Fetches, checks and keeps client ID metadata documents, per worker. */
export class ClientMetadataDocuments {
  private readonly cache = new Map<string, { metadata: ClientMetadata; untilMs: number }>();

  constructor(
    /** The shared outbound rule, its body cap one byte over the document limit (to tell "too large"). */
    private readonly outbound: OutboundOptions,
    private readonly nowMs: () => number,
  ) {}

  /** The client metadata the document at `url` declares (from the cache while it is fresh), or why not. */
  async metadata(url: string): Promise<Checked<ClientMetadata>> {
    const problem = metadataDocumentUrlProblem(url);
    if (problem !== null) return unusable(problem);
    const kept = this.cache.get(url);
    if (kept && kept.untilMs > this.nowMs()) return { ok: true, value: kept.metadata };
    this.cache.delete(url);
    const got = await getOutbound(url, { accept: 'application/json' }, this.outbound);
    if (!got.ok || got.status !== 200 || got.responseSnippet === null)
      return unusable(fetchProblem(got.error, got.status));
    if (got.truncated || Buffer.byteLength(got.responseSnippet) > metadataDocumentBytesMax) {
      return unusable(`the metadata document is larger than ${metadataDocumentBytesMax} bytes`);
    }
    let document: unknown;
    try {
      document = JSON.parse(got.responseSnippet);
    } catch {
      return unusable('the metadata document is not JSON');
    }
    const checked = checkMetadataDocument(url, document);
    if (!checked.ok) return checked;
    const seconds = cacheSecondsOf(got.responseHeaders['cache-control']);
    if (seconds > 0) {
      const oldest = this.cache.keys().next();
      if (this.cache.size >= cacheEntriesMax && !oldest.done) this.cache.delete(oldest.value);
      this.cache.set(url, { metadata: checked.value, untilMs: this.nowMs() + seconds * 1000 });
    }
    return checked;
  }
}
