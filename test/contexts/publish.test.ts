// From context file to marketplace over real HTTP: a file published to the catalog becomes an artifact whose first
// edition is the file's text and is verified like any other; each later change of its text is the next edition,
// other changes make none, and publishing again answers the same artifact.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, test } from 'node:test';
import { artifactContent } from '../support/catalog.ts';
import { type ContextRequest, contextCall, issueApiKey } from '../support/context-api.ts';
import { accountWithClient, approvedTokens, discover } from '../support/oauth.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
let key: string;
let otherKey: string;
/** A live agent token of the same account, to read the catalog as agents do. */
let agent: string;

const api = (path: string, method: string, o?: ContextRequest) =>
  contextCall(sys.config.webUrl, `${sys.config.apiUrl}/v1${path}`, method, o);
const sha = (text: string) => `sha256:${createHash('sha256').update(text, 'utf8').digest('hex')}`;

before(async () => {
  sys = await startSystem();
  const as = await discover(sys.baseUrl);
  const { jar, client } = await accountWithClient(as, sys.baseUrl, 'publisher@example.com');
  key = await issueApiKey(sys.config.webUrl, jar);
  agent = (await approvedTokens(as, jar, client, { scope: 'read:artifact' })).access_token;
  otherKey = await issueApiKey(sys.config.webUrl, (await accountWithClient(as, sys.baseUrl, 'other@example.com')).jar);
});
after(async () => {
  await sys?.stop();
});

async function artifact(id: string) {
  const r = await sys.call('GET', `/v1/artifacts/${id}`, { token: agent });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  return r.body;
}

test('[CONTEXT-PUBLISH] a published file is an artifact whose editions follow its text, each verified; publishing again answers the same artifact', async () => {
  const first = artifactContent('Pooling', [['c1', 'PgBouncer pools connections.']], ['PgBouncer pools connections.']);
  const created = await api('/contexts', 'POST', { bearer: key, body: { name: 'Pooling notes', content: first } });
  assert.equal(created.body.data.artifact, null, 'a new file is not in the catalog');
  const id = created.body.data.id;

  const published = await api(`/contexts/${id}/publish`, 'POST', { bearer: key, body: { topics: ['postgresql'] } });
  assert.equal(published.status, 201, JSON.stringify(published.body));
  const artifactId = published.body.data.artifact.id;
  assert.equal(published.body.data.artifact.edition_current, true);
  const a1 = await artifact(artifactId);
  assert.equal(a1.manifest.title, 'Pooling notes', "the artifact's title is the file's name");
  assert.deepEqual(a1.manifest.topics, ['postgresql']);
  assert.equal(a1.currentEdition.number, 1);
  assert.equal(a1.currentEdition.contentHash, sha(first), "the first edition is the file's text");
  const report1 = await eventually('the first edition verified', async () => {
    const a = await artifact(artifactId);
    return a.currentEdition.reportDigest ?? undefined;
  });

  const again = await api(`/contexts/${id}/publish`, 'POST', { bearer: key, body: {} });
  assert.equal(again.status, 200);
  assert.equal(again.body.data.artifact.id, artifactId, 'one file, one artifact');

  // A change of the text is the next edition, verified in turn; its report is a new one.
  const second = artifactContent(
    'Pooling',
    [['c1', 'PgBouncer pools server connections.']],
    ['PgBouncer pools server connections.'],
  );
  const changed = await api(`/contexts/${id}`, 'PATCH', { bearer: key, body: { content: second } });
  assert.equal(changed.status, 200);
  assert.equal(changed.body.data.artifact.id, artifactId);
  const a2 = await eventually('the second edition', async () => {
    const a = await artifact(artifactId);
    return a.currentEdition.number === 2 && a.currentEdition.reportDigest ? a : undefined;
  });
  assert.equal(a2.currentEdition.contentHash, sha(second));
  assert.notEqual(a2.currentEdition.reportDigest, report1);
  const view = await api(`/contexts/${id}`, 'GET', { bearer: key });
  assert.deepEqual(view.body.data.artifact, { id: artifactId, edition_current: true });

  // A change that keeps the text makes no edition.
  await api(`/contexts/${id}`, 'PATCH', { bearer: key, body: { description: 'about pools' } });
  await api(`/contexts/${id}/publish`, 'POST', { bearer: key, body: {} });
  assert.equal((await artifact(artifactId)).currentEdition.number, 2);

  // Only the owner publishes; bad bodies change nothing.
  assert.equal((await api(`/contexts/${id}/publish`, 'POST', { bearer: otherKey, body: {} })).status, 404);
  const other = await api('/contexts', 'POST', { bearer: key, body: { name: 'Other', content: first } });
  for (const body of [{ floor: 2 }, { topics: 'x' }, { title: 'no' }]) {
    const r = await api(`/contexts/${other.body.data.id}/publish`, 'POST', { bearer: key, body });
    assert.equal(r.status, 400, JSON.stringify(body));
  }
  assert.equal((await api(`/contexts/${other.body.data.id}`, 'GET', { bearer: key })).body.data.artifact, null);
});
