// The rules of client ID metadata documents that need no network (draft-ietf-oauth-client-id-metadata-document):
// which client_id may be a document's URL, what a document must say, and how long one is kept.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  cacheSecondsOf,
  checkMetadataDocument,
  metadataDocumentUrlProblem,
} from '../../actors/oauth/client-metadata.ts';

const url = 'https://client.example.com/oauth/client.json';
const document = (more: Record<string, unknown> = {}) => ({
  client_id: url,
  client_name: 'Example',
  redirect_uris: ['https://client.example.com/callback'],
  ...more,
});
const problemOf = (r: ReturnType<typeof checkMetadataDocument>) =>
  r.ok ? null : r.refusal.refused === 'client_metadata_unusable' ? r.refusal.problem : r.refusal.refused;

test('[OAUTH-CIMD-URL] a client_id URL is https with a path, and without a fragment, user information or dot segments', () => {
  assert.equal(metadataDocumentUrlProblem(url), null);
  assert.equal(metadataDocumentUrlProblem('https://client.example.com:8443/c.json?v=1'), null);
  const refused = [
    ['http://client.example.com/client.json', /must be an https URL/],
    ['http://127.0.0.1/client.json', /must be an https URL/],
    ['ftp://client.example.com/client.json', /must be an https URL/],
    ['https://client.example.com/', /must have a path/],
    ['https://client.example.com', /must have a path/],
    ['https://client.example.com/c.json#x', /fragment/],
    ['https://user:pw@client.example.com/c.json', /user information/],
    ['https://client.example.com/a/../c.json', /segments/],
    ['https://client.example.com/./c.json', /segments/],
    ['not a url', /neither a registered client nor a URL/],
  ] as const;
  for (const [id, words] of refused) assert.match(metadataDocumentUrlProblem(id) ?? 'accepted', words, id);
});

test('[OAUTH-CIMD-DOCUMENT-RULES] a document names its own URL, lists redirect URIs, is a public client of the code grant', () => {
  const ok = checkMetadataDocument(url, document());
  assert.ok(ok.ok);
  assert.deepEqual(ok.value.grantTypes, ['authorization_code', 'refresh_token'], 'the default grants');
  assert.equal(ok.value.clientName, 'Example');
  const cases: [unknown, RegExp][] = [
    [document({ client_id: 'https://client.example.com/other.json' }), /not the URL it was fetched from/],
    [document({ client_id: `${url}/` }), /not the URL it was fetched from/],
    [{ ...document(), client_id: undefined }, /not the URL it was fetched from/],
    [document({ redirect_uris: [] }), /no redirect_uris/],
    [document({ redirect_uris: ['http://client.example.com/cb'] }), /neither https nor http on a loopback/],
    [document({ token_endpoint_auth_method: 'private_key_jwt' }), /must be "none"/],
    [document({ client_secret: 's3cret' }), /must not carry a client secret/],
    [document({ grant_types: ['urn:ietf:params:oauth:grant-type:device_code'] }), /grants authorization_code and/],
    [document({ grant_types: ['authorization_code', 'urn:ietf:params:oauth:grant-type:token-exchange'] }), /grants/],
    [document({ scope: 'read:artifact fly' }), /scope must be/],
    [[document()], /not a JSON object/],
  ];
  for (const [doc, words] of cases) assert.match(problemOf(checkMetadataDocument(url, doc)) ?? 'accepted', words);
  const narrow = checkMetadataDocument(url, document({ scope: 'read:artifact' }));
  assert.ok(narrow.ok);
  assert.deepEqual(narrow.value.scopes, ['read:artifact'], 'a document may narrow what its client can ask for');
});

test('[OAUTH-CIMD-CACHE-BOUNDS] a document is kept as its Cache-Control says, within a day', () => {
  assert.equal(cacheSecondsOf(undefined), 300);
  assert.equal(cacheSecondsOf('max-age=60'), 60);
  assert.equal(cacheSecondsOf('public, max-age=600'), 600);
  assert.equal(cacheSecondsOf('max-age=31536000'), 86_400, 'at most a day');
  assert.equal(cacheSecondsOf('no-store'), 0);
  assert.equal(cacheSecondsOf('max-age=600, no-cache'), 0);
  assert.equal(cacheSecondsOf('max-age=-5'), 0);
  assert.equal(cacheSecondsOf('private'), 300);
});
