// The built-in judge and the artifact format, as pure functions: deterministic, versioned, and strict about
// numbers, negations, unknown sources and unknown locators.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { builtinJudge, currentJudgeVersion, judgePromptHash, judgeVersions } from '../../actors/index.ts';
import { parseArtifact } from '../../actors/verification/format.ts';
import { judgeClaim } from '../../actors/verification/judge.ts';
import { buildReport } from '../../actors/verification/report.ts';

const passage = 'The default duplicate window of a stream is 2 minutes. Streams are not replicated by default.';

test('[CAT-JUDGE] verified, contradicted by a number or a negation, unsupported; the same every time', () => {
  assert.equal(
    judgeClaim('The default duplicate window of a stream is 2 minutes.', passage, '1.2.0').state,
    'verified',
  );
  assert.equal(
    judgeClaim('The default duplicate window of a stream is 5 minutes.', passage, '1.2.0').state,
    'contradicted',
  );
  assert.equal(judgeClaim('Streams are replicated by default.', passage, '1.2.0').state, 'contradicted');
  assert.equal(judgeClaim('Consumers acknowledge messages in batches.', passage, '1.2.0').state, 'unsupported');
  // Older versions miss what their erratum says they miss.
  assert.equal(
    judgeClaim('The default duplicate window of a stream is 5 minutes.', passage, '1.0.0').state,
    'verified',
  );
  assert.equal(judgeClaim('Streams are replicated by default.', passage, '1.1.0').state, 'verified');
  const a = judgeClaim('The stream window is 2 minutes by default.', passage, '1.2.0');
  assert.deepEqual(judgeClaim('The stream window is 2 minutes by default.', passage, '1.2.0'), a);
  assert.ok(a.entailment > 0 && a.entailment <= 1);
});

test('[CAT-JUDGE] each version names its rules by hash; unknown versions are refused', () => {
  const hashes = judgeVersions.map(judgePromptHash);
  assert.equal(new Set(hashes).size, judgeVersions.length);
  for (const h of hashes) assert.match(h, /^sha256:[0-9a-f]{64}$/);
  assert.throws(() => judgeClaim('x', 'x', '0.1.0'), /unknown judge version/);
});

test('[CAT-FORMAT] the example in docs/verification.md parses and judges as documented', async () => {
  const doc = readFileSync(new URL('../../docs/verification.md', import.meta.url), 'utf8');
  const example = /<!-- example:start -->\n```markdown\n([\s\S]*?)```\n<!-- example:end -->/.exec(doc)?.[1];
  assert.ok(example, 'docs/verification.md has the example between markers');
  const parsed = parseArtifact(example);
  assert.deepEqual(parsed.frontMatter.topics, ['postgresql', 'performance']);
  assert.equal(parsed.claims.length, 4);
  const judged = async (judgeVersion: string) =>
    (
      await buildReport(
        {
          artifactId: 'a',
          editionId: 'e',
          contentHash: 'h',
          content: example,
          floor: parsed.frontMatter.floor!,
          judgeVersion,
          createdAt: '2026-11-21T00:00:00.000Z',
        },
        builtinJudge,
      )
    ).report;
  const report = await judged(currentJudgeVersion);
  assert.equal(currentJudgeVersion, '3.0.0');
  assert.deepEqual(
    report.claims.map((c) => [c.state, c.entailment]),
    [
      ['verified', 1],
      ['partially_supported', 0.6],
      ['partially_supported', 0.6],
      ['source_missing', 0],
    ],
  );
  assert.equal(report.summary.verified, 1);
  assert.match(doc, /\(3\.0\.0\), claim c1 is verified; c2 is `partially_supported`/);
  // What the documentation says 2.0.0 made of it.
  assert.deepEqual(
    (await judged('2.0.0')).claims.map((c) => [c.state, c.entailment]),
    [
      ['verified', 1],
      ['verified', 1],
      ['partially_supported', 0.6],
      ['source_missing', 0],
    ],
  );
  assert.match(doc, /Judge 2\.0\.0 verified c1 and c2,\s+and called c3 `partially_supported` too/);
  // What the documentation says 1.2.0 made of c3.
  assert.deepEqual(
    (await judged('1.2.0')).claims.map((c) => c.state),
    ['verified', 'verified', 'contradicted', 'source_missing'],
  );
});
