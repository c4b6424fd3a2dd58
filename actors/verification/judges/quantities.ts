// Quantities in text: numbers written as digits or words, percentages, and the units of time and size they carry,
// normalised so that equal amounts compare equal (two = 2, twenty percent = 0.2, 2 minutes = 120 seconds,
// 96 bits = 12 bytes, 1 KB = 1,000 or 1,024 bytes), with the bound a text puts on them (at least, at most, exactly).

export type Dimension = 'time' | 'size' | 'count' | 'factor';
export type Bound = 'eq' | 'ge' | 'le' | 'gt' | 'lt' | 'exact';

export interface Quantity {
  /** In seconds for time, bytes for size; a plain number otherwise (percentages as fractions). */
  value: number;
  dim: Dimension;
  bound: Bound;
  /** A vague count (several, many, multiple, any number of): more than one, no value. */
  vague: boolean;
  /** The canonical unit it was written with (second, minute, byte...), or null for a plain number. */
  unit: string | null;
  /** Token index where the quantity starts and ends (inclusive). */
  start: number;
  end: number;
}

/** A unit named without a number ("the number of seconds", "a few hours"). */
export interface BareUnit {
  unit: string;
  dim: Dimension;
  index: number;
}

const small: Record<string, number> = {
  zero: 0,
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  thirteen: 13,
  fourteen: 14,
  fifteen: 15,
  sixteen: 16,
  seventeen: 17,
  eighteen: 18,
  nineteen: 19,
  twenty: 20,
  thirty: 30,
  forty: 40,
  fifty: 50,
  sixty: 60,
  seventy: 70,
  eighty: 80,
  ninety: 90,
};
const scales: Record<string, number> = { hundred: 100, thousand: 1_000, million: 1_000_000, billion: 1_000_000_000 };

/** Units: name -> [dimension, size in seconds or bytes, canonical name]. */
const units: Record<string, [Dimension, number, string]> = {};
function unit(dim: Dimension, size: number, canonical: string, ...names: string[]) {
  for (const n of names) units[n] = [dim, size, canonical];
}
unit('time', 1e-9, 'nanosecond', 'ns', 'nanosecond', 'nanoseconds');
unit('time', 1e-6, 'microsecond', 'µs', 'us', 'microsecond', 'microseconds');
unit('time', 1e-3, 'millisecond', 'ms', 'millisecond', 'milliseconds', 'msec');
unit('time', 1, 'second', 's', 'sec', 'secs', 'second', 'seconds');
unit('time', 60, 'minute', 'min', 'mins', 'minute', 'minutes');
unit('time', 3600, 'hour', 'h', 'hr', 'hrs', 'hour', 'hours');
unit('time', 86_400, 'day', 'd', 'day', 'days');
unit('time', 604_800, 'week', 'week', 'weeks');
unit('size', 1 / 8, 'bit', 'bit', 'bits');
unit('size', 1, 'byte', 'byte', 'bytes');
unit('size', 1e3, 'kilobyte', 'kb', 'kilobyte', 'kilobytes');
unit('size', 1024, 'kilobyte', 'kib', 'kibibyte', 'kibibytes');
unit('size', 1e6, 'megabyte', 'mb', 'megabyte', 'megabytes');
unit('size', 1024 ** 2, 'megabyte', 'mib', 'mebibyte', 'mebibytes');
unit('size', 1e9, 'gigabyte', 'gb', 'gigabyte', 'gigabytes');
unit('size', 1024 ** 3, 'gigabyte', 'gib', 'gibibyte', 'gibibytes');
unit('size', 1e12, 'terabyte', 'tb', 'terabyte', 'terabytes');
unit('size', 1024 ** 4, 'terabyte', 'tib', 'tebibyte', 'tebibytes');
unit('size', 1e15, 'petabyte', 'pb', 'petabyte', 'petabytes');

/** Units written without a number may only be the spelled-out ones (`s` or `b` alone is not a unit). */
const bareUnitMin = 3;

/** Multiplying words: "doubles", "twice", "halves" are factors, compared with each other. */
const factors: Record<string, number> = {
  twice: 2,
  thrice: 3,
  double: 2,
  doubles: 2,
  doubled: 2,
  doubling: 2,
  triple: 3,
  triples: 3,
  tripled: 3,
  quadruple: 4,
  quadruples: 4,
  quadrupled: 4,
  halve: 0.5,
  halves: 0.5,
  halved: 0.5,
  halving: 0.5,
};

const vagueCounts = new Set(['several', 'many', 'multiple', 'numerous']);
const starters = new Set([
  ...Object.keys(small),
  ...Object.keys(units),
  ...Object.keys(factors),
  ...vagueCounts,
  'single',
  'once',
  'a',
  'an',
  'any',
]);
const pronounOne = new Set([
  'the',
  'this',
  'that',
  'which',
  'any',
  'each',
  'every',
  'no',
  'other',
  'another',
  'bad',
  'good',
  'new',
  'old',
  'last',
  'first',
  'same',
  'older',
  'newer',
  'damaged',
]);

/** "an hour of", "a second." are amounts; "a second connection" is an ordinal: the next word decides. */
const afterUnitArticle =
  /^$|^[.,;:!?)]$|^(of|per|and|or|to|before|after|later|ago|for|in|is|are|was|the|at|by|on|with|when|than|until)$/;

/** A cheap first test: could this word start a quantity or name a unit? */
function mayQuantify(w: string): boolean {
  const c = w.charCodeAt(0);
  return (c >= 48 && c <= 57) || starters.has(w) || w.includes('-');
}

function numeric(word: string): number | null {
  if (/^\d+(\.\d+)?$/.test(word)) return Number(word);
  if (word in small) return small[word]!;
  return null;
}

/** `3-way`, `96-bit`, `two-way`, `10ms`: a number glued to a word. */
function gluedNumber(word: string): { value: number; rest: string } | null {
  const m = /^(\d+(?:\.\d+)?|[a-z]+)-?([a-zµ]+)$/.exec(word);
  if (!m) return null;
  const value = numeric(m[1]!);
  if (value === null) return null;
  if (/^\d/.test(m[1]!) || word.includes('-')) return { value, rest: m[2]! };
  return null;
}

/**
 * The quantities of a text. `halves` (the 3.0.0 rules) also reads "half a minute", "an hour and a half" and the
 * three-word bounds "no more than", "no less than", "no fewer than"; 2.0.0 reads neither, as released.
 */
export function findQuantities(
  words: readonly string[],
  halves = false,
): { quantities: Quantity[]; bareUnits: BareUnit[] } {
  const quantities: Quantity[] = [];
  const bareUnits: BareUnit[] = [];
  const used = new Set<number>();
  for (let i = 0; i < words.length; i++) {
    if (used.has(i)) continue;
    const w = words[i]!;
    if (!mayQuantify(w)) continue;
    let value: number | null = null;
    let end = i;
    let unitName: string | null = null;
    let vague = false;
    const glued = gluedNumber(w);
    if (w in factors) {
      quantities.push({ value: factors[w]!, dim: 'factor', bound: 'eq', vague: false, unit: null, start: i, end: i });
      used.add(i);
      continue;
    }
    if (w.endsWith('%') && numeric(w.slice(0, -1)) !== null) {
      value = numeric(w.slice(0, -1))! / 100;
    } else if (glued && (glued.rest in units || !(w in small))) {
      value = glued.value;
      unitName = glued.rest in units ? glued.rest : null;
    } else if (numeric(w) !== null) {
      if (w === 'one' && (pronounOne.has(words[i - 1] ?? '') || words[i + 1] === 'another')) continue;
      value = numeric(w)!;
      // Compound number words: twenty five, two hundred, one thousand two hundred.
      while (end + 1 < words.length) {
        const next = words[end + 1]!;
        if (next in scales) {
          value *= scales[next]!;
          end++;
        } else if (next in small && !/^\d/.test(w) && value >= 20 && value % 10 === 0 && small[next]! < 10) {
          value += small[next]!;
          end++;
        } else break;
      }
    } else if (
      halves &&
      w === 'half' &&
      (words[i + 1] === 'a' || words[i + 1] === 'an') &&
      (words[i + 2] ?? '') in units &&
      words[i + 2]!.length >= bareUnitMin
    ) {
      value = 0.5;
      end = i + 1;
    } else if (w === 'single') {
      value = 1;
    } else if (w === 'once' && /^(per|a|an|every|each)$/.test(words[i + 1] ?? '')) {
      value = 1;
    } else if (
      (w === 'a' || w === 'an') &&
      (words[i + 1] ?? '') in units &&
      words[i + 1]!.length >= bareUnitMin &&
      afterUnitArticle.test(words[i + 2] ?? '')
    ) {
      value = 1;
    } else if (vagueCounts.has(w) || (w === 'any' && words[i + 1] === 'number' && words[i + 2] === 'of')) {
      vague = true;
      value = 0;
      if (w === 'any') end = i + 2;
    } else if (w in units && w.length >= bareUnitMin) {
      bareUnits.push({ unit: units[w]![2], dim: units[w]![0], index: i });
      continue;
    } else continue;
    // A percentage written as words, or a unit after the number.
    const next = words[end + 1] ?? '';
    if (!vague && unitName === null && (next === 'percent' || (next === 'per' && words[end + 2] === 'cent'))) {
      value /= 100;
      end += next === 'percent' ? 1 : 2;
    } else if (!vague && unitName === null && next in units) {
      unitName = next;
      end++;
    }
    // "an hour and a half": half of the unit more.
    if (halves && unitName !== null && words.slice(end + 1, end + 4).join(' ') === 'and a half') {
      value += 0.5;
      end += 3;
    }
    let dim: Dimension = 'count';
    let canonical: string | null = null;
    if (unitName !== null) {
      const [d, size, c] = units[unitName]!;
      dim = d;
      value *= size;
      canonical = c;
    }
    for (let k = i; k <= end; k++) used.add(k);
    quantities.push({ value, dim, bound: boundBefore(words, i, end, halves), vague, unit: canonical, start: i, end });
  }
  return { quantities, bareUnits };
}

function boundBefore(words: readonly string[], start: number, end: number, threeWords: boolean): Bound {
  const b1 = words[start - 1] ?? '';
  const b2 = `${words[start - 2] ?? ''} ${b1}`;
  const a2 = `${words[end + 1] ?? ''} ${words[end + 2] ?? ''}`;
  const b3 = `${words[start - 3] ?? ''} ${b2}`;
  if (threeWords && b3 === 'no more than') return 'le';
  if (threeWords && (b3 === 'no less than' || b3 === 'no fewer than')) return 'ge';
  if (b2 === 'at least' || b2 === 'no less' || a2 === 'or more' || b1 === 'minimum') return 'ge';
  if (b2 === 'at most' || b2 === 'up to' || b2 === 'no more' || a2 === 'or less' || a2 === 'or fewer') return 'le';
  if (b1 === 'maximum') return 'le';
  if (b2 === 'more than' || b1 === 'over' || b1 === 'above' || b1 === 'exceeds') return 'gt';
  if (b2 === 'less than' || b2 === 'fewer than' || b1 === 'below' || b1 === 'under') return 'lt';
  if (b1 === 'exactly' || b1 === 'only' || b1 === 'just') return 'exact';
  return 'eq';
}

export function sameAmount(a: Quantity, b: Quantity): boolean {
  if (a.dim !== b.dim || a.vague !== b.vague) return false;
  if (a.vague) return true;
  // Sizes tolerate the decimal and binary readings of kilo-, mega-, giga- and tera- (2.4% to 10%).
  const tolerance = a.dim === 'size' ? 0.1 : 1e-9;
  return Math.abs(a.value - b.value) <= tolerance * Math.max(Math.abs(a.value), Math.abs(b.value));
}

/** Does a claim's bound say more than, or the opposite of, the passage's bound on the same amount? */
export function boundConflict(claim: Bound, passage: Bound): 'none' | 'stronger' | 'opposite' {
  if (claim === passage || claim === 'eq') return 'none';
  const upper = (b: Bound) => b === 'le' || b === 'lt';
  const lower = (b: Bound) => b === 'ge' || b === 'gt';
  if ((upper(claim) && lower(passage)) || (lower(claim) && upper(passage))) return 'opposite';
  if (claim === 'exact' && passage !== 'eq') return 'stronger';
  if (passage === 'eq' || passage === 'exact') return 'none';
  return 'none';
}
