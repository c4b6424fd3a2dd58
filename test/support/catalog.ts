// Helpers for catalog suites: sellers, publishing, waiting for verification and for the corpus, and an
// independent report verifier (the canonicalize package and node:crypto; none of the service's signing code).
import { createHash, createPublicKey, verify } from 'node:crypto';
import canonicalize from 'canonicalize';
import { corpusArtifact } from '../../actors/index.ts';
import { type Agent, eventually, type TestSystem } from './system.ts';

export const sellerScopes = ['read:artifact', 'read:trust', 'purchase', 'publish'];

export const registerSeller = (sys: TestSystem) => registerWithScopes(sys, sellerScopes);

/** A sandbox agent registered with these scopes. */
export async function registerWithScopes(sys: TestSystem, scopes: string[]): Promise<Agent> {
  const r = await sys.call('POST', '/sandbox/agents', { body: { scopes } });
  if (r.status !== 201) throw new Error(`registration failed: ${r.status} ${JSON.stringify(r.body)}`);
  return {
    token: r.body.token,
    principalId: r.body.principal_id,
    agentId: r.body.agent_id,
    balanceCents: r.body.balance_cents,
  };
}

export function artifactContent(title: string, claims: [string, string][], passage: string[]): string {
  return [
    '---',
    `title: ${title}`,
    'topics: [testing]',
    'floor: 0.7',
    '---',
    '',
    '## Claims',
    ...claims.map(([id, text]) => `- [${id}] ${text} (source: s1, locator: "Notes")`),
    '',
    '## Sources',
    '### [s1] Test source',
    '#### Notes',
    ...passage.map((p) => `> ${p}`),
  ].join('\n');
}

export async function publish(sys: TestSystem, token: string, body: Record<string, unknown>, key: string) {
  const r = await sys.call('POST', '/v1/artifacts', { token, body, key });
  if (r.status !== 201) throw new Error(`publish failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** The digest of the artifact's current report, once the verifier has made it. */
export async function reportDigestOf(sys: TestSystem, token: string, artifactId: string): Promise<string> {
  return eventually(`a report for ${artifactId}`, async () => {
    const r = await sys.call('GET', `/v1/artifacts/${artifactId}`, { token });
    return r.body?.currentEdition?.reportDigest ?? undefined;
  });
}

/**
 * A seller's listing (floor 0.7) whose artifact's report has landed: `good` decides whether the report meets the
 * floor (one supported claim) or misses it (one of three). Keys `a-<key>` and `l-<key>`.
 */
export async function verifiedListing(
  sys: TestSystem,
  sellerToken: string,
  key: string,
  o: { price: number; good: boolean; formats?: string[] },
): Promise<{ artifactId: string; listingId: string }> {
  const claims: [string, string][] = o.good
    ? [['c1', 'Alpha beta gamma delta.']]
    : [
        ['c1', 'Alpha beta gamma delta.'],
        ['c2', 'Zeta eta theta iota kappa.'],
        ['c3', 'Lambda mu nu xi omicron.'],
      ];
  const a = await publish(
    sys,
    sellerToken,
    { title: `A ${key}`, content: artifactContent(key, claims, ['Alpha beta gamma delta.']) },
    `a-${key}`,
  );
  await reportDigestOf(sys, sellerToken, a.id);
  const l = await sys.call('POST', '/v1/listings', {
    token: sellerToken,
    body: { artifact_id: a.id, price_cents: o.price, floor: 0.7, formats: o.formats ?? ['md'] },
    key: `l-${key}`,
  });
  if (l.status !== 201) throw new Error(`listing failed: ${l.status} ${JSON.stringify(l.body)}`);
  return { artifactId: a.id as string, listingId: l.body.id as string };
}

/** Wait until every corpus edition has its report and every corpus listing is projected. */
export async function waitForCorpus(sys: TestSystem, count: number): Promise<void> {
  const seed = sys.config.sandboxCorpusSeed;
  let listings = 0;
  for (let i = 0; i < count; i++) listings += corpusArtifact(seed, i).listings.length;
  await eventually(
    'the corpus to be verified and listed',
    async () => {
      const [r] = await sys.sql<{ reports: number; listings: number }[]>`
        SELECT (SELECT count(*)::int FROM reports) AS reports, (SELECT count(*)::int FROM listings) AS listings`;
      return r!.reports >= count && r!.listings >= listings ? true : undefined;
    },
    60_000,
  );
}

/**
 * RFC 8785 as a maintained implementation writes it, called directly: a verifier outside the service would do the
 * same, and a second hand-written copy would only repeat the service's old mistakes.
 */
export function jcs(v: unknown): string {
  const text = canonicalize(v);
  if (text === undefined) throw new TypeError('not a JSON value');
  return text;
}

/** Digest and signature check with node:crypto alone. */
export function independentlyVerify(report: any, jwks: { keys: any[] }): { digestOk: boolean; signatureOk: boolean } {
  const { digest, signature, ...body } = report;
  return checkSigned(body, digest, signature, report.signingKeyId, jwks);
}

/** A compliance bundle's digest (sha256 of JCS of its body) and ES256 signature, with node:crypto alone. */
export function independentlyVerifyBundle(
  bundle: any,
  jwks: { keys: any[] },
): { digestOk: boolean; signatureOk: boolean } {
  return checkSigned(bundle.body, bundle.digest, bundle.signature?.value, bundle.signature?.keyId, jwks);
}

function checkSigned(body: unknown, digest: unknown, signature: unknown, keyId: unknown, jwks: { keys: any[] }) {
  const bytes = Buffer.from(jcs(body), 'utf8');
  const digestOk = `sha256:${createHash('sha256').update(bytes).digest('hex')}` === digest;
  const jwk = jwks.keys.find((k) => k.kid === keyId);
  if (!jwk) return { digestOk, signatureOk: false };
  let signatureOk = false;
  try {
    const key = createPublicKey({ key: jwk, format: 'jwk' });
    signatureOk = verify(
      'sha256',
      bytes,
      { key, dsaEncoding: 'ieee-p1363' },
      Buffer.from(String(signature), 'base64url'),
    );
  } catch {
    signatureOk = false;
  }
  return { digestOk, signatureOk };
}
