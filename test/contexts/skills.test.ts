// Skills of the context-file API over real HTTP: versioned templates, execution with variables checked and context
// files resolved with the caller's rights, the built-in render executor, and the model executor against a loopback
// endpoint that speaks the OpenAI chat-completions wire protocol (its answers, its failures, a stall past the
// execution's time limit).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { type ContextRequest, contextCall, issueApiKey } from '../support/context-api.ts';
import { accountWithClient, approvedTokens, discover, type oauth, type WebJar } from '../support/oauth.ts';
import { type OpenAIServer, startOpenAIServer } from '../support/openai-server.ts';
import { eventually, runCli, startSystem, type TestSystem } from '../support/system.ts';

const skillTimeoutMs = 1500;
let sys: TestSystem;
let model: OpenAIServer;
let as: oauth.AuthorizationServer;
let owner: { jar: WebJar; client: oauth.Client; key: string };
let other: { key: string };

const api = (path: string, method: string, o?: ContextRequest) =>
  contextCall(sys.config.webUrl, `${sys.config.apiUrl}/v1${path}`, method, o);
const web = (path: string, method: string, o?: ContextRequest) =>
  contextCall(sys.config.webUrl, `${sys.config.webUrl}/api/v1${path}`, method, o);

before(async () => {
  model = await startOpenAIServer({ answeredModel: 'skill-model-2026-11' });
  model.always = { kind: 'content', content: 'Dear Ada, thank you.' };
  sys = await startSystem({
    ASSAY_SKILL_MODEL_URL: model.url,
    ASSAY_SKILL_MODEL: 'writer',
    ASSAY_SKILL_TIMEOUT_MS: String(skillTimeoutMs),
  });
  as = await discover(sys.baseUrl);
  const a = await accountWithClient(as, sys.baseUrl, 'skills@example.com');
  owner = { ...a, key: await issueApiKey(sys.config.webUrl, a.jar) };
  const b = await accountWithClient(as, sys.baseUrl, 'neighbour@example.com');
  other = { key: await issueApiKey(sys.config.webUrl, b.jar) };
});
after(async () => {
  await sys?.stop();
  await model?.close();
});

async function file(key: string, name: string, content: string, isPublic = false): Promise<string> {
  const r = await api('/contexts', 'POST', { bearer: key, body: { name, content } });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (isPublic) {
    assert.equal(
      (await api(`/contexts/${r.body.data.id}`, 'PATCH', { bearer: key, body: { is_public: true } })).status,
      200,
    );
  }
  return r.body.data.id;
}

test('[SKILL-VERSIONS] a skill is created, listed in both envelopes, changed into new versions that stay readable, and deleted; another owner sees 404', async () => {
  const created = await api('/skills', 'POST', {
    bearer: owner.key,
    body: { name: 'Reply', template: 'Write to {{ recipient }} about {{topic}}. Sign as {{recipient}}.' },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const v1 = created.body.data;
  assert.equal(v1.version, 1);
  assert.equal(v1.executor, 'render');
  assert.deepEqual(v1.variables, ['recipient', 'topic'], 'each variable once, in order of first use');
  assert.match(v1.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);

  const changed = await api(`/skills/${v1.id}`, 'PATCH', {
    bearer: owner.key,
    body: { template: 'Answer {{question}} briefly.', description: 'short answers' },
  });
  assert.equal(changed.status, 200, JSON.stringify(changed.body));
  assert.equal(changed.body.data.version, 2);
  assert.deepEqual(changed.body.data.variables, ['question']);
  assert.equal(changed.body.data.name, 'Reply', 'fields not sent are kept');

  const newest = await api(`/skills/${v1.id}`, 'GET', { bearer: owner.key });
  assert.equal(newest.body.data.template, 'Answer {{question}} briefly.');
  const first = await api(`/skills/${v1.id}?version=1`, 'GET', { bearer: owner.key });
  assert.equal(first.status, 200);
  assert.equal(first.body.data.version, 1);
  assert.equal(first.body.data.template, v1.template);
  assert.equal((await api(`/skills/${v1.id}?version=3`, 'GET', { bearer: owner.key })).status, 404);
  assert.equal((await api(`/skills/${v1.id}?version=0`, 'GET', { bearer: owner.key })).status, 400);

  const webList = await web('/skills', 'GET', { jar: owner.jar });
  assert.equal(webList.status, 200);
  assert.equal(webList.body.meta.total, 1);
  assert.equal(webList.body.data[0].id, v1.id);
  assert.equal(webList.body.data[0].template, undefined, 'a list leaves templates out');
  const apiList = await api('/skills?limit=1', 'GET', { bearer: owner.key });
  assert.deepEqual(apiList.body.pagination, { total: 1, limit: 1, offset: 0, hasMore: false });
  assert.equal(apiList.body.skills[0].version, 2);

  for (const [method, body] of [['GET'], ['PATCH', { name: 'mine' }], ['DELETE']] as const) {
    assert.equal((await api(`/skills/${v1.id}`, method, { bearer: other.key, body })).status, 404, method);
  }
  const run = await api(`/skills/${v1.id}/execute`, 'POST', { bearer: other.key, body: { input: 'x' } });
  assert.equal(run.status, 404);

  const deleted = await api(`/skills/${v1.id}`, 'DELETE', { bearer: owner.key });
  assert.equal(deleted.status, 200);
  assert.equal((await api(`/skills/${v1.id}`, 'GET', { bearer: owner.key })).status, 404);
  assert.equal((await api('/skills', 'GET', { bearer: owner.key })).body.pagination.total, 0);
});

test('[SKILL-EXECUTE] variables are substituted and must be exactly the template’s; files are resolved with the caller’s rights as they are now', async () => {
  const guide = await file(owner.key, 'House style', 'Short sentences. No jargon.');
  const shared = await file(other.key, 'Glossary', 'escrow: money held until a report meets its floor', true);
  const hidden = await file(other.key, 'Private notes', 'not for you');
  const skill = (
    await api('/skills', 'POST', {
      bearer: owner.key,
      body: { name: 'Letter', template: 'Write a letter to {{name}} about {{topic}}.', contexts: [guide, shared] },
    })
  ).body.data;

  const run = await api(`/skills/${skill.id}/execute`, 'POST', {
    bearer: owner.key,
    body: { input: 'Keep it under 100 words.', variables: { name: 'Ada', topic: '{{name}} and escrow' } },
  });
  assert.equal(run.status, 200, JSON.stringify(run.body));
  const x = run.body.data;
  assert.deepEqual(x.skill, { id: skill.id, name: 'Letter', version: 1 });
  assert.equal(x.executor, 'render');
  assert.equal(x.model, null);
  assert.equal(x.messages.length, 2);
  assert.equal(x.messages[1].content, 'Keep it under 100 words.');
  const system = x.messages[0].content as string;
  assert.ok(
    system.startsWith('Write a letter to Ada about {{name}} and escrow.'),
    'substituted once: a value is not itself expanded',
  );
  assert.ok(system.includes('Short sentences. No jargon.') && system.includes('escrow: money held'));
  assert.ok(system.indexOf('Short sentences') < system.indexOf('escrow: money held'), 'files in the skill’s order');
  assert.equal(x.output, system, 'render answers the rendered prompt');
  assert.deepEqual(
    x.contexts.map((c: { id: string; owned: boolean }) => [c.id, c.owned]),
    [
      [guide, true],
      [shared, false],
    ],
  );
  assert.match(x.contexts[0].sha256, /^[0-9a-f]{64}$/);

  // Missing and extra variables are refused by name, and nothing runs.
  const missing = await api(`/skills/${skill.id}/execute`, 'POST', {
    bearer: owner.key,
    body: { input: 'x', variables: { name: 'Ada', tone: 'warm' } },
  });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error, 'bad_request');
  assert.match(missing.body.message, /missing variables "topic"/);
  assert.match(missing.body.message, /does not use "tone"/);

  // A file changed a moment ago is the file the next run brings.
  await api(`/contexts/${guide}`, 'PATCH', { bearer: owner.key, body: { content: 'Long sentences welcome.' } });
  const again = await api(`/skills/${skill.id}/execute`, 'POST', {
    bearer: owner.key,
    body: { input: 'x', variables: { name: 'Ada', topic: 't' } },
  });
  assert.equal(again.status, 200);
  assert.ok(again.body.data.messages[0].content.includes('Long sentences welcome.'));

  // Rights are the caller's at run time: another owner's private file, or a public one made private, is refused.
  const sneaky = await api(`/skills/${skill.id}`, 'PATCH', { bearer: owner.key, body: { contexts: [guide, hidden] } });
  assert.equal(sneaky.status, 200);
  const refused = await api(`/skills/${skill.id}/execute`, 'POST', {
    bearer: owner.key,
    body: { input: 'x', variables: { name: 'Ada', topic: 't' } },
  });
  assert.equal(refused.status, 404);
  assert.ok(refused.body.message.includes(hidden));
  assert.ok(!JSON.stringify(refused.body).includes('not for you'));
  await api(`/contexts/${shared}`, 'PATCH', { bearer: other.key, body: { is_public: false } });
  // Another owner's change reaches executions as the projection applies it (milliseconds), not at once.
  const unpublished = await eventually('the unpublished file refused', async () => {
    const r = await api(`/skills/${skill.id}/execute`, 'POST', {
      bearer: owner.key,
      body: { input: 'x', variables: { name: 'Ada', topic: 't' }, version: 1 },
    });
    assert.equal(r.status, 404, 'version 1 brings a file that is private now');
    return r;
  });
  assert.ok(unpublished.body.message.includes(shared));

  // Bad bodies: 400 with the field named.
  for (const body of [{}, { input: 5 }, { input: 'x', variables: { name: 1 } }, { input: 'x', extra: true }]) {
    const r = await api(`/skills/${skill.id}/execute`, 'POST', { bearer: owner.key, body });
    assert.equal(r.status, 400, JSON.stringify(body));
    assert.equal(typeof r.body.message, 'string');
  }
  const bigInput = await api(`/skills/${skill.id}/execute`, 'POST', {
    bearer: owner.key,
    body: { input: 'é'.repeat(40_000), variables: { name: 'Ada', topic: 't' } },
  });
  assert.equal(bigInput.status, 400);
  assert.match(bigInput.body.message, /input is 80000 bytes/);
});

test('[SKILL-MODEL] the model executor sends the rendered messages to the configured endpoint, answers what it said, and fails in words within the time limit', async () => {
  const skill = (
    await api('/skills', 'POST', {
      bearer: owner.key,
      body: { name: 'Thanks', template: 'Thank {{who}} warmly.', executor: 'model' },
    })
  ).body.data;
  model.resetCounts();
  const run = await api(`/skills/${skill.id}/execute`, 'POST', {
    bearer: owner.key,
    body: { input: 'one line', variables: { who: 'Ada' } },
  });
  assert.equal(run.status, 200, JSON.stringify(run.body));
  assert.equal(run.body.data.output, 'Dear Ada, thank you.');
  assert.equal(run.body.data.model, 'skill-model-2026-11', 'the model the endpoint named');
  assert.equal(run.body.data.executor, 'model');
  assert.ok(run.body.data.usage.completion_tokens > 0);
  assert.equal(model.requests, 1);
  const sent = model.received[0]!.body as { model: string; messages: { role: string; content: string }[] };
  assert.equal(sent.model, 'writer');
  assert.deepEqual(sent.messages, [
    { role: 'system', content: 'Thank Ada warmly.' },
    { role: 'user', content: 'one line' },
  ]);

  // The endpoint failing is a 500 that says so; one attempt only.
  model.resetCounts();
  model.script({ kind: 'status', status: 503 });
  const failed = await api(`/skills/${skill.id}/execute`, 'POST', {
    bearer: owner.key,
    body: { input: 'x', variables: { who: 'Ada' } },
  });
  assert.equal(failed.status, 500);
  assert.equal(failed.body.error, 'internal_error');
  assert.match(failed.body.message, /HTTP 503/);
  assert.equal(model.requests, 1);

  // A model that never answers is cut off at the time limit.
  model.script({ kind: 'stall' });
  const started = Date.now();
  const stalled = await api(`/skills/${skill.id}/execute`, 'POST', {
    bearer: owner.key,
    body: { input: 'x', variables: { who: 'Ada' } },
  });
  const tookMs = Date.now() - started;
  assert.equal(stalled.status, 500);
  assert.match(stalled.body.message, new RegExp(`within ${skillTimeoutMs} ms`));
  assert.ok(tookMs >= skillTimeoutMs - 100 && tookMs < skillTimeoutMs + 5000, `answered after ${tookMs} ms`);

  // An execution is a request like any other: on Free, issuing the key and creating the skill leave 98 of the
  // hour's 100, so the 98th run is the last one admitted, and the next is refused before anything runs.
  const { jar } = await accountWithClient(as, sys.baseUrl, 'free-runner@example.com');
  const principalId = /<code>([0-9a-f-]{36})<\/code>/.exec(await (await jar.get('/account')).text())![1]!;
  assert.equal((await runCli(sys, ['plan', 'set', principalId, 'free'])).code, 0);
  const freeKey = await issueApiKey(sys.config.webUrl, jar);
  const cheap = (await api('/skills', 'POST', { bearer: freeKey, body: { name: 'Echo', template: 'Say {{x}}.' } })).body
    .data;
  for (let i = 1; i <= 98; i++) {
    const r = await api(`/skills/${cheap.id}/execute`, 'POST', {
      bearer: freeKey,
      body: { input: '', variables: { x: 'hi' } },
    });
    assert.equal(r.status, 200, `run ${i}: ${JSON.stringify(r.body)}`);
  }
  const over = await api(`/skills/${cheap.id}/execute`, 'POST', {
    bearer: freeKey,
    body: { input: '', variables: { x: 'hi' } },
  });
  assert.equal(over.status, 429);
  assert.ok(Number(over.headers.get('retry-after')) > 0);

  // Running may call a model, so it needs write:context; read:context alone is 403.
  const readOnly = (await approvedTokens(as, owner.jar, owner.client, { scope: 'read:context' })).access_token;
  const r = await api(`/skills/${skill.id}/execute`, 'POST', { bearer: readOnly, body: { input: 'x' } });
  assert.equal(r.status, 403);
  assert.equal((await api(`/skills/${skill.id}`, 'GET', { bearer: readOnly })).status, 200);
});

test('[SKILL-BAD-INPUT] bad skill bodies are 400 {error, message} and create nothing', async () => {
  const before = (await api('/skills', 'GET', { bearer: owner.key })).body.pagination.total;
  const mine = await file(owner.key, 'Note', 'n');
  const bodies: unknown[] = [
    {},
    { name: 'x' },
    { name: '', template: 't' },
    { name: 'x', template: '' },
    { name: 'x', template: 't', executor: 'shell' },
    { name: 'x', template: 't', contexts: ['not-a-uuid'] },
    { name: 'x', template: 't', contexts: [mine, mine] },
    { name: 'x', template: 't', contexts: Array.from({ length: 21 }, () => crypto.randomUUID()) },
    { name: 'x', template: 'é'.repeat(40_000) },
    { name: 'x', template: 't', owner: 'me' },
    [],
  ];
  for (const body of bodies) {
    const r = await api('/skills', 'POST', { bearer: owner.key, body });
    assert.equal(r.status, 400, JSON.stringify(body).slice(0, 80));
    assert.equal(r.body.error, 'bad_request');
  }
  const noChange = await api(`/skills/${crypto.randomUUID()}`, 'PATCH', { bearer: owner.key, body: {} });
  assert.equal(noChange.status, 400);
  assert.equal((await api('/skills', 'GET', { bearer: owner.key })).body.pagination.total, before);
});
