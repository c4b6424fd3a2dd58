// The built-in judge's clause rules, applied: 2.0.0 as released, and 3.0.0, which reads the same way and verifies only
// on positive evidence (a RuleSet says which). A claim is read clause by clause against the passage clause that
// shares most with it; words match through WordNet; numbers, units, quantifiers, negations, directions of
// comparison and the order of the terms around the relation must agree. The rules text the report hashes is in
// builtin.ts; this is the code that applies it, rule by rule in the same order.
import { type WordInfo, wordInfo } from './lexicon.ts';
import { boundConflict, findQuantities, type Quantity, sameAmount } from './quantities.ts';

/**
 * What differs between the rule sets this engine applies. 2.0.0 as released; 3.0.0 verifies only on positive
 * evidence (every content word found, each claim clause read against a passage clause, the subject and object of a
 * matched relation found in that clause) and reduces irregular forms through WordNet's exception lists.
 */
export interface RuleSet {
  version: '2.0.0' | '3.0.0';
  /** Reduce irregular forms through WordNet's exception lists (3.0.0). */
  irregular: boolean;
  /** Verify only on positive evidence (3.0.0 rules 14 to 17). */
  strict: boolean;
}

export const ruleSet2: RuleSet = { version: '2.0.0', irregular: false, strict: false };
export const ruleSet3: RuleSet = { version: '3.0.0', irregular: true, strict: true };

export interface Verdict {
  entailment: number;
  state: 'verified' | 'partially_supported' | 'unsupported' | 'contradicted';
  /** Which rules capped or contradicted the claim, in words (for tests and for whoever debugs a judgement). */
  reasons: string[];
}

export const verifiedFrom = 0.75;
export const partialFrom = 0.45;
/** A claim that adds what the passage does not say is at most partially supported. */
export const unstatedCap = 0.6;
export const contradictedCap = 0.1;

const stopWords = new Set(
  `a an the and or but nor of in on at by for from to into onto with as over under per via than then there
  is are was were be been being am has have had having do does did doing it its itself they them their theirs
  this these those that which who whom whose what where when while also too very so such both either whether
  if because since though although unless until once after before about against between through during upon
  out up down off above below again further here how why other another same own just still even yet therefore
  will would shall should can could may might must need needs ought i we you he she me us him her my our your
  s etc`.split(/\s+/),
);
const negationWords = new Set(['not', 'no', 'never', 'none', 'nothing', 'neither', 'nor', 'without', 'nobody']);
/** Universal quantifiers a claim may not add; `each` is left out: "each X" is how a generic plural is written. */
const universalWords = new Set(['all', 'every', 'always', 'whole', 'entire', 'everything', 'must']);
/** What a passage may state universally with (each included). */
const passageUniversal = new Set([...universalWords, 'each']);
const weakWords = new Set(['some', 'sometimes', 'may', 'might', 'could', 'occasionally', 'usually', 'part']);
const exclusiveWords = new Set(['only', 'exactly', 'solely']);
const modalWords = new Set([
  'can',
  'could',
  'may',
  'might',
  'must',
  'should',
  'will',
  'would',
  'to',
  'not',
  'does',
  'do',
  'did',
]);
const determiners = new Set([
  'a',
  'an',
  'the',
  'its',
  'their',
  'this',
  'these',
  'each',
  'every',
  'all',
  'some',
  'any',
  'of',
]);
/** Grade words: more/less and their kin, with a sign. */
const gradeWords: Record<string, number> = { more: 1, most: 1, less: -1, fewer: -1, least: -1 };
/** Order in time: `after X` is also written `once X` or `when X`; `before X` only so. */
const orderWords: Record<string, string[]> = { before: ['before', 'then'], after: ['after', 'once', 'when'] };
const anaphora = new Set(['it', 'its', 'they', 'their', 'them', 'this', 'these']);
const subjectPronouns = new Set(['it', 'they', 'this', 'these', 'which', 'that', 'who', 'them']);
const prepositions = new Set(
  'at in on for with by from to of over under during within into through via per about across between without'.split(
    ' ',
  ),
);
const beForms = new Set(['is', 'are', 'was', 'were', 'be', 'been', 'being']);
const getForms = new Set(['get', 'gets', 'got', 'gotten']);
/** A comma ends a clause when the clause began with one of these (a fronted subordinate or adverbial phrase). */
const frontedOpeners = new Set(
  'because since if when although though while unless until after before once with without by in on at for during unlike like thanks as apart to'.split(
    ' ',
  ),
);
const clauseConjunctions = new Set(['and', 'but', 'so', 'which', 'while', 'whereas', 'because', 'although', 'though']);
const boundaryWords = new Set(['because', 'whereas', 'although', 'unless']);
const timeUnits = new Set(['second', 'minute', 'hour', 'day', 'week', 'month', 'year', 'time']);
/** How many content words after a negation it governs. */
const negationScope = 3;

/** The word lists above, as they are appended to the rules text (so the rules hash covers them too). */
export const wordLists = [
  ['stop words', stopWords],
  ['negations', negationWords],
  ['universal quantifiers a claim may not add', universalWords],
  ['universal quantifiers of a passage', passageUniversal],
  ['weak quantifiers', weakWords],
  ['exclusive words', exclusiveWords],
  ['grade words', new Set(Object.keys(gradeWords))],
  ['anaphors', anaphora],
  ['pronouns in a subject or object slot', subjectPronouns],
  ['prepositions', prepositions],
  ['forms of be', beForms],
  ['forms of get', getForms],
  ['openers of a fronted phrase', frontedOpeners],
  ['conjunctions after a comma that end a clause', clauseConjunctions],
  ['words that end a clause', boundaryWords],
  ['units of time after every', timeUnits],
  ['modal and auxiliary words', modalWords],
  ['determiners', determiners],
]
  .map(([name, set]) => `${name}: ${[...(set as Set<string>)].join(' ')}`)
  .join('\n');

interface Token {
  w: string;
  /** As written (case kept): names are told by their capitals. */
  original: string;
  sentence: number;
  clause: number;
  /** A content word: its matches count towards coverage. */
  content: boolean;
  neg: boolean;
  /** The first content word after a negation: what it governs directly. */
  negatedFirst: boolean;
  info: WordInfo | null;
  quantity: boolean;
}

interface Text {
  rules: RuleSet;
  tokens: Token[];
  quantities: Quantity[];
  bareUnits: { unit: string; dim: string; index: number }[];
  clauseCount: number;
  sentenceCount: number;
  /** Clauses and sentences are runs of tokens: [start, end) of each. */
  clauseRange: [number, number][];
  sentenceRange: [number, number][];
}

interface Passage extends Text {
  /** key -> token indices with that key, and key -> token indices reached through a hypernym. */
  exact: Map<string, number[]>;
  broader: Map<string, number[]>;
  /** Content words by their first six letters, for words WordNet does not know. */
  prefixes: Map<string, number[]>;
  /** Initials of runs of two to four content words ("json web token" -> jwt), to match a name in capitals. */
  initialisms: Map<string, number[]>;
  /** Token indices inside the scope of a negation. */
  negated: Set<number>;
  /** Its comparisons and antonym-bearing words. */
  items: PolarityItem[];
  /** Short names in capitals (JWT, GIL), which a claim may spell out. */
  acronyms: Set<string>;
  /** What each claim word matched here (a memo: claims citing one passage share their words). */
  memo: Map<string, number[]>;
  /** Its sentences, lower-cased, as words only: a claim equal to one is quoted. */
  quoted: Set<string>;
}

function normalise(text: string): string {
  let t = text
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/\b([Cc])an'?not\b/g, '$1an not')
    .replace(/\b([Ww])on't\b/g, '$1ill not')
    .replace(/n't\b/g, ' not')
    .replace(/'s\b/g, '')
    .replace(/\brather than\b/gi, 'rather_than')
    .replace(/\binstead of\b/gi, 'instead_of');
  for (let i = 0; i < 3; i++) t = t.replace(/(\d),(\d{3})\b/g, '$1$2');
  return t;
}

const tokenPattern = /[A-Za-z0-9\u00b5][A-Za-z0-9\u00b5_'./%+=-]*[A-Za-z0-9%\u00b5+]|[A-Za-z0-9\u00b5%]|[.;:!?,]/g;

function analyse(text: string, rules: RuleSet): Text {
  const originals = (normalise(text).match(tokenPattern) ?? []).map((w) => w.replace(/^'+|'+$/g, ''));
  const words = originals.map((w) => w.toLowerCase());
  const { quantities, bareUnits } = findQuantities(words, rules.strict);
  const inQuantity = new Set<number>();
  for (const q of quantities) for (let k = q.start; k <= q.end; k++) inQuantity.add(k);
  const tokens: Token[] = [];
  let sentence = 0;
  let clause = 0;
  let clauseStart = true;
  let opener = '';
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const original = originals[i]!;
    const quantity = inQuantity.has(i);
    if (w === '.' || w === '!' || w === '?' || w === ';' || w === ':') {
      tokens.push(plain(w, original, sentence, clause, quantity));
      if (w !== ';' && w !== ':') sentence++;
      clause++;
      clauseStart = true;
      continue;
    }
    if (w === ',') {
      const next = words[i + 1] ?? '';
      tokens.push(plain(w, original, sentence, clause, quantity));
      if (clauseConjunctions.has(next) || frontedOpeners.has(opener)) {
        clause++;
        clauseStart = true;
      }
      continue;
    }
    if (boundaryWords.has(w) && !clauseStart) {
      clause++;
      clauseStart = true;
    }
    if (clauseStart) {
      opener = w;
      clauseStart = false;
    }
    // 3.0.0: "no more than 4" is a bound on the number (rule 7), not a negation.
    const bound = rules.strict && w === 'no' && words[i + 2] === 'than' && inQuantity.has(i + 3);
    const neg = !bound && (negationWords.has(w) || w === 'rather_than' || w === 'instead_of');
    // 3.0.0: May with a capital inside a sentence is the month, not the modal ("the terminal opens in May").
    const month = rules.strict && original === 'May' && tokens.length > 0 && tokens.at(-1)!.sentence === sentence;
    const content =
      month ||
      (!quantity &&
        !neg &&
        !negationWords.has(w) &&
        !stopWords.has(w) &&
        !universalWords.has(w) &&
        !weakWords.has(w) &&
        !exclusiveWords.has(w) &&
        !(w in gradeWords) &&
        /[a-z]/.test(w));
    const tok = plain(w, original, sentence, clause, quantity);
    tok.content = content;
    tok.neg = neg;
    tok.info = content ? wordInfo(w, rules.irregular) : null;
    tokens.push(tok);
  }
  tokens.forEach((tok, i) => {
    if (!tok.neg) return;
    const first = scopeOf({ rules, tokens } as Text, i)[0];
    if (first !== undefined) tokens[first]!.negatedFirst = true;
  });
  const clauseRange: [number, number][] = Array.from({ length: clause + 1 }, () => [0, 0]);
  const sentenceRange: [number, number][] = Array.from({ length: sentence + 1 }, () => [0, 0]);
  for (let i = tokens.length - 1; i >= 0; i--) {
    clauseRange[tokens[i]!.clause]![0] = i;
    sentenceRange[tokens[i]!.sentence]![0] = i;
  }
  for (let i = 0; i < tokens.length; i++) {
    clauseRange[tokens[i]!.clause]![1] = i + 1;
    sentenceRange[tokens[i]!.sentence]![1] = i + 1;
  }
  return {
    rules,
    tokens,
    quantities,
    bareUnits,
    clauseCount: clause + 1,
    sentenceCount: sentence + 1,
    clauseRange,
    sentenceRange,
  };
}

function plain(w: string, original: string, sentence: number, clause: number, quantity: boolean): Token {
  return { w, original, sentence, clause, content: false, neg: false, negatedFirst: false, info: null, quantity };
}

/** Token indices of clause `c`. */
function clauseIndices(t: Text, c: number): number[] {
  const [start, end] = t.clauseRange[c] ?? [0, 0];
  const out: number[] = [];
  for (let k = start; k < end; k++) out.push(k);
  return out;
}

/** Token indices a negation at `i` governs: the next few content words of its clause. */
function scopeOf(t: Text, i: number): number[] {
  const out: number[] = [];
  for (let k = i + 1; k < t.tokens.length && out.length < negationScope; k++) {
    const tok = t.tokens[k]!;
    if (tok.clause !== t.tokens[i]!.clause) break;
    if (tok.content || tok.w in gradeWords) out.push(k);
  }
  return out;
}

function negatedTokens(t: Text): Set<number> {
  const out = new Set<number>();
  t.tokens.forEach((tok, i) => {
    if (tok.neg) for (const k of scopeOf(t, i)) out.add(k);
  });
  return out;
}

const passageCaches = new Map<string, Map<string, Passage>>();
const passageCacheMax = 512;

function analysePassage(text: string, rules: RuleSet): Passage {
  let passageCache = passageCaches.get(rules.version);
  if (!passageCache) {
    passageCache = new Map();
    passageCaches.set(rules.version, passageCache);
  }
  const cached = passageCache.get(text);
  if (cached) return cached;
  const t = analyse(text, rules);
  const exact = new Map<string, number[]>();
  const broader = new Map<string, number[]>();
  const prefixes = new Map<string, number[]>();
  const initialisms = new Map<string, number[]>();
  const put = (m: Map<string, number[]>, k: string, i: number) => {
    const list = m.get(k);
    if (list) list.push(i);
    else m.set(k, [i]);
  };
  t.tokens.forEach((tok, i) => {
    if (!tok.info) return;
    for (const k of tok.info.keys) put(exact, k, i);
    for (const k of tok.info.broader) put(broader, k, i);
    if (tok.w.length >= 6) put(prefixes, tok.w.slice(0, 6), i);
    if (tok.w.includes('-')) for (const part of tok.w.split('-')) if (part.length > 1) put(exact, `l:${part}`, i);
  });
  // Initialisms: "json web token" also answers to "jwt".
  const content = t.tokens.map((tok, i) => ({ tok, i })).filter((x) => x.tok.content);
  for (let n = 2; n <= 4; n++) {
    for (let s = 0; s + n <= content.length; s++) {
      const run = content.slice(s, s + n);
      if (run.some((x) => x.tok.sentence !== run[0]!.tok.sentence)) continue;
      put(initialisms, run.map((x) => x.tok.w[0]).join(''), run[0]!.i);
    }
  }
  const acronyms = new Set(
    t.tokens.filter((tok) => tok.content && isName(tok) && /^[a-z]{2,5}$/.test(tok.w)).map((tok) => tok.w),
  );
  const p: Passage = {
    ...t,
    exact,
    broader,
    prefixes,
    initialisms,
    negated: negatedTokens(t),
    items: polarityItems(t),
    acronyms,
    memo: new Map(),
    quoted: new Set(text.split(/(?<=[.!?])\s+|\n+/).map(wordsOnly)),
  };
  if (passageCache.size >= passageCacheMax) passageCache.clear();
  passageCache.set(text, p);
  return p;
}

/** Passage token indices a claim token matches: shared concepts first, then broader ones, then spelling. */
function matchesOf(tok: Token, p: Passage): number[] {
  const memoKey = isName(tok) ? `N${tok.w}` : tok.w;
  const memo = p.memo.get(memoKey);
  if (memo) return memo;
  const found = computeMatches(tok, p);
  if (p.memo.size < memoMax) p.memo.set(memoKey, found);
  return found;
}

const memoMax = 4096;

function computeMatches(tok: Token, p: Passage): number[] {
  const info = tok.info!;
  const found = new Set<number>();
  for (const k of info.keys) for (const i of p.exact.get(k) ?? []) found.add(i);
  if (found.size === 0) for (const k of info.keys) for (const i of p.broader.get(k) ?? []) found.add(i);
  if (found.size === 0 && tok.w.includes('-')) {
    const parts = tok.w.split('-').filter((x) => x.length > 1);
    const each = parts.map((part) => wordMatches(part, p));
    if (parts.length > 0 && each.every((e) => e.length > 0)) for (const i of each[0]!) found.add(i);
  }
  if (found.size === 0 && isName(tok)) for (const i of p.initialisms.get(tok.w) ?? []) found.add(i);
  if (found.size === 0 && tok.w.length >= 6 && /^[a-z]+$/.test(tok.w)) {
    // Spelling: two words sharing their first six letters and most of the shorter one (revalidation, revalidating).
    for (const i of p.prefixes.get(tok.w.slice(0, 6)) ?? []) {
      const other = p.tokens[i]!.w;
      let common = 0;
      while (common < Math.min(other.length, tok.w.length) && other[common] === tok.w[common]) common++;
      if (common >= 0.75 * Math.min(other.length, tok.w.length)) found.add(i);
    }
  }
  return [...found].sort((a, b) => a - b);
}

function wordMatches(word: string, p: Passage): number[] {
  const out = new Set<number>();
  for (const k of wordInfo(word, p.rules.irregular).keys) for (const i of p.exact.get(k) ?? []) out.add(i);
  return [...out];
}

/** A name: written with two capitals or more (READ COMMITTED, maxSurge, TCP), or with digits, dots, underscores. */
const isName = (tok: Token) => /[A-Z].*[A-Z]/.test(tok.original) || /[0-9_./=]/.test(tok.w);
/** A word that names a thing when it stands before a noun (hash index, B-tree index), not a quality (lower values). */
const nounish = (tok: Token) =>
  isName(tok) || (tok.info !== null && (!tok.info.known || (tok.info.noun && !tok.info.adjective)));
const isEntity = (tok: Token) => tok.info !== null && (tok.info.noun || !tok.info.known || isName(tok));

/** A verb in this sentence: a verb form after a modal, `to`, `not` or a form of be, or inflected (-s, -ed) after a noun. */
function isVerbal(t: Text, i: number): boolean {
  const tok = t.tokens[i]!;
  if (!tok.info?.verb || isName(tok)) return false;
  const prev = t.tokens[i - 1]?.w ?? '';
  const prev2 = t.tokens[i - 2]?.w ?? '';
  if (determiners.has(prev)) return false;
  if (modalWords.has(prev) || beForms.has(prev) || modalWords.has(prev2) || beForms.has(prev2)) return true;
  const before = t.tokens[i - 1];
  const afterSubject =
    before !== undefined &&
    ((before.content && isEntity(before) && !isVerbal(t, i - 1)) || subjectPronouns.has(before.w));
  return /(s|ed)$/.test(tok.w) && !/(ss|us|is)$/.test(tok.w) && afterSubject;
}

/** An entity that can be a subject or an object: a noun or a name, not used as a verb here, not inside a phrase
 * of a preposition (those move freely: "at a time"). */
function isArgument(t: Text, k: number): boolean {
  const tok = t.tokens[k]!;
  if (!tok.content || !isEntity(tok) || isVerbal(t, k) || (tok.w.includes('-') && !isName(tok))) return false;
  for (let b = k - 1; b >= 0; b--) {
    const prev = t.tokens[b]!;
    if (prepositions.has(prev.w)) return false;
    if (prev.content || determiners.has(prev.w) || prev.quantity) continue;
    return true;
  }
  return true;
}

const wordsOnly = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9%]+/g, ' ')
    .trim();

/** The 2.0.0 rules, as released. */
export function judgeV2(claimText: string, passageText: string): Verdict {
  return judgeClauses(claimText, passageText, ruleSet2);
}

/** Judge a claim against its passage by the rule set given (2.0.0, or 3.0.0 with its positive-evidence rules). */
export function judgeClauses(claimText: string, passageText: string, rules: RuleSet): Verdict {
  const passage = analysePassage(passageText, rules);
  // Rule 2: a claim that is, word for word, a sentence of the passage is quoted: verified.
  if (passage.quoted.has(wordsOnly(claimText))) return { entailment: 1, state: 'verified', reasons: [] };
  const claim = analyse(claimText, rules);
  const reasons: string[] = [];
  let contradicted = false;
  let capped = false;
  const contradict = (why: string) => {
    contradicted = true;
    if (!reasons.includes(why)) reasons.push(why);
  };
  const cap = (why: string) => {
    capped = true;
    if (!reasons.includes(why)) reasons.push(why);
  };

  // Rules 3-4: content words and where they occur in the passage (rule 12: names the passage lacks).
  const matches = new Map<number, number[]>();
  const distinct = new Map<string, number[]>();
  claim.tokens.forEach((tok, i) => {
    if (!tok.content) return;
    matches.set(i, matchesOf(tok, passage));
    const lemmaKey = tok.info!.keys.find((k) => k.startsWith('l:') && k !== `l:${tok.w}`) ?? `l:${tok.w}`;
    distinct.set(lemmaKey, [...(distinct.get(lemmaKey) ?? []), i]);
  });
  // A claim spelling out what the passage abbreviates: words whose initials are a passage word.
  const claimContent =
    passage.acronyms.size === 0 ? [] : claim.tokens.map((tok, i) => ({ tok, i })).filter((x) => x.tok.content);
  for (let n = 2; n <= 4 && claimContent.length > 0; n++) {
    for (let s = 0; s + n <= claimContent.length; s++) {
      const run = claimContent.slice(s, s + n);
      const initials = run.map((x) => x.tok.w[0]).join('');
      if (!passage.acronyms.has(initials)) continue;
      const hit = (passage.exact.get(`l:${initials}`) ?? []).filter((j) => isName(passage.tokens[j]!));
      if (hit.length > 0) for (const x of run) if ((matches.get(x.i) ?? []).length === 0) matches.set(x.i, hit);
    }
  }
  let total = 0;
  let matched = 0;
  for (const indices of distinct.values()) {
    total++;
    if (indices.some((i) => (matches.get(i) ?? []).length > 0)) matched++;
    else {
      const tok = claim.tokens[indices[0]!]!;
      if (isName(tok) || !tok.info?.known) cap(`the passage does not name "${tok.original}"`);
      // 3.0.0 rule 14: every content word must be found; a word the passage does not have is not evidence.
      else if (rules.strict) cap(`the passage has nothing for "${tok.w}"`);
    }
  }

  // Rule 6: the passage clause (and sentence) each claim clause is read against.
  const bestClause = new Map<number, number>();
  for (let c = 0; c < claim.clauseCount; c++) {
    const byClause = new Map<number, number>();
    const bySentence = new Map<number, number>();
    let size = 0;
    for (const i of clauseIndices(claim, c)) {
      const tok = claim.tokens[i]!;
      if (!tok.content) continue;
      size++;
      const m = matches.get(i) ?? [];
      for (const pc of new Set(m.map((j) => passage.tokens[j]!.clause))) byClause.set(pc, (byClause.get(pc) ?? 0) + 1);
      for (const ps of new Set(m.map((j) => passage.tokens[j]!.sentence)))
        bySentence.set(ps, (bySentence.get(ps) ?? 0) + 1);
    }
    // 3.0.0: of clauses sharing as many words, one in the sentence sharing most with the claim clause.
    const best = rules.strict ? argmaxWithin(byClause, argmax(bySentence), passage) : argmax(byClause);
    if (best !== null && byClause.get(best)! >= Math.min(2, size)) bestClause.set(c, best);
    // 3.0.0 rule 15: a claim clause with content words that no passage clause states is not read against anything.
    else if (rules.strict && size > 0) cap('a clause of the claim matches no clause of the passage');
    // 3.0.0 rule 16: the subjects and objects of a claim clause must be found in the sentence of the passage clause
    // it is read against, or in the passage's first sentence (its topic); otherwise the passage says it of something
    // else.
    const pc = bestClause.get(c);
    if (rules.strict && pc !== undefined) {
      const ps = passage.tokens[passage.clauseRange[pc]![0]]!.sentence;
      for (const i of clauseIndices(claim, c)) {
        const tok = claim.tokens[i]!;
        const m = matches.get(i) ?? [];
        if (!tok.content || m.length === 0 || !isArgument(claim, i)) continue;
        if (!m.some((j) => passage.tokens[j]!.sentence === ps || passage.tokens[j]!.sentence === 0))
          cap(`the passage says "${tok.w}" of something else than the sentence that matches`);
      }
    }
    // A claim clause joining what the passage says of different things: words found only in other sentences
    // (an anaphor, "it", lets the sentence before count as the same statement).
    const sentence = argmax(bySentence);
    if (sentence !== null && size >= 3) {
      const allowed = new Set([sentence]);
      const [ss, se] = passage.sentenceRange[sentence]!;
      if (passage.tokens.slice(ss, se).some((t) => anaphora.has(t.w))) allowed.add(sentence - 1);
      const stray = claim.tokens
        .map((tok, i) => ({ tok, i }))
        .filter(({ tok, i }) => {
          if (tok.clause !== c || !tok.content) return false;
          const m = matches.get(i) ?? [];
          return m.length > 0 && !m.some((j) => allowed.has(passage.tokens[j]!.sentence));
        });
      // One entity of the passage's first sentence may be carried over (the topic: "In RSA, ... Keys shorter than");
      // two entities, or a name from elsewhere, join statements about different things.
      const entities = stray.filter(({ tok, i }) => isEntity(tok) && !isVerbal(claim, i));
      const topic = (i: number) => (matches.get(i) ?? []).some((j) => passage.tokens[j]!.sentence === 0);
      if (entities.length >= 2 || (entities.length === 1 && !topic(entities[0]!.i)))
        cap(`the claim joins what the passage says in different sentences ("${entities[0]!.tok.w}")`);
    }
  }

  // Rule 7: quantities.
  let quantitiesTotal = 0;
  let quantitiesMatched = 0;
  for (const q of claim.quantities) {
    quantitiesTotal++;
    const verdict = judgeQuantity(q, claim, passage, matches);
    if (verdict === 'same') quantitiesMatched++;
    else if (verdict === 'stronger') {
      quantitiesMatched++;
      cap(`the claim's bound on ${describe(q)} is stronger than the passage's`);
    } else if (verdict === 'conflict') contradict(`the passage gives another amount than ${describe(q)}`);
    else cap(`the passage does not state ${describe(q)}`);
  }
  for (const u of claim.bareUnits) {
    const passageUnits = [
      ...passage.bareUnits.filter((b) => b.dim === u.dim).map((b) => b.unit),
      ...passage.quantities.filter((q) => q.dim === u.dim && q.unit).map((q) => q.unit!),
    ];
    if (passageUnits.includes(u.unit)) continue;
    if (passageUnits.length > 0) contradict(`the passage measures in other units than ${u.unit}s`);
    else cap(`the passage does not mention ${u.unit}s`);
  }

  // Rule 8: negation, word by word. A passage word a negation governs directly (the first content word after it)
  // that the claim matches, in a clause the claim is read against, must be negated in the claim too; a claim
  // negation must govern something the passage negates (its first governed word the passage has).
  const claimNegated = negatedTokens(claim);
  const matchedInClause = new Map<number, Set<number>>();
  for (const m of matches.values())
    for (const j of m) {
      const pc = passage.tokens[j]!.clause;
      const set = matchedInClause.get(pc) ?? new Set<number>();
      set.add(j);
      matchedInClause.set(pc, set);
    }
  const shared = (pc: number) => (matchedInClause.get(pc)?.size ?? 0) >= 2;
  // A claim word's matches in the passage clause its own clause is read against, when it has any there.
  const near = (i: number): number[] => {
    const m = matches.get(i) ?? [];
    const pc = bestClause.get(claim.tokens[i]!.clause);
    const inClause = pc === undefined ? [] : m.filter((j) => passage.tokens[j]!.clause === pc);
    return inClause.length > 0 ? inClause : m;
  };
  for (const i of matches.keys()) {
    const m = near(i);
    const direct = m.filter(
      (j) => passage.negated.has(j) && passage.tokens[j]!.negatedFirst && shared(passage.tokens[j]!.clause),
    );
    const plain = m.filter((j) => !passage.negated.has(j));
    if (direct.length > 0 && plain.length === 0 && !claimNegated.has(i))
      contradict(`the passage negates "${claim.tokens[i]!.w}", the claim does not`);
  }
  claim.tokens.forEach((tok, i) => {
    if (!tok.neg) return;
    // The word the negation governs directly: if the passage does not have it, the claim denies what the passage
    // does not mention.
    const governed = scopeOf(claim, i)[0];
    if (governed === undefined) return;
    if ((matches.get(governed) ?? []).length === 0) {
      cap(`the claim denies "${claim.tokens[governed]!.w}", which the passage does not mention`);
      return;
    }
    if (!near(governed).some((j) => passage.negated.has(j)))
      contradict(`the claim negates "${claim.tokens[governed]!.w}", the passage does not`);
  });

  // Rule 9: quantifiers.
  for (const [c, pc] of bestClause) {
    const ct = clauseIndices(claim, c).map((k) => claim.tokens[k]!);
    const pt = clauseIndices(passage, pc).map((k) => passage.tokens[k]!);
    const [ss, se] = passage.sentenceRange[pt[0]!.sentence]!;
    const pSentence = passage.tokens.slice(ss, se);
    const has = (ts: Token[], set: Set<string>) => ts.some((t) => set.has(t.w));
    const claimUniversal = ct.some(
      (t, k) => universalWords.has(t.w) && !(t.w === 'every' && timeUnits.has(stemOf(ct[k + 1]?.w ?? ''))),
    );
    const pStrong = has(pSentence, passageUniversal) || has(pSentence, exclusiveWords) || pSentence.some((t) => t.neg);
    if (has(ct, weakWords) && has(pt, passageUniversal))
      contradict('the claim weakens a universal statement to some cases');
    else if (claimUniversal && !pStrong) cap('the claim generalises beyond the passage (all, every, always, must)');
    if (has(ct, exclusiveWords) && !has(pSentence, exclusiveWords) && !pSentence.some((t) => t.w === 'single'))
      cap('the claim restricts (only, exactly) where the passage does not');
  }

  // Rule 10: directions of comparison and antonyms, each read against the passage clause it matches.
  const claimItems = polarityItems(claim);
  const passageItems = passage.items;
  for (const item of claimItems) {
    const pc = bestClause.get(claim.tokens[item.index]!.clause);
    const ps = pc === undefined ? undefined : passage.tokens[passage.clauseRange[pc]![0]]!.sentence;
    const pool = passageItems.filter((p) => ps === undefined || passage.tokens[p.index]!.sentence === ps);
    let best: { relation: 'same' | 'opposite'; score: number } | null = null;
    for (const p of pool) {
      const relation = relate(item, p);
      if (relation === null) continue;
      const score = contextScore(item.index, claim, p.index, passage, matches);
      if (!best || score > best.score || (score === best.score && relation === 'same')) best = { relation, score };
    }
    if (best?.relation === 'opposite') contradict(`"${item.word}" reverses the passage`);
    else if (!best && item.comparison && !item.order && !passageItems.some((p) => p.comparison && !p.order))
      cap(`the passage does not compare as the claim does ("${item.word}")`);
  }

  // Rule 11: the order of the main terms around the relation, and modifiers moved between things.
  for (const [c, pc] of bestClause) {
    const unanchored: string[] = [];
    const swapped = rolesSwapped(claim, c, passage, pc, matches, unanchored);
    if (swapped) contradict(`the claim swaps the roles of "${swapped}" around the relation`);
    // 3.0.0 rule 16: the subject and object of a matched relation must be found in the clause that states it.
    if (rules.strict && unanchored.length > 0)
      cap(`the passage does not state the relation of "${unanchored[0]}" in the clause that matches`);
    const moved = modifierMoved(claim, c, passage, pc, matches);
    if (moved) contradict(`the passage does not say this of "${moved}"`);
  }

  // Rules 5 and 13: coverage, then the caps and contradictions found above.
  const denominator = total + quantitiesTotal;
  const coverage = denominator === 0 ? 0 : (matched + quantitiesMatched) / denominator;
  let entailment = round4(coverage);
  if (contradicted)
    return { entailment: round4(Math.min(entailment, contradictedCap)), state: 'contradicted', reasons };
  if (capped) entailment = round4(Math.min(entailment, unstatedCap));
  const state =
    entailment >= verifiedFrom ? 'verified' : entailment >= partialFrom ? 'partially_supported' : 'unsupported';
  return { entailment, state, reasons };
}

const round4 = (x: number) => Math.round(x * 10_000) / 10_000;
const stemOf = (w: string) => (w.endsWith('s') ? w.slice(0, -1) : w);

/** The key of the highest count, preferring (on a tie) a clause of passage sentence `sentence`, then the earlier. */
function argmaxWithin(m: Map<number, number>, sentence: number | null, passage: Passage): number | null {
  let best: number | null = null;
  const inSentence = (k: number) => passage.tokens[passage.clauseRange[k]![0]]!.sentence === sentence;
  for (const [k, v] of [...m].sort((a, b) => a[0] - b[0])) {
    const top = best === null ? -1 : m.get(best)!;
    if (best === null || v > top || (v === top && inSentence(k) && !inSentence(best))) best = k;
  }
  return best;
}

function argmax(m: Map<number, number>): number | null {
  let best: number | null = null;
  for (const [k, v] of [...m].sort((a, b) => a[0] - b[0])) if (best === null || v > m.get(best)!) best = k;
  return best;
}

function describe(q: Quantity): string {
  if (q.vague) return 'a count of several';
  return q.unit ? `${q.value} ${q.dim === 'time' ? 'seconds' : 'bytes'}` : String(q.value);
}

/**
 * How well the words around claim token `ci` recur around passage token `pi` (same sentence, five tokens either
 * side): a word on the same side at about the same distance counts 1, on the same side further away 0.5, on the
 * other side nothing. Words that are themselves comparisons or antonyms do not count.
 */
function contextScore(ci: number, claim: Text, pi: number, passage: Passage, matches: Map<number, number[]>): number {
  let score = 0;
  const sentence = passage.tokens[pi]?.sentence;
  for (let k = Math.max(0, ci - 5); k <= ci + 5 && k < claim.tokens.length; k++) {
    const tok = claim.tokens[k]!;
    if (k === ci || !tok.content || (tok.info && (tok.info.antonyms.length > 0 || tok.info.comparativeOf))) continue;
    let best = 0;
    for (const j of matches.get(k) ?? []) {
      if (passage.tokens[j]!.sentence !== sentence || Math.abs(j - pi) > 6 || j - pi === 0) continue;
      if (k - ci > 0 !== j - pi > 0) continue;
      best = Math.max(best, Math.abs(j - pi - (k - ci)) <= 2 ? 1 : 0.5);
    }
    score += best;
  }
  return score;
}

function judgeQuantity(
  q: Quantity,
  claim: Text,
  passage: Passage,
  matches: Map<number, number[]>,
): 'same' | 'stronger' | 'conflict' | 'unstated' {
  const sameDim = passage.quantities.filter((p) => p.dim === q.dim);
  if (sameDim.length === 0) return 'unstated';
  let bestSame: { q: Quantity; score: number } | null = null;
  let bestOther = -1;
  for (const p of sameDim) {
    const score = contextScore(q.start, claim, p.start, passage, matches);
    if (sameAmount(q, p)) {
      if (!bestSame || score > bestSame.score) bestSame = { q: p, score };
    } else bestOther = Math.max(bestOther, score);
  }
  if (bestSame && bestSame.score >= bestOther) {
    const conflict = boundConflict(q.bound, bestSame.q.bound);
    return conflict === 'opposite' ? 'conflict' : conflict === 'stronger' ? 'stronger' : 'same';
  }
  return 'conflict';
}

interface PolarityItem {
  /** +1, or -1 for less/fewer/least (the graded word's sense reversed). */
  sign: number;
  /** The word graded or carrying the antonyms; null for an order word. */
  info: WordInfo | null;
  /** For order words: the words of the passage that state the same order. */
  order: string[] | null;
  index: number;
  word: string;
  /** A comparison (comparative, more/less, before/after): the passage must make it too. */
  comparison: boolean;
}

function polarityItems(t: Text): PolarityItem[] {
  const items: PolarityItem[] = [];
  t.tokens.forEach((tok, i) => {
    const prev = t.tokens[i - 1]?.w ?? '';
    const next = t.tokens[i + 1]?.w ?? '';
    if (tok.w in orderWords) {
      items.push({ sign: 1, info: null, order: orderWords[tok.w]!, index: i, word: tok.w, comparison: true });
      return;
    }
    if (tok.w === 'once' || tok.w === 'when' || tok.w === 'then') {
      items.push({ sign: 1, info: null, order: [tok.w], index: i, word: tok.w, comparison: false });
      return;
    }
    if (tok.w in gradeWords) {
      // "at least", "or more", "no more than 5": a bound on a number (rule 5), not a comparison.
      if (prev === 'at' || prev === 'or' || prev === 'no' || (next === 'than' && isNumberAt(t, i + 2))) return;
      const graded =
        t.tokens.slice(i + 1, i + 3).find((x) => x.content) ??
        t.tokens
          .slice(Math.max(0, i - 2), i)
          .reverse()
          .find((x) => x.content);
      if (!graded?.info) return;
      items.push({
        sign: gradeWords[tok.w]!,
        info: graded.info,
        order: null,
        index: i,
        word: `${tok.w} ${graded.w}`,
        comparison: true,
      });
      return;
    }
    if (!tok.info || prev in gradeWords) return;
    if (tok.info.comparativeOf || tok.info.antonyms.length > 0)
      items.push({
        sign: 1,
        info: tok.info,
        order: null,
        index: i,
        word: tok.w,
        comparison: tok.info.comparativeOf !== null,
      });
  });
  return items;
}

function isNumberAt(t: Text, i: number): boolean {
  return t.quantities.some((q) => q.start === i);
}

const meet = (a: readonly string[], b: ReadonlySet<string>) => a.some((x) => b.has(x));

/** Same direction, opposite, or unrelated. */
function relate(a: PolarityItem, b: PolarityItem): 'same' | 'opposite' | null {
  if (a.order || b.order) {
    if (!a.order || !b.order) return null;
    if (a.order.includes(b.word) || b.order.includes(a.word)) return 'same';
    const after = (w: string) => w === 'after' || w === 'once';
    return (a.word === 'before' && after(b.word)) || (b.word === 'before' && after(a.word)) ? 'opposite' : null;
  }
  // A comparison answers to a comparison: "fewer round trips" says nothing against the word "round" alone.
  if (a.comparison !== b.comparison) return null;
  const same = meet(a.info!.keys, b.info!.keySet);
  const anti = meet(a.info!.antonyms, b.info!.senses) || meet(b.info!.antonyms, a.info!.senses);
  if (!same && !anti) return null;
  const sameSign = a.sign === b.sign;
  return same === sameSign ? 'same' : 'opposite';
}

/**
 * Pivots: verbs matched between the claim clause and the passage clause, and the words of order (than, before, after,
 * then; to after from). Around each, the claim's subject (the nearest name or noun before it) and object (the
 * nearest after it) must not sit on the other side of the passage's pivot.
 */
function rolesSwapped(
  claim: Text,
  c: number,
  passage: Passage,
  pc: number,
  matches: Map<number, number[]>,
  unanchored: string[],
): string | null {
  const cIdx = clauseIndices(claim, c);
  const pIdx = clauseIndices(passage, pc);
  const pivots: { ci: number; pi: number }[] = [];
  for (const ci of cIdx) {
    const tok = claim.tokens[ci]!;
    if (tok.content && isVerbal(claim, ci) && claim.tokens[ci - 1]?.w !== 'to') {
      const pi = (matches.get(ci) ?? []).find(
        (j) => passage.tokens[j]!.clause === pc && isVerbal(passage, j) && passage.tokens[j - 1]?.w !== 'to',
      );
      if (pi !== undefined) pivots.push({ ci, pi });
    } else if (['than', 'before', 'after', 'then'].includes(tok.w)) {
      const pi = pIdx.find((j) => passage.tokens[j]!.w === tok.w);
      if (pi !== undefined) pivots.push({ ci, pi });
    } else if (tok.w === 'to' && cIdx.some((k) => k < ci && claim.tokens[k]!.w === 'from')) {
      const pi = pIdx.find(
        (j) => passage.tokens[j]!.w === 'to' && pIdx.some((k) => k < j && passage.tokens[k]!.w === 'from'),
      );
      if (pi !== undefined) pivots.push({ ci, pi });
    }
  }
  for (const { ci, pi } of pivots) {
    const cPassive = passive(claim, ci);
    const pPassive = passive(passage, pi);
    const grammar = !claim.tokens[ci]!.content;
    const entities = cIdx.filter(
      (k) => k !== ci && (grammar ? isEntity(claim.tokens[k]!) && !isVerbal(claim, k) : isArgument(claim, k)),
    );
    const subject = [...entities].reverse().find((k) => k < ci);
    const object = entities.find((k) => k > ci);
    for (const k of [subject, object]) {
      if (k === undefined) continue;
      const claimLeft = k < ci !== cPassive;
      // A pronoun in the passage's slot on that side ("removes them") leaves the passage's term unknown.
      if (pronounSlot(passage, pi, claimLeft !== pPassive ? -1 : 1)) continue;
      const inClause = (matches.get(k) ?? []).filter((j) => passage.tokens[j]!.clause === pc && j !== pi);
      if (inClause.length === 0) {
        // The passage states this relation of something else (or of a term only matched elsewhere).
        if ((matches.get(k) ?? []).length > 0) unanchored.push(claim.tokens[k]!.w);
        continue;
      }
      const sides = new Set(inClause.map((j) => j < pi !== pPassive));
      if (sides.size === 1 && sides.has(!claimLeft)) return claim.tokens[k]!.w;
    }
    // After a verb, two terms joined by a preposition keep their order ("stores objects in buckets").
    if (!grammar) {
      const after = cIdx.filter((k) => k > ci && isEntity(claim.tokens[k]!) && !isVerbal(claim, k));
      const [a, b] = after;
      if (a !== undefined && b !== undefined && claim.tokens.slice(a + 1, b).some((x) => prepositions.has(x.w))) {
        const only = (k: number) => {
          const m = (matches.get(k) ?? []).filter((j) => passage.tokens[j]!.clause === pc && j > pi);
          return m.length === 1 ? m[0]! : undefined;
        };
        const ja = only(a);
        const jb = only(b);
        if (ja !== undefined && jb !== undefined && ja > jb) return claim.tokens[a]!.w;
      }
    }
  }
  return null;
}

/**
 * A claim noun whose passage occurrences in the clause it is read against all carry another noun or name before
 * them ("B-tree index"), while the claim's own modifier ("hash index") is a passage word elsewhere: the claim says
 * of one thing what the passage says of another.
 */
function modifierMoved(
  claim: Text,
  c: number,
  passage: Passage,
  pc: number,
  matches: Map<number, number[]>,
): string | null {
  for (let k = 1; k < claim.tokens.length; k++) {
    const head = claim.tokens[k]!;
    const mod = claim.tokens[k - 1]!;
    if (head.clause !== c || !head.content || !mod.content) continue;
    if (!nounish(mod)) continue;
    const modMatches = matches.get(k - 1) ?? [];
    if (modMatches.length === 0) continue;
    const heads = (matches.get(k) ?? []).filter((j) => passage.tokens[j]!.clause === pc);
    if (heads.length === 0) continue;
    const other = heads.every((j) => {
      const before = passage.tokens[j - 1];
      return before?.content === true && !modMatches.includes(j - 1) && nounish(before);
    });
    if (other && !modMatches.some((j) => passage.tokens[j]!.clause === pc)) return `${mod.w} ${head.w}`;
  }
  return null;
}

/**
 * "is blocked by", "gets vacuumed", "messages not acknowledged before": a past participle after a form of be or get
 * (in its clause, a few words back), or right after a noun with no object following; its subject is acted on.
 */
function passive(t: Text, i: number): boolean {
  if (!/(ed|en|wn|ne)$/.test(t.tokens[i]!.w)) return false;
  const clause = t.tokens[i]!.clause;
  for (let k = i - 1; k >= Math.max(0, i - 5) && t.tokens[k]!.clause === clause; k--) {
    if (beForms.has(t.tokens[k]!.w) || getForms.has(t.tokens[k]!.w)) return true;
    if (t.tokens[k]!.content && t.tokens[k]!.info?.verb && isVerbal(t, k)) break;
  }
  const p = t.tokens[i - 1]?.w === 'not' ? i - 2 : i - 1;
  const prev = t.tokens[p];
  const next = t.tokens[i + 1];
  const reduced = prev?.content === true && isEntity(prev) && !isVerbal(t, p);
  return reduced && (next === undefined || !(next.content || determiners.has(next.w)));
}

/** Is the nearest word on that side of the pivot (before: -1, after: +1), up to a content word, a pronoun? */
function pronounSlot(t: Text, pi: number, direction: -1 | 1): boolean {
  for (let k = pi + direction; k >= 0 && k < t.tokens.length; k += direction) {
    const tok = t.tokens[k]!;
    if (tok.content || tok.quantity) return false;
    if (subjectPronouns.has(tok.w)) return true;
    if (tok.clause !== t.tokens[pi]!.clause) return false;
  }
  return false;
}
