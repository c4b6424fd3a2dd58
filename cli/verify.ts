// `assay verify-report`: check a verification report offline, with nothing but the public keys (a JWK Set file
// or URL, such as <web_url>/.well-known/report-keys). A client command: it imports contracts/ only.
import { readFile } from 'node:fs/promises';
import { type SignedReport, verifyReport } from '../contracts/index.ts';

export async function loadKeys(source: string): Promise<{ keys: JsonWebKey[] }> {
  const text = /^https?:\/\//.test(source) ? await (await fetch(source)).text() : await readFile(source, 'utf8');
  const jwks = JSON.parse(text) as { keys?: JsonWebKey[] };
  if (!Array.isArray(jwks.keys)) throw new Error(`${source} is not a JWK Set (no "keys" array)`);
  return { keys: jwks.keys };
}

/** Returns the exit code: 0 when the report verifies, 1 when it does not. */
export async function verifyReportCommand(reportPath: string, keysSource: string, out = console): Promise<number> {
  let report: SignedReport;
  try {
    report = JSON.parse(await readFile(reportPath, 'utf8')) as SignedReport;
  } catch (err) {
    out.error(`FAILED: cannot read ${reportPath} as JSON: ${(err as Error).message}`);
    return 1;
  }
  const outcome = verifyReport(report, await loadKeys(keysSource));
  if (!outcome.ok) {
    out.error(`FAILED: ${outcome.reason}`);
    return 1;
  }
  out.log(`OK: digest ${report.digest} matches the content, signature by key ${outcome.keyId} is valid`);
  return 0;
}
