// The fonts of the PDF renderer and which of them draws each character. Noto Sans, Noto Serif and Noto Sans Mono
// draw Latin, Greek and Cyrillic; Noto Sans JP draws Japanese (kana and the kanji of JIS X 0208/0213, many of which
// Chinese shares) and fills the symbols the others lack. They come from the project's npm dependencies
// (@expo-google-fonts/*, SIL Open Font License), never from the machine, and pdfkit embeds only the glyphs a PDF
// uses. A character is drawn by the first face of its style's chain that has it; otherwise it is written as its
// code point, `<U+05D0>`, and page 1 names it: text written right to left or that needs shaping (pdfkit lays out
// neither), and characters none of the faces has. See docs/purchases.md, "Delivery".
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as fontkit from 'fontkit';

const require = createRequire(import.meta.url);

const faceFiles = {
  'NotoSans-Regular': '@expo-google-fonts/noto-sans/400Regular/NotoSans_400Regular.ttf',
  'NotoSans-Bold': '@expo-google-fonts/noto-sans/700Bold/NotoSans_700Bold.ttf',
  'NotoSans-Italic': '@expo-google-fonts/noto-sans/400Regular_Italic/NotoSans_400Regular_Italic.ttf',
  'NotoSans-BoldItalic': '@expo-google-fonts/noto-sans/700Bold_Italic/NotoSans_700Bold_Italic.ttf',
  'NotoSerif-Regular': '@expo-google-fonts/noto-serif/400Regular/NotoSerif_400Regular.ttf',
  'NotoSerif-Bold': '@expo-google-fonts/noto-serif/700Bold/NotoSerif_700Bold.ttf',
  'NotoSerif-Italic': '@expo-google-fonts/noto-serif/400Regular_Italic/NotoSerif_400Regular_Italic.ttf',
  'NotoSerif-BoldItalic': '@expo-google-fonts/noto-serif/700Bold_Italic/NotoSerif_700Bold_Italic.ttf',
  'NotoSansMono-Regular': '@expo-google-fonts/noto-sans-mono/400Regular/NotoSansMono_400Regular.ttf',
  'NotoSansMono-Bold': '@expo-google-fonts/noto-sans-mono/700Bold/NotoSansMono_700Bold.ttf',
  'NotoSansJP-Regular': '@expo-google-fonts/noto-sans-jp/400Regular/NotoSansJP_400Regular.ttf',
  'NotoSansJP-Bold': '@expo-google-fonts/noto-sans-jp/700Bold/NotoSansJP_700Bold.ttf',
} as const;

export type FaceName = keyof typeof faceFiles;

const italicFaces = new Set<FaceName>([
  'NotoSans-Italic',
  'NotoSans-BoldItalic',
  'NotoSerif-Italic',
  'NotoSerif-BoldItalic',
]);

/**
 * Vertical metrics (per 1000 of the size) every face is laid out with: those Noto's Latin, Greek and Cyrillic faces
 * share. Noto Sans JP's own (1160 and -288) would make a line holding one kanji taller than its neighbours, and its
 * glyphs sit inside these.
 */
export const faceAscender = 1069;
export const faceDescender = -293;

/** Advance of every glyph of Noto Sans Mono, per 1000 of the size: the column width of code. */
export const monoAdvance = 600;

const opened = new Map<FaceName, fontkit.Font>();

/**
 * Shaped words remembered across documents, all faces together, least recently used first out: about 1.2 KB each
 * (glyph positions), so about 24 MiB at most. A 200-claim artifact shapes about 2,600.
 */
const shapedWordsMax = 20_000;
const shapedWords = new Map<string, unknown>();

/**
 * The face, opened once per process and shared by every document (pdfkit only reads it; each document keeps its own
 * subset). A face is read from disk the first time a text needs it: Noto Sans JP (5.5 MB) only for Japanese.
 */
export function face(name: FaceName): fontkit.Font {
  let font = opened.get(name);
  if (font) return font;
  const file = require.resolve(faceFiles[name]);
  const base = fontkit.create(readFileSync(file));
  if (base.postscriptName !== name) throw new Error(`${file} is ${base.postscriptName}, not ${name}`);
  // pdfkit scales positions by 1000 / unitsPerEm in place, in the runs that `layout` below shares between documents.
  if (base.unitsPerEm !== 1000) throw new Error(`${file} has ${base.unitsPerEm} units per em, not 1000`);
  // An object over the face with the shared vertical metrics (pdfkit reads them from the font it is given) and
  // its shaped words remembered across documents: shaping (ligatures, kerning) is most of a render's time, and
  // pdfkit's own cache lasts one document.
  font = Object.create(base, {
    ascent: { value: (faceAscender * base.unitsPerEm) / 1000 },
    descent: { value: (faceDescender * base.unitsPerEm) / 1000 },
    lineGap: { value: 0 },
    layout: {
      value(text: string, features?: unknown) {
        if (features !== undefined) return base.layout.call(this, text, features);
        const key = `${name}\u0000${text}`;
        let run = shapedWords.get(key);
        if (run === undefined) {
          run = base.layout.call(this, text);
          if (shapedWords.size >= shapedWordsMax) shapedWords.delete(shapedWords.keys().next().value!);
        } else shapedWords.delete(key);
        shapedWords.set(key, run);
        return run;
      },
    },
  }) as fontkit.Font;
  opened.set(name, font);
  return font;
}

// ---------------------------------------------------------------------------------------------------------------
// Styles and their chains of faces.
// ---------------------------------------------------------------------------------------------------------------

export type FontStyle =
  | 'sans'
  | 'sansBold'
  | 'sansItalic'
  | 'sansBoldItalic'
  | 'serif'
  | 'serifBold'
  | 'serifItalic'
  | 'serifBoldItalic'
  | 'mono'
  | 'monoBold';

/** The faces that decide what is drawn at all: every chain holds one weight of each, so all agree on it. */
const coverage: readonly FaceName[] = [
  'NotoSans-Regular',
  'NotoSansMono-Regular',
  'NotoSansJP-Regular',
  'NotoSerif-Regular',
];

/** Each style's own face first, then the other families of the same weight (their symbols, then Japanese). */
const chains: Record<FontStyle, readonly FaceName[]> = {
  sans: ['NotoSans-Regular', 'NotoSansMono-Regular', 'NotoSansJP-Regular', 'NotoSerif-Regular'],
  sansBold: ['NotoSans-Bold', 'NotoSansMono-Bold', 'NotoSansJP-Bold', 'NotoSerif-Bold'],
  sansItalic: ['NotoSans-Italic', 'NotoSansMono-Regular', 'NotoSansJP-Regular', 'NotoSerif-Italic'],
  sansBoldItalic: ['NotoSans-BoldItalic', 'NotoSansMono-Bold', 'NotoSansJP-Bold', 'NotoSerif-BoldItalic'],
  serif: ['NotoSerif-Regular', 'NotoSans-Regular', 'NotoSansMono-Regular', 'NotoSansJP-Regular'],
  serifBold: ['NotoSerif-Bold', 'NotoSans-Bold', 'NotoSansMono-Bold', 'NotoSansJP-Bold'],
  serifItalic: ['NotoSerif-Italic', 'NotoSans-Italic', 'NotoSansMono-Regular', 'NotoSansJP-Regular'],
  serifBoldItalic: ['NotoSerif-BoldItalic', 'NotoSans-BoldItalic', 'NotoSansMono-Bold', 'NotoSansJP-Bold'],
  mono: ['NotoSansMono-Regular', 'NotoSans-Regular', 'NotoSansJP-Regular', 'NotoSerif-Regular'],
  monoBold: ['NotoSansMono-Bold', 'NotoSans-Bold', 'NotoSansJP-Bold', 'NotoSerif-Bold'],
};

const italicStyles = new Set<FontStyle>(['sansItalic', 'sansBoldItalic', 'serifItalic', 'serifBoldItalic']);

/** The face a style draws its ASCII, spaces and code points in. */
export const primaryFace = (style: FontStyle): FaceName => chains[style][0]!;

// ---------------------------------------------------------------------------------------------------------------
// Characters.
// ---------------------------------------------------------------------------------------------------------------

/**
 * Invisible format characters, left out: soft hyphen, zero-width space and joiners, direction marks, embeddings and
 * isolates, word joiner and invisible operators, BOM, variation selectors.
 */
function invisible(cp: number): boolean {
  return (
    cp === 0xad ||
    (cp >= 0x200b && cp <= 0x200f) ||
    (cp >= 0x202a && cp <= 0x202e) ||
    (cp >= 0x2060 && cp <= 0x2064) ||
    (cp >= 0x2066 && cp <= 0x2069) ||
    cp === 0xfeff ||
    (cp >= 0xfe00 && cp <= 0xfe0f) ||
    (cp >= 0xe0100 && cp <= 0xe01ef)
  );
}

/** Scripts written right to left: pdfkit has no bidirectional layout, so their letters would come out reversed. */
const rightToLeftScripts: [string, RegExp][] = [
  ['Hebrew', /\p{Script=Hebrew}/u],
  ['Arabic', /\p{Script=Arabic}/u],
  ['Syriac', /\p{Script=Syriac}/u],
  ['Thaana', /\p{Script=Thaana}/u],
  ['NKo', /\p{Script=Nko}/u],
  ['Samaritan', /\p{Script=Samaritan}/u],
  ['Mandaic', /\p{Script=Mandaic}/u],
  ['Adlam', /\p{Script=Adlam}/u],
  ['Hanifi Rohingya', /\p{Script=Hanifi_Rohingya}/u],
];

/** Scripts whose letters combine, reorder or change form with their neighbours: none of these faces shapes them. */
const shapedScripts: [string, RegExp][] = [
  ['Devanagari', /\p{Script=Devanagari}/u],
  ['Bengali', /\p{Script=Bengali}/u],
  ['Gurmukhi', /\p{Script=Gurmukhi}/u],
  ['Gujarati', /\p{Script=Gujarati}/u],
  ['Oriya', /\p{Script=Oriya}/u],
  ['Tamil', /\p{Script=Tamil}/u],
  ['Telugu', /\p{Script=Telugu}/u],
  ['Kannada', /\p{Script=Kannada}/u],
  ['Malayalam', /\p{Script=Malayalam}/u],
  ['Sinhala', /\p{Script=Sinhala}/u],
  ['Thai', /\p{Script=Thai}/u],
  ['Lao', /\p{Script=Lao}/u],
  ['Tibetan', /\p{Script=Tibetan}/u],
  ['Myanmar', /\p{Script=Myanmar}/u],
  ['Khmer', /\p{Script=Khmer}/u],
  ['Mongolian', /\p{Script=Mongolian}/u],
];

const rightToLeftAny = new RegExp(rightToLeftScripts.map(([, re]) => re.source).join('|'), 'u');
const shapedAny = new RegExp(shapedScripts.map(([, re]) => re.source).join('|'), 'u');
/** Control characters, unpaired surrogates, private use and unassigned code points: never a glyph of their own. */
const noGlyphCategory = /[\p{Cc}\p{Cs}\p{Co}\p{Cn}]/u;

export type UndrawnReason = 'rightToLeft' | 'shaping' | 'noGlyph';

type Disposition = { kind: 'leftOut' } | { kind: 'drawn' } | { kind: 'codePoint'; reason: UndrawnReason };

const leftOut: Disposition = { kind: 'leftOut' };
const drawn: Disposition = { kind: 'drawn' };
const codePointFor = {
  rightToLeft: { kind: 'codePoint', reason: 'rightToLeft' },
  shaping: { kind: 'codePoint', reason: 'shaping' },
  noGlyph: { kind: 'codePoint', reason: 'noGlyph' },
} as const satisfies Record<UndrawnReason, Disposition>;

/** Past this many distinct code points, dispositions and faces are looked up again rather than remembered. */
const rememberedCodePointsMax = 65_536;
const dispositions = new Map<number, Disposition>();

/** What becomes of one code point (not a line feed or tab, which the layout handles). */
function disposition(cp: number): Disposition {
  if (cp >= 0x20 && cp <= 0x7e) return drawn;
  const known = dispositions.get(cp);
  if (known) return known;
  const ch = String.fromCodePoint(cp);
  const d: Disposition = invisible(cp)
    ? leftOut
    : rightToLeftAny.test(ch)
      ? codePointFor.rightToLeft
      : shapedAny.test(ch)
        ? codePointFor.shaping
        : noGlyphCategory.test(ch) || !coverage.some((f) => face(f).hasGlyphForCodePoint(cp))
          ? codePointFor.noGlyph
          : drawn;
  if (dispositions.size < rememberedCodePointsMax) dispositions.set(cp, d);
  return d;
}

const faceIndexes = new Map<FontStyle, Map<number, number>>();

/** The first face of the style's chain that has a drawn character (the regular faces when its own weight lacks it). */
function faceFor(style: FontStyle, cp: number): FaceName {
  const chain = chains[style];
  const known = faceIndexes.get(style) ?? new Map<number, number>();
  faceIndexes.set(style, known);
  const index = known.get(cp);
  if (index !== undefined) return index < chain.length ? chain[index]! : coverage[index - chain.length]!;
  let found = chain.findIndex((f) => face(f).hasGlyphForCodePoint(cp));
  if (found < 0) found = chain.length + coverage.findIndex((f) => face(f).hasGlyphForCodePoint(cp));
  if (known.size < rememberedCodePointsMax) known.set(cp, found);
  return found < chain.length ? chain[found]! : coverage[found - chain.length]!;
}

/** How a code point not drawn is written. */
export const codePointText = (cp: number) => `<U+${cp.toString(16).toUpperCase().padStart(4, '0')}>`;

/** Text of one face: drawn as is, or a code point written in the style's primary face (`codePoint`). */
export interface Segment {
  text: string;
  face: FaceName;
  codePoint: boolean;
  /** Slanted by the layout: an italic style drawn in a face that has no italic (Japanese, symbols). */
  oblique: boolean;
}

const plainAscii = /^[\n\x20-\x7e]*$/;

/**
 * `text` (NFC, tabs as spaces) cut into segments of one face each, in order. Spaces and line feeds stay in the
 * segment they follow, so a line of one script is one segment.
 */
export function segments(text: string, style: FontStyle): Segment[] {
  const primary = primaryFace(style);
  if (plainAscii.test(text)) return text === '' ? [] : [{ text, face: primary, codePoint: false, oblique: false }];
  const italic = italicStyles.has(style);
  const out: Segment[] = [];
  for (const ch of text.normalize('NFC')) {
    const cp = ch.codePointAt(0)!;
    const last = out.at(-1);
    if (cp === 0x0a || cp === 0x20 || cp === 0x09) {
      const space = cp === 0x09 ? ' ' : ch;
      if (last && !last.codePoint) last.text += space;
      else out.push({ text: space, face: primary, codePoint: false, oblique: false });
      continue;
    }
    const d = disposition(cp);
    if (d.kind === 'leftOut') continue;
    const codePoint = d.kind === 'codePoint';
    const f = codePoint || cp <= 0x7e ? primary : faceFor(style, cp);
    const oblique = italic && !codePoint && !italicFaces.has(f);
    const s = codePoint ? codePointText(cp) : ch;
    if (last && last.face === f && last.codePoint === codePoint && last.oblique === oblique) last.text += s;
    else out.push({ text: s, face: f, codePoint, oblique });
  }
  return out;
}

/** `text` as the PDF shows it: what `segments` draws, joined (for comparing with what a PDF viewer extracts). */
export function asDrawn(text: string, style: FontStyle = 'sans'): string {
  return segments(text, style)
    .map((s) => s.text)
    .join('');
}

// ---------------------------------------------------------------------------------------------------------------
// What page 1 says about characters not drawn.
// ---------------------------------------------------------------------------------------------------------------

export interface UndrawnGroup {
  reason: UndrawnReason;
  /** How many characters of the text, counting repeats. */
  count: number;
  /** The scripts they belong to (empty for `noGlyph`), in the order of the lists above. */
  scripts: string[];
  /** The distinct code points, ascending. */
  codePoints: number[];
}

/** The characters of `texts` written as their code point, by reason (in the order: right to left, shaping, glyph). */
export function undrawnCharacters(...texts: string[]): UndrawnGroup[] {
  const groups = new Map<UndrawnReason, { count: number; codePoints: Set<number> }>();
  for (const text of texts) {
    if (plainAscii.test(text)) continue;
    for (const ch of text.normalize('NFC')) {
      const cp = ch.codePointAt(0)!;
      if (cp === 0x0a || cp === 0x09) continue;
      const d = disposition(cp);
      if (d.kind !== 'codePoint') continue;
      const g = groups.get(d.reason) ?? { count: 0, codePoints: new Set<number>() };
      groups.set(d.reason, g);
      g.count++;
      g.codePoints.add(cp);
    }
  }
  const order: UndrawnReason[] = ['rightToLeft', 'shaping', 'noGlyph'];
  return order.flatMap((reason) => {
    const g = groups.get(reason);
    if (!g) return [];
    const codePoints = [...g.codePoints].sort((a, b) => a - b);
    const named = reason === 'rightToLeft' ? rightToLeftScripts : reason === 'shaping' ? shapedScripts : [];
    const scripts = named
      .filter(([, re]) => codePoints.some((cp) => re.test(String.fromCodePoint(cp))))
      .map(([n]) => n);
    return [{ reason, count: g.count, scripts, codePoints }];
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Width classes.
// ---------------------------------------------------------------------------------------------------------------

/** East Asian wide and fullwidth characters (Unicode's EastAsianWidth W and F): two columns of code. */
export function isWide(cp: number): boolean {
  return (
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2e80 && cp <= 0x303e) ||
    (cp >= 0x3041 && cp <= 0x33ff) ||
    (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x4e00 && cp <= 0x9fff) ||
    (cp >= 0xa000 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x20000 && cp <= 0x3fffd)
  );
}

/**
 * Characters after which a line may break though no space follows (ideographs, kana, fullwidth forms): a run of
 * them is no overlong word. The class of `isWide`, as a regular expression source.
 */
export const breakableSource =
  '\\u1100-\\u115f\\u2e80-\\u303e\\u3041-\\u33ff\\u3400-\\u4dbf\\u4e00-\\u9fff\\ua000-\\ua4cf\\uac00-\\ud7a3' +
  '\\uf900-\\ufaff\\ufe30-\\ufe4f\\uff00-\\uff60\\uffe0-\\uffe6';
