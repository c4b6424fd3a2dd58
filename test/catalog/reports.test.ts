// Signed reports: verified offline with an independent implementation, broken by any change, stable across a key
// rotation, served by digest with typed refusals, and checked by the `assay verify-report` command.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';

import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { rotateKey, systemClock } from '../../actors/index.ts';
import { openPool } from '../../storage/index.ts';
import {
  artifactContent,
  independentlyVerify,
  jcs,
  publish,
  registerSeller,
  reportDigestOf,
} from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import type { Agent, TestSystem } from '../support/system.ts';
import { startSystem } from '../support/system.ts';
import { assayArgs } from '../support/assay-cli.ts';

let sys: TestSystem;
let seller: Agent;
const root = new URL('../../', import.meta.url).pathname;

function execCommand(cmd: string, args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: root, encoding: 'utf8' }, (err, stdout, stderr) => {
      resolve({ stdout, stderr, code: err ? Number((err as { code?: number }).code ?? 1) : 0 });
    });
  });
}

before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
});

const content = artifactContent(
  'Duplicate windows',
  [
    ['c1', 'The default duplicate window of a stream is 2 minutes.'],
    ['c2', 'A duplicate publish is acknowledged with the sequence of the original message.'],
    ['c3', 'The default duplicate window of a stream is 9 minutes.'],
  ],
  [
    'The default duplicate window of a stream is 2 minutes.',
    'A publish that is detected as a duplicate is acknowledged with the sequence of the original message.',
  ],
);

async function fetchReport(artifactId: string) {
  const digest = await reportDigestOf(sys, seller.token, artifactId);
  const r = await sys.call('GET', `/v1/reports/${digest}`, { token: seller.token });
  assert.equal(r.status, 200);
  return r.body;
}

const keys = async () => (await sys.call('GET', '/.well-known/report-keys')).body;

/** Every leaf of a JSON value, as a path and its value. */
function leaves(v: any, path: (string | number)[] = []): [(string | number)[], unknown][] {
  if (v !== null && typeof v === 'object') return Object.entries(v).flatMap(([k, x]) => leaves(x, [...path, k]));
  return [[path, v]];
}

test('[CAT-REPORT-OFFLINE] a report verifies with node:crypto alone, and its digest is sha256 of its RFC 8785 form', async () => {
  const artifact = await publish(sys, seller.token, { title: 'Duplicate windows', content }, 'r-1');
  const report = await fetchReport(artifact.id);
  const { digestOk, signatureOk } = independentlyVerify(report, await keys());
  assert.ok(digestOk, 'digest = sha256(JCS(report without digest and signature))');
  assert.ok(signatureOk, 'ES256 signature over the same bytes');
  const { digest: _d, signature: _s, ...body } = report;
  assert.equal(report.digest.slice(7).length, 64);
  assert.notEqual(jcs(body), JSON.stringify(body, null, 1), 'the canonical form is not just any serialisation');
  assert.equal(report.summary.claimsTotal, 3);
  assert.deepEqual(
    report.claims.map((c: any) => c.state),
    ['verified', 'verified', 'contradicted'],
  );
  assert.equal(report.subject.artifactId, artifact.id);
  assert.equal(report.subject.contentHash, artifact.contentHash);
});

test('[CAT-REPORT-OFFLINE] changing any value of a signed report breaks its verification', async () => {
  const artifact = await publish(
    sys,
    seller.token,
    { title: 'Duplicate windows again', content: `${content}\n` },
    'r-2',
  );
  const report = await fetchReport(artifact.id);
  const jwks = await keys();
  const all = leaves(report).filter(([path]) => path[0] !== 'digest' && path[0] !== 'signature');
  assert.ok(all.length > 20);
  for (const [path, value] of all) {
    const copy = structuredClone(report);
    let target: any = copy;
    for (const p of path.slice(0, -1)) target = target[p];
    const last = path.at(-1)!;
    target[last] =
      typeof value === 'string'
        ? `${value}x`
        : typeof value === 'number'
          ? value + 0.5
          : typeof value === 'boolean'
            ? !value
            : 1;
    const v = independentlyVerify(copy, jwks);
    assert.ok(!(v.digestOk && v.signatureOk), `changing ${path.join('.')} went unnoticed`);
  }
  const sig = Buffer.from(report.signature, 'base64url');
  for (const i of [0, 17, 63]) {
    const flipped = Buffer.from(sig);
    flipped[i]! ^= 0x01;
    assert.equal(independentlyVerify({ ...report, signature: flipped.toString('base64url') }, jwks).signatureOk, false);
  }
});

test('[CAT-KEY-ROTATION] after a report key rotation, reports signed with the old and the new key both verify', async () => {
  const first = await publish(sys, seller.token, { title: 'Before rotation', content: `${content}\n\n` }, 'r-3');
  const oldReport = await fetchReport(first.id);
  const sql = openPool(sys.config.databaseUrl, 1);
  try {
    await rotateKey(sql, 'report', systemClock);
  } finally {
    await sql.end();
  }
  const second = await publish(sys, seller.token, { title: 'After rotation', content: `${content}\n\n\n` }, 'r-4');
  const newReport = await fetchReport(second.id);
  assert.notEqual(newReport.signingKeyId, oldReport.signingKeyId);
  const jwks = await keys();
  assert.ok(jwks.keys.length >= 2);
  for (const r of [oldReport, newReport])
    assert.deepEqual(independentlyVerify(r, jwks), { digestOk: true, signatureOk: true });
});

test('[CAT-REPORT-ROUTE] a malformed digest gets 422, an unknown one 404, both typed', async () => {
  for (const bad of ['sha256:xyz', 'md5:abc', `sha256:${'A'.repeat(64)}`]) {
    const r = await sys.call('GET', `/v1/reports/${bad}`, { token: seller.token });
    assert.equal(r.status, 422, bad);
    assert.ok(isTypedError(r.body, 'validation_failed'));
  }
  const r = await sys.call('GET', `/v1/reports/sha256:${'0'.repeat(64)}`, { token: seller.token });
  assert.equal(r.status, 404);
  assert.ok(isTypedError(r.body, 'not_found'));
});

test('[CAT-VERIFY-CLI] assay verify-report checks a report offline and says what failed', async () => {
  const artifact = await publish(sys, seller.token, { title: 'For the CLI', content: `${content} ` }, 'r-5');
  const report = await fetchReport(artifact.id);
  const dir = tmpdir();
  const good = join(dir, `report-${process.pid}.json`);
  const bad = join(dir, `report-bad-${process.pid}.json`);
  const keysFile = join(dir, `keys-${process.pid}.json`);
  writeFileSync(good, JSON.stringify(report));
  writeFileSync(bad, JSON.stringify({ ...report, summary: { ...report.summary, meanEntailment: 1 } }));
  writeFileSync(keysFile, JSON.stringify(await keys()));
  // Asynchronously: the gateway that serves the keys runs in this very process.
  const run = async (file: string, keysArg: string) => {
    const { stdout, stderr, code } = await execCommand(process.execPath, [
      ...assayArgs(),
      'verify-report',
      file,
      '--keys',
      keysArg,
    ]);
    return { stdout, stderr, status: code };
  };
  const ok = await run(good, `${sys.baseUrl}/.well-known/report-keys`);
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /^OK: digest sha256:[0-9a-f]{64} matches/);
  const okFile = await run(good, keysFile);
  assert.equal(okFile.status, 0, okFile.stderr);
  const tampered = await run(bad, keysFile);
  assert.equal(tampered.status, 1);
  assert.match(tampered.stderr, /FAILED: digest mismatch/);
  const noKey = await run(good, '/dev/null');
  assert.equal(noKey.status, 1);
});
