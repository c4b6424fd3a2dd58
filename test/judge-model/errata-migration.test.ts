// Upgrading a deployment that judged with model prompt 2.1.0, whose quotes a passage could close: migration 032 opens
// an erratum for each model that judged with it, so mandates that reject open errata stop buying what it judged.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { ensureDatabase, errataForArtifact, migrate, openPool, type Sql } from '../../storage/index.ts';
import { dropDatabase, pgServerUrl, uniqueNamespace } from '../support/env.ts';

const db = `assay_${uniqueNamespace('errata21')}`;
let sql: Sql;
before(async () => {
  await ensureDatabase(`${pgServerUrl}/${db}`);
  sql = openPool(`${pgServerUrl}/${db}`, 2);
});
after(async () => {
  await sql.end();
  await dropDatabase(db);
});

/** An artifact whose current report was made by `model` at `version`, as the catalog writes them. */
async function judgedArtifact(model: string, version: string): Promise<string> {
  const [artifactId, editionId, digest] = [randomUUID(), randomUUID(), `sha256:${randomUUID()}`];
  const at = '2026-11-20T10:00:00.000Z';
  await sql`
    INSERT INTO artifacts (id, owner_principal_id, sandbox, title, topics, description, floor, created_at,
      current_edition_id, current_content_hash, current_report_digest, current_mean_entailment,
      current_judge_version, current_judge_model, search_tsv)
    VALUES (${artifactId}, ${randomUUID()}, false, 'Streams', ${['nats']}, 'd', 0.5, ${at}, ${editionId}, 'sha256:c',
      ${digest}, 0.9, ${version}, ${model}, to_tsvector('english', 'streams'))`;
  await sql`
    INSERT INTO editions (id, artifact_id, number, content_hash, content, title, topics, description, floor,
      judge_version, report_digest, created_at)
    VALUES (${editionId}, ${artifactId}, 1, 'sha256:c', 'c', 'Streams', ${['nats']}, 'd', 0.5, ${version}, ${digest},
      ${at})`;
  await sql`
    INSERT INTO reports (digest, edition_id, artifact_id, sandbox, judge_model, judge_version, mean_entailment,
      signing_key_id, body, created_at)
    VALUES (${digest}, ${editionId}, ${artifactId}, false, ${model}, ${version}, 0.9, 'k', '{}', ${at})`;
  return artifactId;
}

test('[SEC-JUDGE-FENCE] migration 032 opens an erratum for every model that judged with prompt 2.1.0, and for nothing else', async () => {
  await migrate(sql, '030');
  const [a, b, again, builtin] = [
    await judgedArtifact('llama-3.1-8b-instruct-q4_k_m', '2.1.0'),
    await judgedArtifact('gpt-4o-2024-08-06', '2.1.0'),
    await judgedArtifact('gpt-4o-2024-08-06', '2.1.0'),
    await judgedArtifact('assay-lexical-judge', '2.0.0'),
  ];
  assert.ok((await migrate(sql, '032')).includes('032_judge_2_1_superseded.sql'));

  const opened = await sql<{ judge_model: string; judge_versions: string[]; state: string; title: string }[]>`
    SELECT judge_model, judge_versions, state, title FROM errata WHERE '2.1.0' = ANY(judge_versions)
    ORDER BY judge_model`;
  assert.deepEqual(
    opened.map((e) => ({ ...e })),
    ['gpt-4o-2024-08-06', 'llama-3.1-8b-instruct-q4_k_m'].map((judge_model) => ({
      judge_model,
      judge_versions: ['2.1.0'],
      state: 'open',
      title: 'Judge 2.1.0 is superseded by 2.2.0',
    })),
    'one erratum per model, however many of its reports',
  );
  for (const id of [a, b, again]) {
    assert.deepEqual(
      (await errataForArtifact(sql, id)).map((e) => e.title),
      ['Judge 2.1.0 is superseded by 2.2.0'],
    );
  }
  assert.equal((await errataForArtifact(sql, builtin)).length, 0, 'what the built-in judge decided is not touched');
});
