// The model judge's pure rules: the prompt and its hash, reading an answer, P(supported) from log-probabilities,
// states, a claim's judgement from its chunks, and chunking.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import {
  chunkJudgement,
  chunkPassage,
  claimJudgementIndex,
  modelPromptHash,
  modelPromptText,
  modelPromptVersion,
  parseVerdict,
  quoteFence,
  renderPrompt,
  supportedProbability,
  type TokenLogprob,
} from '../../actors/verification/judges/model-prompt.ts';
import { judgeVersionSequence } from '../../actors/verification/judges/port.ts';

const doc = readFileSync(new URL('../../docs/verification.md', import.meta.url), 'utf8');

test('[JUDGE-MODEL-PROMPT] version 2.2.0, last in the shared sequence; the hash is sha256 of the exact prompt text, which the docs quote', () => {
  assert.equal(modelPromptVersion, '2.2.0');
  const sequence = [...judgeVersionSequence.builtin, ...judgeVersionSequence.modelPrompt];
  assert.equal(sequence.at(-1), modelPromptVersion);
  assert.equal(modelPromptHash, `sha256:${createHash('sha256').update(modelPromptText).digest('hex')}`);
  const quoted = /<!-- model-prompt:start -->\n```text\n([\s\S]*?)\n```\n<!-- model-prompt:end -->/.exec(doc)?.[1];
  assert.equal(quoted, modelPromptText, 'docs/verification.md quotes the prompt exactly, between its markers');
  assert.ok(doc.includes(modelPromptHash), 'docs/verification.md names the prompt hash');
  // Substitution is one pass: text in the passage that looks like a placeholder stays as it is.
  const rendered = renderPrompt('a passage mentioning {{claim}}', 'the claim');
  const fence = quoteFence(['a passage mentioning {{claim}}', 'the claim']);
  assert.ok(rendered.includes(`<<<${fence}\na passage mentioning {{claim}}\n${fence}>>>`));
  assert.ok(rendered.includes(`<<<${fence}\nthe claim\n${fence}>>>`));
});

test('[JUDGE-MODEL-MALFORMED] only the JSON asked for is an answer (whitespace and one code fence tolerated)', () => {
  const cases: [string, string | null][] = [
    ['{"verdict":"supported"}', 'supported'],
    ['  {"verdict": "unsupported"}\n', 'unsupported'],
    ['```json\n{"verdict":"contradicted"}\n```', 'contradicted'],
    ['```\n{"verdict":"supported"}\n```', 'supported'],
    ['Supported.', null],
    ['{"verdict":"Supported"}', null],
    ['{"verdict":"supported","why":"it says so"}', null],
    ['{"verdict":"maybe"}', null],
    ['The answer is {"verdict":"supported"}', null],
    ['["supported"]', null],
    ['', null],
  ];
  for (const [content, verdict] of cases) assert.equal(parseVerdict(content), verdict, content);
});

const sure = (token: string): TokenLogprob => ({ token, logprob: -0.001, top_logprobs: [{ token, logprob: -0.001 }] });
const at = (token: string, alternatives: [string, number][]): TokenLogprob => ({
  token,
  logprob: Math.log(alternatives.find(([t]) => t === token)?.[1] ?? 0.5),
  top_logprobs: alternatives.map(([t, p]) => ({ token: t, logprob: Math.log(p) })),
});

test('[JUDGE-MODEL-ENTAILMENT] P(supported) is read at the token where the verdict starts, normalised over the three verdicts', () => {
  // A compact answer: {"  verdict  ":"  support  ed  "}; 2% of the mass on a token that is no verdict.
  const compact = [
    sure('{"'),
    sure('verdict'),
    sure('":"'),
    at('support', [
      ['support', 0.686],
      ['un', 0.196],
      ['contr', 0.098],
      ['yes', 0.02],
    ]),
    sure('ed'),
    sure('"}'),
  ];
  assert.ok(Math.abs(supportedProbability(compact)! - 0.7) < 1e-9);
  // Spaced, and the verdict inside the token that carries the quote: `"sup` against `"un` and `"contr`.
  const spaced = [
    sure('{"'),
    sure('verdict'),
    sure('":'),
    at(' "un', [
      [' "un', 0.5],
      [' "sup', 0.3],
      [' "contr', 0.1],
      [' "', 0.1],
    ]),
    sure('supported'),
    sure('"}'),
  ];
  assert.ok(Math.abs(supportedProbability(spaced)! - 0.3 / 0.9) < 1e-9);
  // The token covers more than the verdict's start (`":"sup`): alternatives must share its text before the verdict.
  const merged = [
    sure('{"verdict'),
    at('":"contr', [
      ['":"contr', 0.6],
      ['":"supported', 0.2],
      ['":"un', 0.2],
      ['": "sup', 0.5],
    ]),
    sure('adicted"}'),
  ];
  assert.ok(Math.abs(supportedProbability(merged)! - 0.2) < 1e-9);
  // Inside a code fence, as small models write it.
  const fenced = [sure('```'), sure('json\n'), ...compact, sure('\n```')];
  assert.ok(Math.abs(supportedProbability(fenced)! - 0.7) < 1e-9);
  // The chosen token counts even when the server leaves it out of top_logprobs.
  const chosenOnly = [
    sure('{"verdict":"'),
    { token: 'supported', logprob: Math.log(0.8), top_logprobs: [] },
    sure('"}'),
  ];
  assert.equal(supportedProbability(chosenOnly), 1);
  // Nothing to read: no log-probabilities, no verdict in the tokens, no verdict among the alternatives.
  assert.equal(supportedProbability(null), null);
  assert.equal(supportedProbability([]), null);
  assert.equal(supportedProbability([sure('Supported.')]), null);
  assert.equal(supportedProbability([sure('{"verdict":"'), at('Yes', [['Yes', 0.9]]), sure('"}')]), null);
});

test('[JUDGE-MODEL-STATES] states follow the built-in thresholds; a contradicted verdict is contradicted, at most 0.1', () => {
  const cases: [Parameters<typeof chunkJudgement>, ReturnType<typeof chunkJudgement>][] = [
    [['supported', null], { entailment: 1, state: 'verified' }],
    [['unsupported', null], { entailment: 0, state: 'unsupported' }],
    [['contradicted', null], { entailment: 0, state: 'contradicted' }],
    [['supported', 0.75], { entailment: 0.75, state: 'verified' }],
    [['supported', 0.74999], { entailment: 0.75, state: 'verified' }], // rounded to 4 places first
    [['supported', 0.6], { entailment: 0.6, state: 'partially_supported' }],
    [['supported', 0.4], { entailment: 0.4, state: 'unsupported' }],
    [['unsupported', 0.48], { entailment: 0.48, state: 'partially_supported' }],
    [['unsupported', 0.2], { entailment: 0.2, state: 'unsupported' }],
    [['contradicted', 0.3], { entailment: 0.1, state: 'contradicted' }],
    [['contradicted', 0.05], { entailment: 0.05, state: 'contradicted' }],
  ];
  for (const [args, expected] of cases) assert.deepEqual(chunkJudgement(...args), expected, JSON.stringify(args));
});

test('[JUDGE-MODEL-CHUNKS] a claim takes its best chunk: support anywhere, else a contradiction, else the best; any judge_error wins', () => {
  const v = { entailment: 0.9, state: 'verified' } as const;
  const p = { entailment: 0.5, state: 'partially_supported' } as const;
  const u = { entailment: 0.3, state: 'unsupported' } as const;
  const u0 = { entailment: 0, state: 'unsupported' } as const;
  const c = { entailment: 0.02, state: 'contradicted' } as const;
  const e = { entailment: 0, state: 'judge_error' } as const;
  assert.equal(claimJudgementIndex([u, p, v]), 2);
  assert.equal(claimJudgementIndex([c, p, u]), 1);
  assert.equal(claimJudgementIndex([u, c, u0]), 1);
  assert.equal(claimJudgementIndex([u0, u]), 1);
  assert.equal(claimJudgementIndex([v, e]), 1);
  assert.equal(claimJudgementIndex([u]), 0);
});

test('[JUDGE-MODEL-CHUNKS] long passages are cut on sentence boundaries into overlapping chunks that cover the passage', () => {
  assert.deepEqual(chunkPassage('Short passage.', 100, 20), ['Short passage.']);
  // 30 sentences of 19 characters ("Sentence number 07."), one space apart: k sentences take 20k - 1 characters.
  const sentences = Array.from({ length: 30 }, (_, i) => `Sentence number ${String(i).padStart(2, '0')}.`);
  const passage = sentences.join(' ');
  const chunks = chunkPassage(passage, 100, 45);
  // A chunk holds 5 sentences (99 <= 100), the next repeats its last 2 (39 <= 45; 3 would be 59): starts 0, 3, ..., 27.
  assert.equal(chunks.length, 10);
  assert.equal(chunks[0], sentences.slice(0, 5).join(' '));
  assert.equal(chunks[1], sentences.slice(3, 8).join(' '));
  assert.equal(chunks.at(-1), sentences.slice(27, 30).join(' '));
  for (const [i, chunk] of chunks.entries()) {
    assert.ok(chunk.length <= 100);
    assert.ok(passage.includes(chunk), 'a chunk is an exact substring of the passage');
    assert.match(chunk, /^Sentence number \d\d\.( Sentence number \d\d\.)*$/, 'chunks end on sentence boundaries');
    if (i > 0) assert.ok(chunk.startsWith(chunks[i - 1]!.slice(-39)), 'neighbours overlap by the last two sentences');
  }
  for (const s of sentences)
    assert.ok(
      chunks.some((c) => c.includes(s)),
      `${s} is in a chunk`,
    );
  // No overlap asked for: the chunks tile the sentences.
  assert.equal(chunkPassage(passage, 100, 0).length, 6);
  // Line breaks end sentences too; a sentence longer than a chunk is cut at white space.
  const long = `${'word '.repeat(50).trim()}\nLast line without a full stop`;
  const cut = chunkPassage(long, 60, 10);
  for (const chunk of cut) assert.ok(chunk.length <= 60 && long.includes(chunk));
  assert.ok(cut.at(-1)!.endsWith('Last line without a full stop'));
  assert.throws(() => chunkPassage(passage, 100, 60), /overlap must be at most half a chunk/);
});
