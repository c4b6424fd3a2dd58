// The built-in judge 2.0.0, rule by rule, next to what 1.2.0 said of the same claim (the failures), and
// the old versions pinned to what they gave before 2.0.0 existed: an old report must re-judge identically.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { currentJudgeVersion, judgePromptHash, judgeVersions } from '../../actors/index.ts';
import { loadConfig } from '../../contracts/index.ts';
import {
  builtinJudge,
  judgeClaim,
  judgeFromConfig,
  judgeModel,
  judgeVersionSequence,
} from '../../actors/verification/judges/index.ts';

type State = ReturnType<typeof judgeClaim>['state'];

/** Each row: passage, claim, the state 2.0.0 gives, the state 1.2.0 gave. */
function check(rows: [passage: string, claim: string, v2: State, v12: State][]) {
  for (const [passage, claim, v2, v12] of rows) {
    assert.equal(judgeClaim(claim, passage, '2.0.0').state, v2, `2.0.0 on "${claim}"`);
    assert.equal(judgeClaim(claim, passage, '1.2.0').state, v12, `1.2.0 on "${claim}"`);
  }
}

const session = 'By default an idle session expires after two minutes.';
const cache = 'The cache holds up to 512 KB per entry.';

test('[JUDGE-2-NUMBERS] numbers compare by value and unit: two = 2, 2 minutes = 120 seconds; another amount or unit contradicts', () => {
  check([
    [
      'etcd keeps two replicas of every key by default.',
      'etcd keeps 2 replicas of every key by default.',
      'verified',
      'contradicted',
    ],
    ['The lease is renewed every 2 minutes.', 'The lease is renewed every 120 seconds.', 'verified', 'contradicted'],
    [cache, 'The cache holds up to 524288 bytes per entry.', 'verified', 'contradicted'],
    [
      'Compaction reclaims about twenty percent of the log.',
      'Compaction reclaims about 20% of the log.',
      'verified',
      'contradicted',
    ],
    [session, 'By default an idle session expires after two hours.', 'contradicted', 'verified'],
    [cache, 'The cache holds up to 512 MB per entry.', 'contradicted', 'verified'],
    [session, 'By default an idle session expires after 3 minutes.', 'contradicted', 'contradicted'],
  ]);
  // A number the passage does not give at all is an added fact, not a contradiction.
  const added = judgeClaim(
    'Compaction merges small segments every 10 minutes.',
    'Compaction merges small segments.',
    '2.0.0',
  );
  assert.equal(added.state, 'partially_supported');
});

test('[JUDGE-2-NEGATION] negation is read in the clause that matches, not the whole sentence', () => {
  const both = 'The proxy retries GET requests, but it does not retry POST requests.';
  check([
    ['The proxy does not retry POST requests.', 'The proxy retries POST requests.', 'contradicted', 'contradicted'],
    [
      'The proxy does not retry POST requests.',
      'POST requests are not retried by the proxy.',
      'verified',
      'partially_supported',
    ],
    [both, 'The proxy retries GET requests.', 'verified', 'contradicted'],
    [both, 'The proxy does not retry GET requests.', 'contradicted', 'verified'],
  ]);
});

test('[JUDGE-2-QUANTIFIERS] a claim may not widen (some -> all, may -> must) nor narrow a universal to some', () => {
  check([
    [
      'Some indexes can be rebuilt online.',
      'All indexes can be rebuilt online.',
      'partially_supported',
      'partially_supported',
    ],
    ['Every table must have a primary key.', 'Some tables may have a primary key.', 'contradicted', 'unsupported'],
    ['A shard may have several replicas.', 'A shard has exactly one replica.', 'contradicted', 'unsupported'],
    [
      'Only the leader accepts writes.',
      'The leader and several followers accept writes.',
      'contradicted',
      'partially_supported',
    ],
  ]);
  assert.notEqual(
    judgeClaim('All indexes can be rebuilt online.', 'Some indexes can be rebuilt online.', '2.0.0').state,
    'verified',
  );
});

test('[JUDGE-2-COMPARISONS] the direction of a comparison and the order of the two terms around the relation', () => {
  const gc = 'Minor garbage collections happen more often than full collections.';
  check([
    [gc, 'Full collections happen more often than minor garbage collections.', 'contradicted', 'verified'],
    [gc, 'Minor garbage collections happen less often than full collections.', 'contradicted', 'verified'],
    [
      'In version 3, the scheduler replaced the round-robin queue.',
      'In version 3, the round-robin queue replaced the scheduler.',
      'contradicted',
      'verified',
    ],
    [
      'Reads from a follower are slower than reads from the leader.',
      'Reads from the leader are slower than reads from a follower.',
      'contradicted',
      'verified',
    ],
  ]);
  // The same relation in the passive keeps its roles.
  assert.equal(
    judgeClaim(
      'Small segments are merged into larger segments by compaction.',
      'Compaction merges small segments into larger ones.',
      '2.0.0',
    ).state,
    'verified',
  );
});

test('[JUDGE-2-ANTONYMS] a WordNet antonym in place of the passage word contradicts', () => {
  check([
    [
      'Snapshots are stored in an immutable format.',
      'Snapshots are stored in a mutable format.',
      'contradicted',
      'partially_supported',
    ],
    [
      'The primary key index is created automatically.',
      'The primary key index is created manually.',
      'contradicted',
      'verified',
    ],
    [
      'Connections are closed after the idle timeout.',
      'Connections are opened after the idle timeout.',
      'contradicted',
      'partially_supported',
    ],
  ]);
});

test('[JUDGE-2-PARAPHRASE] synonyms, lemmas and derived forms from WordNet verify a faithful paraphrase', () => {
  check([
    [
      'The resolver queries the authoritative servers when the cached record expires.',
      'When a cached record expires, the resolver asks the authoritative servers again.',
      'verified',
      'partially_supported',
    ],
    [
      'Compaction merges small segments into larger ones.',
      'Small segments are merged into larger segments by compaction.',
      'verified',
      'verified',
    ],
  ]);
});

test('[JUDGE-2-UNSTATED] a claim adding a qualifier, a name or a number the passage does not give is not verified', () => {
  const passage = 'Compaction merges small segments into larger ones.';
  for (const claim of [
    'Compaction merges small segments into larger ones using zstd.',
    'Compaction merges small segments into larger ones every 10 minutes.',
    'Compaction merges small segments into larger ones and deletes expired keys.',
  ])
    assert.notEqual(judgeClaim(claim, passage, '2.0.0').state, 'verified', claim);
  assert.equal(judgeClaim('The load balancer terminates TLS connections.', passage, '2.0.0').state, 'unsupported');
});

const labelled = readFileSync(new URL('./labelled.jsonl', import.meta.url), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as { passage: string; claim: string });

function digest(version: string): string {
  const h = createHash('sha256');
  for (const r of labelled) h.update(`${JSON.stringify(judgeClaim(r.claim, r.passage, version))}\n`);
  return h.digest('hex');
}

test('[JUDGE-REPRODUCIBLE] 1.0.0, 1.1.0 and 1.2.0 give exactly what they gave before 2.0.0, with the same rules hashes; 2.0.0 is pinned too', () => {
  // Computed with the judge as it was before 2.0.0 was written, over the shipped labelled set.
  assert.equal(digest('1.0.0'), '28e65d5bedd0642af0fac25015dd35ce9f37e39a20da575f2772bd6cc92b8952');
  assert.equal(digest('1.1.0'), '0f66f501490b17b5c253dc33863cfe33cdea469c3c93ad220ea6e3ffbae489ad');
  assert.equal(digest('1.2.0'), '9886f47a4f71412f1c270d64180b73710aad71807f9c416b48a64ac5d3755a32');
  assert.equal(judgePromptHash('1.0.0'), 'sha256:de8537b5ca4f29b116bc548f51571d192b8847a138f14b576f1e0c581911297a');
  assert.equal(judgePromptHash('1.1.0'), 'sha256:9d8da14b946feed2ec9c1cfe0fc36c4863d614ed970ba048bbf4603c0fa1783a');
  assert.equal(judgePromptHash('1.2.0'), 'sha256:2ef8e3bfc2e44ff34c0b10975275340c1ac88e61adf425bf3fe11ea086ae46d2');
  // 2.0.0 as released: its rules text (word lists included) and what it gives. A change to either is a new version.
  assert.equal(digest('2.0.0'), '40aeeae2cc46ed6e27fd2d6aeed844008f34d5a05c9d4e12f46ff1f0594948f8');
  assert.equal(judgePromptHash('2.0.0'), 'sha256:d4d65a7177632698b21ae6eae6605e0627ba5d2d6268aac5948a58e3a525a069');
  // 3.0.0 as released, measured on the reference set with these rules (actors/verification/judges/quality.ts).
  assert.equal(digest('3.0.0'), '86ed93ab45302529669ba4a6a78d7d442ee23da3870e5fdb06fe895b04b3d4db');
  assert.equal(judgePromptHash('3.0.0'), 'sha256:1786497f1f7c816279b0923b3b01f80b5cd2910d8f915b3c2c287ec327ef8b0e');
  const passage = 'The default duplicate window of a stream is 2 minutes. Streams are not replicated by default.';
  const pinned: [string, string, number, string][] = [
    ['The default duplicate window of a stream is two minutes.', '1.2.0', 0.7633, 'verified'],
    ['The default duplicate window of a stream is two minutes.', '1.0.0', 0.8333, 'verified'],
    ['Streams are replicated by default.', '1.1.0', 1, 'verified'],
    ['Streams are replicated by default.', '1.2.0', 0.1, 'contradicted'],
  ];
  for (const [claim, version, entailment, state] of pinned)
    assert.deepEqual(judgeClaim(claim, passage, version), { entailment, state }, `${version}: ${claim}`);
  assert.equal(
    judgeClaim(
      'Kubernetes restarts containers that fail their liveness probe without delay.',
      'The kubelet restarts a container that fails its liveness probe. Restarts are delayed with an exponential back-off capped at five minutes.',
      '1.0.0',
    ).entailment,
    0.8571,
  );
});

test('[JUDGE-DETERMINISTIC] the same claim and passage give the same judgement every time', () => {
  const first = digest('2.0.0');
  assert.equal(digest('2.0.0'), first);
  const [claim, passage] = ['By default an idle session expires after two hours.', session];
  assert.deepEqual(judgeClaim(claim, passage, '2.0.0'), judgeClaim(claim, passage, '2.0.0'));
});

test('[JUDGE-PORT] the built-in judge behind the port: every version, rules, no usage; configuration picks it', async () => {
  assert.equal(currentJudgeVersion, '3.0.0');
  assert.deepEqual(judgeVersions, ['1.0.0', '1.1.0', '1.2.0', '2.0.0', '3.0.0']);
  assert.deepEqual([...builtinJudge.versions], [...judgeVersionSequence.builtin]);
  assert.equal(builtinJudge.driver, 'builtin');
  assert.equal(builtinJudge.version, '3.0.0');
  const cases = [
    { claim: 'By default an idle session expires after two hours.', passage: session },
    { claim: 'By default an idle session expires after 2 minutes.', passage: session },
  ];
  for (const version of judgeVersions) {
    const run = await builtinJudge.judge(cases, version);
    assert.deepEqual(run, {
      model: judgeModel,
      version,
      promptHash: judgePromptHash(version),
      entailmentFrom: 'rules',
      judgements: cases.map((c) => judgeClaim(c.claim, c.passage, version)),
      usage: null,
    });
  }
  assert.equal((await builtinJudge.judge(cases)).version, '3.0.0');
  await assert.rejects(builtinJudge.judge(cases, '0.9.0'), /unknown judge version/);
  assert.equal(judgeFromConfig(loadConfig({ ASSAY_JUDGE: 'builtin' })), builtinJudge);
  assert.throws(() => judgeFromConfig(loadConfig({ ASSAY_JUDGE: 'openai' })), /ASSAY_JUDGE_URL is not set/);
  assert.match(judgePromptHash('2.0.0'), /^sha256:[0-9a-f]{64}$/);
});

const held =
  'The proxy held the lock while it wrote the file. Only the owner can delete endpoints; other members receive 403.';

test('[JUDGE-3-EVIDENCE] 3.0.0 verifies only on positive evidence: a word the passage lacks, or a subject it states of something else, is not verified where 2.0.0 verified it', () => {
  const rows: [passage: string, claim: string, v3: State, v2: State][] = [
    // Rule 14: a relation word the passage does not have (removes, not keeps) is no evidence.
    ['Release 5.0 removes the XML export.', 'Release 5.0 keeps the XML export.', 'partially_supported', 'verified'],
    [held, 'The proxy held the lock while it wrote the log.', 'partially_supported', 'verified'],
    // Rule 16: the subject of "delete" in the clause that says who may delete is the owner, not the members.
    [held, 'Other members can delete endpoints.', 'partially_supported', 'verified'],
  ];
  for (const [passage, claim, v3, v2] of rows) {
    assert.equal(judgeClaim(claim, passage, '3.0.0').state, v3, `3.0.0 on "${claim}"`);
    assert.equal(judgeClaim(claim, passage, '2.0.0').state, v2, `2.0.0 on "${claim}"`);
  }
  // What the passage does say is still verified.
  assert.equal(judgeClaim('Only the owner can delete endpoints.', held, '3.0.0').state, 'verified');
});

test("[JUDGE-3-IRREGULAR] 3.0.0 reduces irregular forms through WordNet's exception lists (held: hold, wrote: write); 2.0.0 does not", () => {
  const claim = 'The proxy holds the lock while it writes the file.';
  assert.deepEqual(judgeClaim(claim, held, '3.0.0'), { entailment: 1, state: 'verified' });
  assert.equal(judgeClaim(claim, held, '2.0.0').state, 'partially_supported');
});
