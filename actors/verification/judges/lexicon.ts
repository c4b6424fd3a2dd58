// What the 2.0.0 judge knows about one word, all of it from WordNet: its lemmas, the concepts it can name (its
// most frequent senses, their derivationally related forms, the heads of adjective satellites, the adjectives
// adverbs pertain to), the more general concepts a claim may use in its place (hypernyms), and its antonym pairs.
// Computed once per word and cached, up to a limit.
import { allPos, lemmas, type Pos, synset, synsetOffsets } from './wordnet.ts';

export interface WordInfo {
  /** Lemma keys (`l:<lemma>`) and synset ids: two words match when their keys meet. */
  keys: string[];
  keySet: ReadonlySet<string>;
  /** Synset ids of the word's hypernyms: a claim may name the more general concept. */
  broader: string[];
  /** Synset ids of every sense of the word's lemmas (antonyms are looked up among all of them). */
  senses: ReadonlySet<string>;
  /** Synset ids of the word's antonyms (direct, or those of the head an adjective satellite is similar to). */
  antonyms: string[];
  /** Adjective or adverb base of a comparative or superlative (faster -> fast), or null. */
  comparativeOf: string | null;
  noun: boolean;
  verb: boolean;
  adjective: boolean;
  /** Known to WordNet in some part of speech. */
  known: boolean;
}

/** Senses of a lemma considered per part of speech: the most frequent ones (WordNet orders senses by frequency). */
const sensesPerLemma = 3;
/** 3.0.0: verbs are read in more of their senses (a paraphrase's verb is often a less frequent sense). */
const sensesPerLemma3: Record<Pos, number> = { n: 3, v: 8, a: 3, r: 3 };
const cacheMax = 50_000;
const caches = { regular: new Map<string, WordInfo>(), irregular: new Map<string, WordInfo>() };

/**
 * What WordNet says of `word`. With `irregular` (the 3.0.0 rules), irregular forms are reduced through WordNet's
 * exception lists too (held: hold); without (2.0.0, which must judge as it always did), they are not.
 */
export function wordInfo(word: string, irregular = false): WordInfo {
  const cache = irregular ? caches.irregular : caches.regular;
  const cached = cache.get(word);
  if (cached) return cached;
  const info = compute(word, irregular);
  if (cache.size >= cacheMax) cache.clear();
  cache.set(word, info);
  return info;
}

function compute(word: string, irregular: boolean): WordInfo {
  const lookup = word.replace(/-/g, '_');
  const keys = new Set<string>([`l:${word}`]);
  const broader = new Set<string>();
  const antonyms = new Set<string>();
  const senses = new Set<string>();
  const byPos = {} as Record<Pos, string[]>;
  for (const pos of allPos) byPos[pos] = lemmas(lookup, pos, irregular);
  let comparativeOf: string | null = null;
  for (const pos of ['a', 'r'] as const) {
    const base = byPos[pos].find((l) => l !== lookup);
    if (base && (word.endsWith('er') || word.endsWith('est')) && antonymsOf(base, pos).length > 0) {
      const nounSenses = synsetOffsets(lookup, 'n').length;
      if (nounSenses <= 1) comparativeOf = base;
    }
  }
  for (const pos of allPos) {
    for (const lemma of byPos[pos]) {
      keys.add(`l:${lemma}`);
      for (const o of synsetOffsets(lemma, pos)) senses.add(`${pos}:${o}`);
      const offsets = synsetOffsets(lemma, pos).slice(0, irregular ? sensesPerLemma3[pos] : sensesPerLemma);
      for (const offset of offsets) {
        const s = synset(pos, offset);
        keys.add(s.id);
        const wordNumber = s.words.indexOf(lemma) + 1;
        for (const p of s.pointers) {
          const own = p.source === 0 || p.source === wordNumber;
          if (p.symbol === '+' && own) keys.add(`${p.pos}:${p.offset}`);
          else if (irregular && p.symbol === '$') keys.add(`${p.pos}:${p.offset}`);
          else if (p.symbol === '&' && s.satellite) keys.add(`${p.pos}:${p.offset}`);
          else if (p.symbol === '\\' && own) {
            keys.add(`${p.pos}:${p.offset}`);
            // The adjective an adverb pertains to lends its senses, for antonyms (automatically: automatic).
            const adjective = synset(p.pos, p.offset).words[Math.max(0, p.target - 1)];
            if (adjective) for (const o of synsetOffsets(adjective, p.pos)) senses.add(`${p.pos}:${o}`);
          } else if (p.symbol === '@' || p.symbol === '@i') broader.add(`${p.pos}:${p.offset}`);
        }
      }
      for (const a of antonymsOf(lemma, pos)) antonyms.add(a);
    }
  }
  return {
    keys: [...keys],
    keySet: keys,
    broader: [...broader],
    senses,
    antonyms: [...antonyms],
    comparativeOf,
    noun: byPos.n.length > 0,
    verb: byPos.v.length > 0,
    adjective: byPos.a.length > 0,
    known: allPos.some((p) => byPos[p].length > 0),
  };
}

/**
 * Direct antonyms of the lemma's first senses; for an adjective satellite, those of the head it is similar to; for an
 * adverb, those of the adjective it pertains to.
 */
function antonymsOf(lemma: string, pos: Pos): string[] {
  const out: string[] = [];
  for (const offset of synsetOffsets(lemma, pos).slice(0, sensesPerLemma)) {
    const s = synset(pos, offset);
    const wordNumber = s.words.indexOf(lemma) + 1;
    for (const p of s.pointers) {
      if (p.symbol === '!' && (p.source === 0 || p.source === wordNumber)) out.push(`${p.pos}:${p.offset}`);
      else if (p.symbol === '\\' && pos === 'r' && (p.source === 0 || p.source === wordNumber)) {
        // An adverb takes the antonyms of the adjective it pertains to (manually: automatic).
        const adj = synset(p.pos, p.offset);
        const target = adj.words[Math.max(0, p.target - 1)];
        if (target) out.push(...antonymsOf(target, 'a'));
      } else if (p.symbol === '&' && s.satellite) {
        for (const q of synset(p.pos, p.offset).pointers) if (q.symbol === '!') out.push(`${q.pos}:${q.offset}`);
      }
    }
  }
  return out;
}
