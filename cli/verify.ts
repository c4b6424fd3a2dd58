// `assay verify-report`: check a verification report, compliance bundle or delivery receipt offline, with nothing
// but the public keys (a JWK Set file or URL, such as <web_url>/.well-known/report-keys). A client command: it
// imports contracts/ only.
import { readFile } from 'node:fs/promises';
import { type SignedBundle, type SignedReport, verifyBundle, verifyReport } from '../contracts/index.ts';

export async function loadKeys(source: string): Promise<{ keys: JsonWebKey[] }> {
  const text = /^https?:\/\//.test(source) ? await (await fetch(source)).text() : await readFile(source, 'utf8');
  const jwks = JSON.parse(text) as { keys?: JsonWebKey[] };
  if (!Array.isArray(jwks.keys)) throw new Error(`${source} is not a JWK Set (no "keys" array)`);
  return { keys: jwks.keys };
}

/** Returns the exit code: 0 when the report verifies, 1 when it does not. */
export async function verifyReportCommand(reportPath: string, keysSource: string, out = console): Promise<number> {
  let doc: SignedReport | SignedBundle;
  try {
    doc = JSON.parse(await readFile(reportPath, 'utf8')) as SignedReport | SignedBundle;
  } catch (err) {
    out.error(`FAILED: cannot read ${reportPath} as JSON: ${(err as Error).message}`);
    return 1;
  }
  // A compliance bundle or a delivery receipt signs its `body`; a report signs itself minus digest and signature.
  const isBundle = typeof (doc as SignedBundle).body === 'object' && (doc as SignedBundle).body !== null;
  const keys = await loadKeys(keysSource);
  const outcome = isBundle ? verifyBundle(doc as SignedBundle, keys) : verifyReport(doc as SignedReport, keys);
  if (!outcome.ok) {
    out.error(`FAILED: ${outcome.reason}`);
    return 1;
  }
  // An x402 bundle embeds signed documents of its own (the compliance bundle, the report, the receipt): each must
  // verify too, so a bundle is only as good as everything it vouches for.
  for (const [name, inner] of isBundle ? embeddedDocuments((doc as SignedBundle).body) : []) {
    const checked =
      name === 'report' ? verifyReport(inner as SignedReport, keys) : verifyBundle(inner as SignedBundle, keys);
    if (!checked.ok) {
      out.error(`FAILED: the embedded ${name}: ${checked.reason}`);
      return 1;
    }
    out.log(`OK: the embedded ${name} ${(inner as { digest: string }).digest} verifies (key ${checked.keyId})`);
  }
  out.log(
    `OK: digest ${doc.digest} matches the ${isBundle ? 'signed body' : 'content'}, signature by key ${outcome.keyId} is valid`,
  );
  return 0;
}

/** The signed documents an x402 bundle (x402-bundle/1) embeds; none for any other document. */
function embeddedDocuments(body: Record<string, unknown>): [string, unknown][] {
  if (body.bundle_version !== 'x402-bundle/1') return [];
  const found: [string, unknown][] = [];
  for (const name of ['compliance_bundle', 'report', 'receipt']) {
    const inner = body[name];
    if (inner !== null && inner !== undefined) found.push([name.replace('_', ' '), inner]);
  }
  return found;
}
