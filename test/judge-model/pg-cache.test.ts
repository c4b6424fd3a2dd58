// The model judge's verdict cache in PostgreSQL: what one worker paid for, every worker (and the next process) gets
// for free; a judge_error is never kept; a key keeps its first verdict.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PgVerdictCache } from '../../actors/verification/judges/pg-verdict-cache.ts';
import { chunkHash, verdictKey } from '../../actors/verification/judges/verdict-cache.ts';
import { ensureDatabase, migrate, openPool, type Sql } from '../../storage/index.ts';
import { dropDatabase, pgServerUrl, uniqueNamespace } from '../support/env.ts';

const db = `assay_${uniqueNamespace('verdicts')}`;
let sql: Sql;
before(async () => {
  await ensureDatabase(`${pgServerUrl}/${db}`);
  sql = openPool(`${pgServerUrl}/${db}`, 2);
  await migrate(sql);
});
after(async () => {
  await sql.end();
  await dropDatabase(db);
});

const key = (claim: string) =>
  verdictKey({
    requestedModel: 'judge-alias',
    model: 'judge-weights-1',
    promptHash: `sha256:${'a'.repeat(64)}`,
    chunkHash: chunkHash('The default duplicate window is two minutes.'),
    claim,
  });

test('[JUDGE-MODEL-CACHE] verdicts are shared through PostgreSQL; judge_error is never kept; the first verdict stays', async () => {
  const one = new PgVerdictCache(sql);
  const other = new PgVerdictCache(sql);
  const [a, b, c] = [key('The window is 2 minutes.'), key('The window is 2 hours.'), key('Garbled.')];
  await one.put([
    { key: a, verdict: { entailment: 0.93, state: 'verified', entailmentFrom: 'logprobs' } },
    { key: b, verdict: { entailment: 0.02, state: 'contradicted', entailmentFrom: 'logprobs' } },
    { key: c, verdict: { entailment: 0, state: 'judge_error', entailmentFrom: 'verdict' } },
  ]);
  const found = await other.get([a, b, c]);
  assert.deepEqual(found.get(a.id), { entailment: 0.93, state: 'verified', entailmentFrom: 'logprobs' });
  assert.deepEqual(found.get(b.id), { entailment: 0.02, state: 'contradicted', entailmentFrom: 'logprobs' });
  assert.equal(found.has(c.id), false, 'a judge_error is asked again next time');
  await other.put([{ key: a, verdict: { entailment: 0.1, state: 'unsupported', entailmentFrom: 'verdict' } }]);
  assert.equal((await one.get([a])).get(a.id)?.state, 'verified');
  assert.equal((await one.get([])).size, 0);
});
