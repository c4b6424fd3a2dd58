// The PDF rendering of an edition: its Markdown, tokenised by marked's lexer (no HTML, no browser), laid out with
// pdfkit in fonts the project ships (actors/delivery/pdf-fonts.ts says which, and what becomes of characters none of
// them draws). Pure: the same input gives the same bytes, so a rendering can be cached under `pdfRendererVersion`
// and made again at will. See docs/purchases.md, "Delivery".
import assert from 'node:assert/strict';
import { Lexer, type Token, type Tokens } from 'marked';
import PDFDocument from 'pdfkit';
import { type ParsedArtifact, type ParsedClaim, type ParsedSource, parseArtifact } from '../verification/format.ts';
import {
  breakableSource,
  codePointText,
  type FaceName,
  type FontStyle,
  face,
  faceAscender,
  faceDescender,
  isWide,
  monoAdvance,
  primaryFace,
  segments,
  type UndrawnGroup,
  undrawnCharacters,
} from './pdf-fonts.ts';

import { type PdfInput, pdfMarkdownCharsMax, pdfRendererVersion } from './pdf-input.ts';

export { type PdfInput, pdfMarkdownCharsMax, pdfRendererVersion };

// ---------------------------------------------------------------------------------------------------------------
// Layout constants (points; A4 is 595.28 x 841.89).
// ---------------------------------------------------------------------------------------------------------------

const page = { size: 'A4', top: 60, bottom: 64, left: 64, right: 64 } as const;
const colour = {
  text: '#1a1a1a',
  muted: '#666666',
  faint: '#999999',
  rule: '#cccccc',
  accent: '#1f4e79',
  codeBackground: '#f2f2f2',
  headerBackground: '#f5f7fa',
  quoteBar: '#b4b4b4',
  marker: '#a0522d',
};
/** The styles of pdf-fonts.ts, by the names the layout uses. */
const font = {
  sans: 'sans',
  sansBold: 'sansBold',
  sansItalic: 'sansItalic',
  sansBoldItalic: 'sansBoldItalic',
  serif: 'serif',
  serifBold: 'serifBold',
  serifItalic: 'serifItalic',
  serifBoldItalic: 'serifBoldItalic',
  mono: 'mono',
  monoBold: 'monoBold',
} as const satisfies Record<string, FontStyle>;
const size = { body: 10.5, quote: 11, code: 8.5, small: 8.5, footer: 8, title: 20, claimId: 9 };
const headingSize = [0, 17, 14, 12, 10.5, 10, 10] as const;
const lineGap = 2.5;
const indentStep = 16;
/** Nesting deeper than this (lists, quotes) is drawn at this depth, so the text column never gets too narrow. */
const nestingDrawnMax = 6;
/** Tokens nested deeper than this are drawn as their source text instead of being walked. */
const nestingWalkedMax = 40;
const claimIdColumn = 48;
const tableColumnsMax = 8;

// ---------------------------------------------------------------------------------------------------------------
// Inline text: marked's inline tokens become runs of one style each, drawn with pdfkit's `continued` text.
// ---------------------------------------------------------------------------------------------------------------

interface Style {
  serif: boolean;
  bold: boolean;
  italic: boolean;
  mono: boolean;
  strike: boolean;
  size: number;
  colour: string;
  link: string | null;
}

interface Run {
  text: string;
  font: FontStyle;
  size: number;
  colour: string;
  strike: boolean;
  link: string | null;
  goTo: string | null;
}

function fontOf(s: Style): FontStyle {
  if (s.mono) return s.bold ? font.monoBold : font.mono;
  if (s.serif)
    return s.bold ? (s.italic ? font.serifBoldItalic : font.serifBold) : s.italic ? font.serifItalic : font.serif;
  return s.bold ? (s.italic ? font.sansBoldItalic : font.sansBold) : s.italic ? font.sansItalic : font.sans;
}

function run(text: string, s: Style, goTo: string | null = null): Run {
  return { text, font: fontOf(s), size: s.size, colour: s.colour, strike: s.strike, link: s.link, goTo };
}

const entities: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  copy: '\u00a9',
  reg: '\u00ae',
  trade: '\u2122',
  hellip: '\u2026',
  mdash: '\u2014',
  ndash: '\u2013',
  lsquo: '\u2018',
  rsquo: '\u2019',
  ldquo: '\u201c',
  rdquo: '\u201d',
  laquo: '\u00ab',
  raquo: '\u00bb',
  middot: '\u00b7',
  bull: '\u2022',
  deg: '\u00b0',
  times: '\u00d7',
  euro: '\u20ac',
  sect: '\u00a7',
  rarr: '\u2192',
  larr: '\u2190',
  ge: '\u2265',
  le: '\u2264',
  ne: '\u2260',
};

/** Character references as a Markdown renderer resolves them (numeric ones, and the common named ones). */
function decodeEntities(text: string): string {
  if (!text.includes('&')) return text;
  return text.replace(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z]{2,8});/g, (whole, ref: string) => {
    if (ref.startsWith('#')) {
      const cp =
        ref[1] === 'x' || ref[1] === 'X' ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);
      return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : '\ufffd';
    }
    return entities[ref] ?? whole;
  });
}

const absoluteLink = /^(https?:|mailto:)/i;

function inlineRuns(tokens: readonly Token[], s: Style, keepBreaks: boolean, out: Run[], depth = 0): Run[] {
  for (const t of tokens) {
    if (depth > nestingWalkedMax) {
      out.push(run(t.raw, s));
      continue;
    }
    switch (t.type) {
      case 'text': {
        const tt = t as Tokens.Text;
        if (tt.tokens && tt.tokens.length > 0) inlineRuns(tt.tokens, s, keepBreaks, out, depth + 1);
        else out.push(run(softBreaks(decodeEntities(tt.text), keepBreaks), s));
        break;
      }
      case 'escape':
        out.push(run((t as Tokens.Escape).text, s));
        break;
      case 'strong':
        inlineRuns((t as Tokens.Strong).tokens, { ...s, bold: true }, keepBreaks, out, depth + 1);
        break;
      case 'em':
        inlineRuns((t as Tokens.Em).tokens, { ...s, italic: true }, keepBreaks, out, depth + 1);
        break;
      case 'del':
        inlineRuns((t as Tokens.Del).tokens, { ...s, strike: true }, keepBreaks, out, depth + 1);
        break;
      case 'codespan':
        out.push(run(softBreaks((t as Tokens.Codespan).text, false), { ...s, mono: true, size: s.size - 1 }));
        break;
      case 'br':
        out.push(run('\n', s));
        break;
      case 'link': {
        const l = t as Tokens.Link;
        const href = absoluteLink.test(l.href) ? l.href : null;
        inlineRuns(l.tokens, { ...s, colour: colour.accent, link: href }, keepBreaks, out, depth + 1);
        // On paper a link's text alone loses where it points.
        if (href && !l.autolink && l.text !== l.href) out.push(run(` (${l.href})`, { ...s, colour: colour.muted }));
        break;
      }
      case 'image': {
        const im = t as Tokens.Image;
        out.push(run(`[image: ${im.text || im.href}]`, { ...s, italic: true, colour: colour.muted }));
        break;
      }
      case 'html': {
        const h = (t as Tokens.Tag).text;
        out.push(run(/^<br\s*\/?>$/i.test(h) ? '\n' : h, s));
        break;
      }
      case 'checkbox':
        out.push(run((t as Tokens.Checkbox).checked ? '[x] ' : '[ ] ', { ...s, mono: true }));
        break;
      default: {
        const g = t as Tokens.Generic;
        if (g.tokens && g.tokens.length > 0) inlineRuns(g.tokens, s, keepBreaks, out, depth + 1);
        else if (typeof g.text === 'string') out.push(run(softBreaks(g.text, keepBreaks), s));
        else out.push(run(g.raw, s));
      }
    }
  }
  return out;
}

/** A soft line break is a space in running text; source passages keep their lines, as they were quoted. */
function softBreaks(text: string, keep: boolean): string {
  return keep ? text : text.replace(/\s*\n\s*/g, ' ');
}

// ---------------------------------------------------------------------------------------------------------------
// Lexing, bounded. marked's inline pass is quadratic in the emphasis delimiters of one block (26,000 characters of
// `*a **b` take seconds), and its block pass recurses once per nested quote. A block with more delimiters than
// `emphasisDelimitersMax` is drawn as its source text, and a body marked cannot lex at all is drawn as one code
// block: slower or stranger input changes how text looks, never whether it is there.
// ---------------------------------------------------------------------------------------------------------------

const emphasisDelimitersMax = 128;

function plainText(src: string): Tokens.Text {
  return { type: 'text', raw: src, text: src, escaped: false };
}

function emphasisDelimiters(src: string): number {
  let n = 0;
  for (let i = 0; i < src.length; i++) {
    const c = src.charCodeAt(i);
    if (c === 0x2a || c === 0x5f || c === 0x7e) n++;
  }
  return n;
}

function lex(markdown: string): Token[] {
  try {
    const lexer = new Lexer({ gfm: true });
    const tokens = lexer.blockTokens(markdown, lexer.tokens);
    for (const queued of lexer.inlineQueue) {
      lexer.state.inRawBlock = false;
      if (emphasisDelimiters(queued.src) > emphasisDelimitersMax) queued.tokens.push(plainText(queued.src));
      else lexer.inlineTokens(queued.src, queued.tokens);
    }
    lexer.inlineQueue = [];
    return tokens;
  } catch {
    return [{ type: 'code', raw: markdown, text: markdown } satisfies Tokens.Code];
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The renderer.
// ---------------------------------------------------------------------------------------------------------------

type Section = 'none' | 'claims' | 'sources';

interface Block {
  x: number;
  width: number;
  depth: number;
  section: Section;
}

/** A vertical bar to draw at the end, once every page is known: a quote is marked by one beside its text. */
interface Bar {
  page: number;
  x: number;
  y0: number;
  y1: number;
}

/** The slant given to italic text a face without italics draws (Japanese, symbols), in degrees. */
const obliqueDegrees = 12;

/**
 * pdfkit's text entry point behind `text` and `heightOfString`: it lays out and wraps, and hands each line to
 * `lineCallback` (which `text` uses to draw it). Measuring calls it with a callback that only moves down.
 */
interface PdfKitTextInternals {
  _text(
    text: string,
    x: number | PDFKit.Mixins.TextOptions,
    y: number | undefined,
    options: PDFKit.Mixins.TextOptions | undefined,
    lineCallback: () => void,
  ): void;
}

interface Paint {
  align?: 'left' | 'right' | 'center';
  lineGap?: number;
  /** Baseline depth below the line's top, in points (by default, the deepest of the runs' own). */
  baseline?: number;
  goTo?: string | null;
}

/**
 * A word this long is wider than any line at any size used here (the narrowest glyph, Noto Sans' `i` at 7 pt, is
 * 1.8 pt wide; a line is at most 467 pt), so pdfkit would break it anyway; handing it over in pieces of this length
 * keeps that linear (pdfkit measures the whole rest of an overlong word again after every line it fills). Text
 * that may break after every character (Japanese, Chinese) is no word.
 */
const longWordChars = 400;
const unbreakable = `[^\\s${breakableSource}]`;
const longWord = new RegExp(`${unbreakable}{${longWordChars},}`);
const longWords = new RegExp(`${unbreakable}{${longWordChars},}`, 'g');

function pieces(text: string): string[] {
  if (text.length < longWordChars || !longWord.test(text)) return [text];
  const out: string[] = [];
  let from = 0;
  for (const m of text.matchAll(longWords)) {
    for (let cut = m.index + longWordChars; cut < m.index + m[0].length; cut += longWordChars) {
      // Never between the two halves of a character beyond U+FFFF.
      const at = isLowSurrogate(text.charCodeAt(cut)) ? cut - 1 : cut;
      out.push(text.slice(from, at));
      from = at;
    }
  }
  out.push(text.slice(from));
  return out;
}

const isLowSurrogate = (unit: number) => unit >= 0xdc00 && unit <= 0xdfff;

/** Space above a heading of `depth`, and about all it takes with that space and its rule. */
const headingGap = (depth: number) => (depth <= 2 ? 12 : depth === 3 ? 10 : 6);
const headingHeight = (depth: number) =>
  headingGap(depth) + headingSize[Math.min(Math.max(depth, 1), 6)]! * 1.3 + (depth <= 3 ? 12 : 4);

const claimKey = (c: ParsedClaim) => `${c.id}\u0000${c.text}\u0000${c.sourceId}\u0000${c.locator}`;
const destinationOf = (sourceId: string) => `source-${sourceId}`;
const sourceHeading = /^\[([A-Za-z0-9_.-]{1,40})\]\s*(.*)$/;

class Renderer {
  readonly doc: PDFKit.PDFDocument;
  private pageIndex = 0;
  private quoteDepth = 0;
  private readonly bars: Bar[] = [];
  private readonly openBars: { x: number; page: number; y0: number }[] = [];
  /** The claims the verifier reads, by key; each is drawn once as a claim, those left over in an appendix. */
  private readonly claimsLeft = new Map<string, ParsedClaim[]>();
  private readonly sources: Map<string, ParsedSource>;
  private readonly destinations = new Set<string>();
  private readonly links = new Set<string>();
  private outlineTop: PDFKit.PDFOutline | null = null;
  private readonly registered = new Set<FaceName>();

  constructor(
    private readonly input: PdfInput,
    artifact: ParsedArtifact,
  ) {
    this.sources = artifact.sources;
    for (const c of artifact.claims) {
      const k = claimKey(c);
      const list = this.claimsLeft.get(k);
      if (list) list.push(c);
      else this.claimsLeft.set(k, [c]);
    }
    const created = new Date(input.createdAt);
    const info: Record<string, string | Date> = {
      Title: input.title,
      Author: 'Assay',
      Creator: 'Assay',
      Producer: `Assay ${pdfRendererVersion} (PDFKit)`,
      Subject: `Edition ${input.editionId} of "${input.title}": content ${input.contentHash}, report ${input.reportDigest ?? 'not judged yet'}`,
      Keywords: ['Assay', ...(artifact.frontMatter.topics ?? []), input.editionId, input.contentHash].join(', '),
      CreationDate: created,
      ModDate: created,
      ContentHash: input.contentHash,
      EditionId: input.editionId,
      RendererVersion: pdfRendererVersion,
    };
    if (input.reportDigest !== null) info['ReportDigest'] = input.reportDigest;
    this.doc = new PDFDocument({
      size: page.size,
      margins: { top: page.top, bottom: page.bottom, left: page.left, right: page.right },
      // Pages stay in memory until the end, so the footer can say "of N"; an edition is at most a few hundred.
      bufferPages: true,
      compress: true,
      // 1.3 has no XMP metadata stream, into which pdfkit would write the title unescaped.
      pdfVersion: '1.3',
      displayTitle: true,
      // Fixed dates and no other varying entry: pdfkit derives the file ID from this dictionary.
      info: info as PDFKit.DocumentInfo,
    });
    this.doc.on('pageAdded', () => {
      // A quote running over a page break gets a bar on each page.
      for (const b of this.openBars) {
        this.bars.push({ page: b.page, x: b.x, y0: b.y0, y1: this.bottom });
        b.page = this.pageIndex + 1;
        b.y0 = page.top;
      }
      this.pageIndex++;
    });
  }

  get contentWidth(): number {
    return this.doc.page.width - page.left - page.right;
  }

  private get bottom(): number {
    return this.doc.page.height - page.bottom;
  }

  private get pageContentHeight(): number {
    return this.doc.page.height - page.top - page.bottom;
  }

  /** Starts a new page unless `height` fits below the current position (a block taller than a page flows). */
  private keep(height: number): void {
    if (height <= this.pageContentHeight && this.doc.y + height > this.bottom) this.doc.addPage();
  }

  private gap(points: number): void {
    if (this.doc.y > page.top + 0.01) this.doc.y = Math.min(this.doc.y + points, this.bottom);
  }

  private rule(x: number, width: number, c = colour.rule): void {
    const y = this.doc.y;
    this.doc
      .save()
      .moveTo(x, y)
      .lineTo(x + width, y)
      .lineWidth(0.6)
      .strokeColor(c)
      .stroke()
      .restore();
  }

  /** Height of `sz`-point text above its baseline: every face is laid out with the same ascender. */
  private ascent(sz: number): number {
    return (faceAscender * sz) / 1000;
  }

  /** The height of one line of `sz`-point text, with the gap under it. */
  private lineHeight(sz: number): number {
    return ((faceAscender - faceDescender) * sz) / 1000 + lineGap;
  }

  /** Sets `name` at `sz` points, registering it with this document the first time. */
  private useFace(name: FaceName, sz: number): void {
    if (!this.registered.has(name)) {
      // pdfkit takes an opened fontkit font as it is (it checks for `layout`); its types only name files and bytes.
      this.doc.registerFont(name, face(name) as unknown as Uint8Array);
      this.registered.add(name);
    }
    this.doc.font(name).fontSize(sz);
  }

  /** The width of `s` on one line in `style` at `sz` points. */
  private widthOf(s: string, style: FontStyle, sz: number): number {
    let width = 0;
    for (const seg of segments(s, style)) {
      this.useFace(seg.face, sz);
      width += this.doc.widthOfString(seg.text);
    }
    return width;
  }

  /** The height `s` takes wrapped to `width`; a text with an overlong word counts as taller than a page. */
  private heightOf(s: string, width: number, f: FontStyle, sz: number): number {
    return this.heightOfRuns(
      [{ text: s, font: f, size: sz, colour: colour.text, strike: false, link: null, goTo: null }],
      width,
    );
  }

  private heightOfRuns(runs: Run[], width: number, paint: Paint = {}): number {
    if (longWord.test(runs.map((r) => r.text).join(''))) return Number.POSITIVE_INFINITY;
    const { x, y } = this.doc;
    this.writeRuns(runs, page.left, width, paint, true);
    const height = this.doc.y - y;
    this.doc.x = x;
    this.doc.y = y;
    return height;
  }

  private text(s: string, x: number, width: number, f: FontStyle, sz: number, c: string, paint: Paint = {}): void {
    this.writeRuns(
      [{ text: s, font: f, size: sz, colour: c, strike: false, link: null, goTo: paint.goTo ?? null }],
      x,
      width,
      paint,
    );
  }

  /**
   * Runs of several styles as one wrapped paragraph at (x, current y), each cut into the faces that draw it. All
   * share one baseline, the deepest of their own: pdfkit puts each run's baseline at its own ascent below the
   * line's top, which lifts smaller runs. With `measure`, nothing is drawn: the lines are wrapped exactly as they
   * would be, and only the current y moves (pdfkit's own `heightOfString` takes one font only).
   */
  private writeRuns(runs: Run[], x: number, width: number, paint: Paint = {}, measure = false): void {
    const merged: Run[] = [];
    for (const r of runs) {
      if (r.text === '') continue;
      const last = merged.at(-1);
      if (
        last &&
        last.font === r.font &&
        last.size === r.size &&
        last.colour === r.colour &&
        last.strike === r.strike &&
        last.link === r.link &&
        last.goTo === r.goTo
      )
        last.text += r.text;
      else merged.push({ ...r });
    }
    // Blanks at either end of a block would only draw an empty line.
    while (merged.length > 0 && merged[0]!.text.trim() === '') merged.shift();
    while (merged.length > 0 && merged.at(-1)!.text.trim() === '') merged.pop();
    if (merged.length === 0) return;
    merged[0]!.text = merged[0]!.text.trimStart();
    merged.at(-1)!.text = merged.at(-1)!.text.trimEnd();
    const baseline = paint.baseline ?? Math.max(...merged.map((r) => this.ascent(r.size)));
    const drawn = merged.flatMap((r) =>
      segments(r.text, r.font).flatMap((seg) => pieces(seg.text).map((text) => ({ r, seg, text }))),
    );
    const d = this.doc;
    const gap = paint.lineGap ?? lineGap;
    const advance = () => {
      d.y += d.currentLineHeight(true) + gap;
    };
    drawn.forEach(({ r, seg, text }, i) => {
      this.useFace(seg.face, r.size);
      if (!measure) {
        // A character written as its code point stands out from the text around it.
        d.fillColor(seg.codePoint ? colour.marker : r.colour);
        if (r.goTo) this.links.add(r.goTo);
      }
      // Every option on every run: pdfkit carries a continued run's options over to the next one.
      const options: PDFKit.Mixins.TextOptions = {
        width,
        lineGap: gap,
        align: paint.align ?? 'left',
        continued: i < drawn.length - 1,
        strike: r.strike,
        underline: false,
        link: r.link,
        goTo: r.goTo ?? undefined,
        oblique: seg.oblique ? obliqueDegrees : false,
        // pdfkit reads a number as the baseline's depth below the line's top, negated, in points.
        baseline: Math.abs(this.ascent(r.size) - baseline) < 0.01 ? 'top' : -baseline,
        // Measured text never moves on to a new page.
        ...(measure ? { height: Number.POSITIVE_INFINITY } : {}),
      };
      if (measure) {
        const internal = d as unknown as PdfKitTextInternals;
        if (i === 0) internal._text(text, x, d.y, options, advance);
        else internal._text(text, options, undefined, undefined, advance);
      } else if (i === 0) d.text(text, x, d.y, options);
      else d.text(text, options);
    });
    d.x = page.left;
  }

  /** `s` on one line from (x, y), without wrapping: the running footer. */
  private line(s: string, x: number, y: number, style: FontStyle, sz: number, c: string): void {
    let at = x;
    for (const seg of segments(s, style)) {
      this.useFace(seg.face, sz);
      this.doc.fillColor(seg.codePoint ? colour.marker : c);
      this.doc.text(seg.text, at, y, { lineBreak: false, oblique: seg.oblique ? obliqueDegrees : false });
      at += this.doc.widthOfString(seg.text);
    }
  }

  // ------------------------------------------------------------------------------------------------------------
  // Page 1: what this PDF is a rendering of.
  // ------------------------------------------------------------------------------------------------------------

  header(frontMatter: string[] | null, undrawn: UndrawnGroup[]): void {
    const d = this.doc;
    const x = page.left;
    const w = this.contentWidth;
    this.text('ASSAY  \u00b7  ARTIFACT EDITION', x, w, font.sansBold, 7.5, colour.muted);
    d.moveDown(0.4);
    this.text(this.input.title, x, w, font.sansBold, size.title, colour.text, { lineGap: 4 });
    d.moveDown(0.3);
    const rows: [string, string][] = [
      ['Edition', this.input.editionId],
      ['Created', this.input.createdAt],
      ['Content hash', this.input.contentHash],
      ['Report digest', this.input.reportDigest ?? 'not judged yet'],
    ];
    this.fields(rows, x, w, { valueFont: font.mono, valueSize: 8, background: colour.headerBackground });
    if (frontMatter && frontMatter.length > 0) {
      d.moveDown(0.6);
      this.text('FRONT MATTER', x, w, font.sansBold, 7, colour.muted);
      d.moveDown(0.2);
      this.fields(frontMatterRows(frontMatter), x, w, { valueFont: font.sans, valueSize: 8.5, background: null });
    }
    if (undrawn.length > 0) {
      d.moveDown(0.6);
      this.text(undrawnNote(undrawn), x, w, font.sansItalic, size.small, colour.muted);
    }
    d.moveDown(0.5);
    this.rule(x, w);
    d.moveDown(1);
  }

  /** Label and value rows, the value wrapping in its column; on a light background when given one. */
  private fields(
    rows: [string, string][],
    x: number,
    width: number,
    o: { valueFont: FontStyle; valueSize: number; background: string | null },
  ): void {
    const d = this.doc;
    const labelWidth = 82;
    const pad = o.background ? 6 : 0;
    const valueWidth = width - labelWidth - 2 * pad;
    const heights = rows.map(
      ([label, value]) =>
        Math.max(
          this.heightOf(label, labelWidth - 6, font.sans, 8),
          this.heightOf(value || ' ', valueWidth, o.valueFont, o.valueSize),
          10,
        ) + 3,
    );
    const total = heights.reduce((a, b) => a + b, 0) + 2 * pad;
    this.keep(total);
    if (o.background && d.y + total <= this.bottom) d.save().rect(x, d.y, width, total).fill(o.background).restore();
    d.y += pad;
    rows.forEach(([label, value], i) => {
      this.keep(Math.min(heights[i]!, 40));
      const y = d.y;
      this.text(label, x + pad, labelWidth - 6, font.sans, 8, colour.muted);
      d.y = y;
      this.text(value || ' ', x + pad + labelWidth, valueWidth, o.valueFont, o.valueSize, colour.text);
      d.y = Number.isFinite(heights[i]!) ? Math.max(d.y, y + heights[i]!) : d.y + 3;
    });
    d.y += pad;
  }

  // ------------------------------------------------------------------------------------------------------------
  // Blocks.
  // ------------------------------------------------------------------------------------------------------------

  /** Draws block tokens in order; returns the artifact section that follows them. */
  blocks(tokens: readonly Token[], b: Block): Section {
    let section = b.section;
    tokens.forEach((t, i) => {
      if (t.type === 'heading') {
        // A heading is never the last line of a page, nor are the headings right under it (Sources, a source,
        // its first section): they move on together with three lines of what follows.
        let height = 3 * (size.body + lineGap);
        for (let j = i; j < tokens.length && (tokens[j]!.type === 'heading' || tokens[j]!.type === 'space'); j++) {
          const next = tokens[j]!;
          if (next.type === 'heading') height += headingHeight((next as Tokens.Heading).depth);
        }
        this.gap(headingGap((t as Tokens.Heading).depth));
        this.keep(height);
      }
      section = this.block(t, { ...b, section });
    });
    return section;
  }

  private block(t: Token, b: Block): Section {
    if (b.depth > nestingWalkedMax) {
      this.code(t.raw, b);
      return b.section;
    }
    switch (t.type) {
      case 'space':
      case 'def':
        return b.section;
      case 'heading':
        return this.heading(t as Tokens.Heading, b);
      case 'paragraph':
        this.paragraph(inlineRuns((t as Tokens.Paragraph).tokens, this.bodyStyle(), false, []), b);
        return b.section;
      case 'text':
        this.paragraph(this.textRuns(t as Tokens.Text), b);
        return b.section;
      case 'list':
        this.list(t as Tokens.List, b);
        return b.section;
      case 'blockquote':
        this.blockquote(t as Tokens.Blockquote, b);
        return b.section;
      case 'code':
        this.code((t as Tokens.Code).text, b);
        return b.section;
      case 'hr':
        this.gap(4);
        this.keep(12);
        this.rule(b.x, b.width);
        this.gap(10);
        return b.section;
      case 'table':
        this.grid(t as Tokens.Table, b);
        return b.section;
      case 'html': {
        const h = (t as Tokens.HTML).text;
        // A closed comment is not shown, as a Markdown viewer would not show it; a claim line inside one still
        // reaches the appendix of claims, so every claim the verifier reads is drawn.
        if (/^\s*<!--[\s\S]*?-->\s*$/.test(h) && h.indexOf('-->') === h.lastIndexOf('-->')) return b.section;
        this.code(h.replace(/\n+$/, ''), b);
        return b.section;
      }
      default: {
        const g = t as Tokens.Generic;
        if (g.tokens) return this.blocks(g.tokens, { ...b, depth: b.depth + 1 });
        this.paragraph([run(g.raw, this.bodyStyle())], b);
        return b.section;
      }
    }
  }

  /** Running text; inside a quote, the serif face of source passages. */
  private bodyStyle(): Style {
    const quoted = this.quoteDepth > 0;
    return {
      serif: quoted,
      bold: false,
      italic: false,
      mono: false,
      strike: false,
      size: quoted ? size.quote : size.body,
      colour: quoted ? '#333333' : colour.text,
      link: null,
    };
  }

  private textRuns(t: Tokens.Text | Tokens.Paragraph, keepBreaks = false): Run[] {
    return t.tokens
      ? inlineRuns(t.tokens, this.bodyStyle(), keepBreaks, [])
      : [run(softBreaks(t.text, keepBreaks), this.bodyStyle())];
  }

  private paragraph(runs: Run[], b: Block): void {
    if (runs.every((r) => r.text.trim() === '')) return;
    // The first two lines of a paragraph stay together.
    this.keep(2 * (size.body + lineGap) + 2);
    this.writeRuns(runs, b.x, b.width);
    this.gap(5);
  }

  private heading(h: Tokens.Heading, b: Block): Section {
    const depth = Math.min(Math.max(h.depth, 1), 6);
    let section = b.section;
    if (depth === 2 && b.depth === 0) {
      const name = h.text.trim().toLowerCase();
      section = name === 'claims' ? 'claims' : name === 'sources' ? 'sources' : 'none';
    }
    const sz = headingSize[depth]!;
    const source = depth === 3 && section === 'sources' ? sourceHeading.exec(h.text.trim()) : null;
    if (b.depth === 0) {
      const plain = inlineRuns(h.tokens, this.bodyStyle(), false, [])
        .map((r) => r.text)
        .join('');
      this.outline(depth, plain.slice(0, 200));
    }
    if (source) {
      const id = source[1]!;
      const dest = destinationOf(id);
      if (!this.destinations.has(dest)) {
        this.doc.addNamedDestination(dest, 'XYZ', null, this.doc.y, null);
        this.destinations.add(dest);
      }
      const idStyle: Style = { ...this.bodyStyle(), mono: true, bold: true, size: sz - 1.5, colour: colour.accent };
      const titleStyle: Style = { ...this.bodyStyle(), bold: true, size: sz };
      this.writeRuns([run(`[${id}] `, idStyle), run(source[2] ?? '', titleStyle)], b.x, b.width);
      this.gap(2);
      this.rule(b.x, b.width);
      this.gap(5);
      return section;
    }
    const style: Style = { ...this.bodyStyle(), bold: true, size: sz, colour: depth >= 4 ? '#333333' : colour.text };
    this.writeRuns(inlineRuns(h.tokens, style, false, []), b.x, b.width);
    if (depth <= 2) {
      this.gap(2);
      this.rule(b.x, b.width, depth === 1 ? colour.text : colour.rule);
      this.gap(8);
    } else this.gap(4);
    return section;
  }

  /** Bookmarks: headings 1 and 2 at the top, heading 3 (each source) under the heading before it. */
  private outline(depth: number, title: string): void {
    if (depth > 3) return;
    if (depth <= 2) this.outlineTop = this.doc.outline.addItem(title);
    else (this.outlineTop ?? this.doc.outline).addItem(title);
  }

  private list(l: Tokens.List, b: Block): void {
    const start = typeof l.start === 'number' ? l.start : 1;
    const indent = b.depth < nestingDrawnMax ? indentStep : 0;
    l.items.forEach((item, i) => {
      const claim = this.claimOf(item);
      if (claim) {
        this.claim(claim, b);
        // Lines under a claim's item are not part of the claim: drawn below it as ordinary text.
        const rest = item.raw.replace(/^[^\n]*\n?/, '');
        if (rest.trim() !== '') {
          const inner = { ...b, x: b.x + claimIdColumn, width: b.width - claimIdColumn, depth: b.depth + 1 };
          this.blocks(lex(dedent(rest)), inner);
        }
        return;
      }
      const marker = l.ordered ? `${start + i}.` : b.depth % 2 === 0 ? '\u2022' : '\u2013';
      const markerWidth = l.ordered ? Math.max(indent, this.widthOf(marker, font.sans, size.body) + 6) : indent;
      this.keep(2 * (size.body + lineGap));
      const y = this.doc.y;
      this.text(marker, b.x + (l.ordered ? 0 : 4), markerWidth, font.sans, size.body, colour.muted);
      this.doc.y = y;
      const inner: Block = { ...b, x: b.x + markerWidth, width: b.width - markerWidth, depth: b.depth + 1 };
      for (const t of item.tokens) {
        if (t.type === 'text' || t.type === 'paragraph') {
          this.writeRuns(this.textRuns(t as Tokens.Text), inner.x, inner.width);
          this.gap(item.loose ? 5 : 2);
        } else this.block(t, inner);
      }
      if (this.doc.y < y + size.body) this.doc.y = y + size.body + lineGap;
    });
    this.gap(4);
  }

  /** The claim a list item is, when the verifier reads its first line as a claim not drawn yet. */
  private claimOf(item: Tokens.ListItem): ParsedClaim | null {
    const line = /^[^\n]*/.exec(item.raw)![0];
    if (!line.includes('(source:')) return null;
    const parsed = parseArtifact(`## Claims\n${line}`).claims[0];
    if (!parsed) return null;
    return this.claimsLeft.get(claimKey(parsed))?.shift() ?? null;
  }

  /** One claim: its id in a column, its text exactly as the verifier reads it, and the source it cites. */
  private claim(c: ParsedClaim, b: Block): void {
    const d = this.doc;
    const id = `[${c.id}]`;
    const idOwnLine = this.widthOf(id, font.monoBold, size.claimId) > claimIdColumn - 6;
    const x = b.x + claimIdColumn;
    const width = b.width - claimIdColumn;
    const source = this.sources.get(c.sourceId);
    const where = c.locator ? `, section "${c.locator}"` : ', the whole source';
    const citation = source
      ? `Source: [${c.sourceId}] ${source.title}${where}`
      : `Source: [${c.sourceId}]${where} (not among this file's sources)`;
    const height =
      (idOwnLine ? size.claimId + lineGap : 0) +
      this.heightOf(c.text, width, font.sans, size.body) +
      this.heightOf(citation, width, font.sans, size.small) +
      8;
    this.keep(height);
    const y = d.y;
    if (idOwnLine) this.text(id, b.x, b.width, font.monoBold, size.claimId, colour.accent);
    else {
      // On the baseline of the text's first line.
      this.text(id, b.x, claimIdColumn - 6, font.monoBold, size.claimId, colour.accent, {
        baseline: this.ascent(size.body),
      });
      d.y = y;
    }
    this.text(c.text, x, width, font.sans, size.body, colour.text);
    d.y += 1;
    this.text(citation, x, width, font.sans, size.small, colour.muted, {
      goTo: source ? destinationOf(c.sourceId) : null,
    });
    this.gap(7);
  }

  private blockquote(q: Tokens.Blockquote, b: Block): void {
    const indent = b.depth < nestingDrawnMax ? 14 : 0;
    this.keep(2 * (size.quote + lineGap));
    const bar = { x: b.x + 3, page: this.pageIndex, y0: this.doc.y };
    this.openBars.push(bar);
    this.quoteDepth++;
    const inner: Block = { ...b, x: b.x + indent, width: b.width - indent, depth: b.depth + 1 };
    for (const t of q.tokens) {
      if (t.type === 'paragraph') {
        // A source's passages keep the lines they were quoted in.
        this.keep(size.quote + lineGap);
        this.writeRuns(this.textRuns(t as Tokens.Paragraph, b.section === 'sources'), inner.x, inner.width);
        this.gap(4);
      } else this.block(t, inner);
    }
    this.quoteDepth--;
    this.openBars.pop();
    this.bars.push({ page: bar.page, x: bar.x, y0: bar.y0, y1: Math.max(this.doc.y - 4, bar.y0 + size.quote) });
    this.gap(3);
  }

  /**
   * A code block on a grey band, line by line, in columns: Noto Sans Mono's glyphs are all one column wide, and a
   * Japanese or Chinese character takes two (as a terminal shows it), so lines are cut at a fixed number of columns:
   * linear in the text, however long a line is. `codeLines` below says how.
   */
  private code(text: string, b: Block): void {
    const d = this.doc;
    const pad = 6;
    const lineHeight = size.code + 2.5;
    const column = (monoAdvance / 1000) * size.code;
    const perLine = Math.max(8, Math.floor((b.width - 2 * pad) / column));
    const lines = expandTabs(text).split('\n');
    const band = (h: number) => d.save().rect(b.x, d.y, b.width, h).fill(colour.codeBackground).restore();
    this.gap(2);
    this.keep(Math.min(lines.length, 3) * lineHeight + 2 * pad);
    band(pad);
    d.y += pad;
    for (const line of lines) {
      for (const pieces of codeLines(line, perLine)) {
        if (d.y + lineHeight > this.bottom) d.addPage();
        const y = d.y;
        band(lineHeight);
        for (const p of pieces) {
          this.useFace(p.face, size.code);
          d.fillColor(p.codePoint ? colour.marker : colour.text);
          // pdfkit 0.20 draws `horizontalScaling` (Tz); @types/pdfkit does not name it yet.
          const options: PDFKit.Mixins.TextOptions & { horizontalScaling: number } = {
            lineBreak: false,
            baseline: -codeBaseline,
            horizontalScaling: p.scalePercent,
          };
          d.text(p.text, b.x + pad + p.column * column, y, options);
        }
        d.x = page.left;
        d.y = y + lineHeight;
      }
    }
    if (d.y + pad <= this.bottom) band(pad);
    d.y += pad;
    this.gap(6);
  }

  /** A GFM table: equal columns, a shaded header row, a rule under each row; too many columns, one line a row. */
  private grid(t: Tokens.Table, b: Block): void {
    const d = this.doc;
    const columns = t.header.length;
    if (columns === 0) return;
    const style = { ...this.bodyStyle(), size: size.body - 1 };
    const rows = [t.header, ...t.rows].map((row, r) =>
      row.map((cell) => inlineRuns(cell.tokens, { ...style, bold: r === 0 }, false, [])),
    );
    const joined = (cells: Run[][]) =>
      cells.flatMap((runs, i) => [...(i > 0 ? [run('  |  ', { ...style, colour: colour.faint })] : []), ...runs]);
    if (columns > tableColumnsMax) {
      for (const cells of rows) this.paragraph(joined(cells), b);
      return;
    }
    const colWidth = b.width / columns;
    const pad = 4;
    this.gap(2);
    rows.forEach((cells, r) => {
      const heights = cells.map((runs, i) =>
        this.heightOfRuns(runs, colWidth - 2 * pad, { align: t.align[i] ?? 'left' }),
      );
      // A row of empty cells is one line high.
      const h = Math.max(...heights, this.lineHeight(style.size)) + 2 * pad;
      if (h > this.pageContentHeight) {
        this.paragraph(joined(cells), b);
        return;
      }
      // The header row never ends a page.
      this.keep(r === 0 ? 2 * h + 12 : h);
      const y = d.y;
      if (r === 0) d.save().rect(b.x, y, b.width, h).fill(colour.headerBackground).restore();
      cells.forEach((runs, i) => {
        d.y = y + pad;
        this.writeRuns(runs, b.x + i * colWidth + pad, colWidth - 2 * pad, { align: t.align[i] ?? 'left' });
      });
      d.y = y + h;
      this.rule(b.x, b.width);
    });
    this.gap(8);
  }

  /** Claims the verifier reads that the layout above did not draw as claims (inside code, HTML, ...). */
  appendix(): void {
    const left = [...this.claimsLeft.values()].flat();
    if (left.length === 0) return;
    const b: Block = { x: page.left, width: this.contentWidth, depth: 0, section: 'claims' };
    const title = 'Claims not shown as a list above';
    this.gap(12);
    this.keep(80);
    this.outline(2, title);
    this.text(title, b.x, b.width, font.sansBold, headingSize[2], colour.text);
    this.gap(2);
    this.rule(b.x, b.width);
    this.gap(6);
    this.text(
      'The verifier reads these lines as claims; the Markdown above does not make them items of the claims ' +
        'list (they are inside code, HTML or other text), so they are repeated here.',
      b.x,
      b.width,
      font.sansItalic,
      size.small,
      colour.muted,
    );
    this.gap(8);
    for (const c of left) this.claim(c, b);
  }

  /** Quote bars, links to sources and footers, on every buffered page once the page count is known. */
  finish(): void {
    const d = this.doc;
    for (const dest of this.links) {
      // A citation of a source whose heading the layout did not draw points at page 1 rather than nowhere.
      if (!this.destinations.has(dest)) {
        d.switchToPage(0);
        d.addNamedDestination(dest, 'XYZ', null, page.top, null);
      }
    }
    const range = d.bufferedPageRange();
    const w = this.contentWidth;
    for (let i = 0; i < range.count; i++) {
      d.switchToPage(range.start + i);
      for (const bar of this.bars) {
        if (bar.page !== i || bar.y1 <= bar.y0) continue;
        d.save()
          .moveTo(bar.x, bar.y0)
          .lineTo(bar.x, bar.y1)
          .lineWidth(1.6)
          .strokeColor(colour.quoteBar)
          .stroke()
          .restore();
      }
      // The footer sits in the bottom margin; with the margin at 0 meanwhile, pdfkit does not start a new page.
      const bottomMargin = d.page.margins.bottom;
      d.page.margins.bottom = 0;
      const y = d.page.height - page.bottom + 22;
      d.save()
        .moveTo(page.left, y - 6)
        .lineTo(page.left + w, y - 6)
        .lineWidth(0.4)
        .strokeColor(colour.rule)
        .stroke()
        .restore();
      const pageLabel = `Page ${i + 1} of ${range.count}`;
      const labelWidth = this.widthOf(pageLabel, font.sans, size.footer);
      const left = this.fit(`${this.input.title}  \u00b7  ${this.input.editionId}`, w - labelWidth - 18);
      this.line(left, page.left, y, font.sans, size.footer, colour.muted);
      this.line(pageLabel, page.left + w - labelWidth, y, font.sans, size.footer, colour.muted);
      d.page.margins.bottom = bottomMargin;
      d.x = page.left;
    }
  }

  /** The longest prefix of `text` that fits `width` in the footer's font, with an ellipsis when cut. */
  private fit(text: string, width: number): string {
    const widthOf = (t: string) => this.widthOf(t, font.sans, size.footer);
    if (widthOf(text) <= width) return text;
    // By characters, so a cut never falls inside one.
    const chars = Array.from(text);
    let lo = 0;
    let hi = Math.min(chars.length, 400);
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (widthOf(`${chars.slice(0, mid).join('')}\u2026`) <= width) lo = mid;
      else hi = mid - 1;
    }
    return `${chars.slice(0, lo).join('').trimEnd()}\u2026`;
  }
}

/** Code points named on page 1, per reason; the count says how many more there are. */
const namedCodePointsMax = 40;

/** Page 1's account of the characters written as their code point: how many, why, and exactly which. */
function undrawnNote(groups: UndrawnGroup[]): string {
  const total = groups.reduce((n, g) => n + g.count, 0);
  const first = groups[0]!.codePoints[0]!;
  const names = (list: string[]) =>
    list.length <= 1 ? (list[0] ?? '') : `${list.slice(0, -1).join(', ')} and ${list.at(-1)}`;
  const which = (cps: number[]) => {
    const shown = cps.slice(0, namedCodePointsMax).map((cp) => codePointText(cp).slice(1, -1));
    const more = cps.length - shown.length;
    return more > 0 ? `${shown.join(', ')} and ${more} more` : shown.join(', ');
  };
  const parts = groups.map((g) => {
    const why =
      g.reason === 'rightToLeft'
        ? `in ${names(g.scripts)}, written right to left, which this PDF does not lay out`
        : g.reason === 'shaping'
          ? `in ${names(g.scripts)}, whose letters join or change form, which this PDF does not lay out`
          : 'that none of its fonts has (control characters, emoji, and scripts other than these)';
    return `${g.count} ${why}: ${which(g.codePoints)}`;
  });
  return (
    'This PDF draws Latin, Greek, Cyrillic and Japanese text in fonts it carries. ' +
    `${total} character${total === 1 ? ' of this edition is' : 's of this edition are'} written as ` +
    `${total === 1 ? 'its' : 'their'} code point instead, such as ${codePointText(first)}: ${parts.join('; ')}. ` +
    'The Markdown format of this edition holds the exact text.'
  );
}

/** Depth of a code line's baseline below the top of its band, in points: the band holds its descenders. */
const codeBaseline = 1.5 + 0.78 * size.code;

/**
 * Text of a code line drawn from one column on: a run of monospaced text, or characters of another face scaled
 * horizontally (`scalePercent`) to one column each, two for a wide one.
 */
interface CodePiece {
  text: string;
  face: FaceName;
  codePoint: boolean;
  column: number;
  scalePercent: number;
}

/**
 * A code line cut into lines of at most `perLine` columns. Noto Sans Mono's text (and code points written in it)
 * is one column a character; a character of another face is fitted to its columns (a kanji's em to two columns
 * is 120%), so the lines below stay aligned and a viewer reads no gap between characters as a space.
 */
function codeLines(line: string, perLine: number): CodePiece[][] {
  const out: CodePiece[][] = [[]];
  const mono = primaryFace(font.mono);
  let column = 0;
  for (const seg of segments(line, font.mono)) {
    const ownFace = seg.codePoint || seg.face === mono;
    for (const ch of seg.text) {
      const cp = ch.codePointAt(0)!;
      const width = !ownFace && isWide(cp) ? 2 : 1;
      const advance = ownFace ? monoAdvance : face(seg.face).glyphForCodePoint(cp).advanceWidth;
      const scalePercent = advance > 0 ? Math.round((100 * width * monoAdvance) / advance) : 100;
      if (column + width > perLine) {
        out.push([]);
        column = 0;
      }
      const pieces = out.at(-1)!;
      const last = pieces.at(-1);
      if (last && last.face === seg.face && last.codePoint === seg.codePoint && last.scalePercent === scalePercent)
        last.text += ch;
      else pieces.push({ text: ch, face: seg.face, codePoint: seg.codePoint, column, scalePercent });
      column += width;
    }
  }
  return out;
}

function frontMatterRows(lines: string[]): [string, string][] {
  const rows: [string, string][] = [];
  for (const line of lines) {
    if (line.trim() === '') continue;
    const m = /^([A-Za-z0-9_-]+):\s*(.*)$/.exec(line.trim());
    if (!m) {
      // A continuation line (a YAML list item, a folded value) joins the row above it.
      const last = rows.at(-1);
      if (last) last[1] = `${last[1]} ${line.trim()}`.trim();
      else rows.push(['', line.trim()]);
      continue;
    }
    let value = m[2]!.trim();
    if (/^\[.*\]$/.test(value))
      value = value
        .slice(1, -1)
        .split(',')
        .map((v) => unquote(v.trim()))
        .filter(Boolean)
        .join(', ');
    else value = unquote(value);
    rows.push([m[1]!, value]);
  }
  return rows;
}

const unquote = (s: string) => s.replace(/^(["'])(.*)\1$/, '$2');

function expandTabs(text: string): string {
  if (!text.includes('\t')) return text;
  return text
    .split('\n')
    .map((line) => {
      let out = '';
      for (const ch of line) out += ch === '\t' ? ' '.repeat(4 - (out.length % 4)) : ch;
      return out;
    })
    .join('\n');
}

/** The lines under a list item's first, without the indentation that put them under the item. */
function dedent(text: string): string {
  const lines = text.split('\n');
  const cut = Math.min(...lines.filter((l) => l.trim() !== '').map((l) => /^ */.exec(l)![0].length));
  return lines.map((l) => l.slice(cut)).join('\n');
}

/** Front matter as the verifier reads it: from a first line `---` to the next line that is exactly `---`. */
function splitFrontMatter(markdown: string): { frontMatter: string[] | null; body: string } {
  const lines = markdown.split('\n');
  if (lines[0]?.trim() !== '---') return { frontMatter: null, body: markdown };
  const end = lines.indexOf('---', 1);
  if (end <= 0) return { frontMatter: null, body: markdown };
  return { frontMatter: lines.slice(1, end), body: lines.slice(end + 1).join('\n') };
}

/**
 * The edition's Markdown as a PDF: a header saying which edition, content hash and report it renders, the front
 * matter as a table, then the body; see the top of this file for characters. Throws only on input no edition has
 * (over `pdfMarkdownCharsMax` characters, or a `createdAt` that is not a date).
 */
export async function renderPdf(input: PdfInput): Promise<Buffer> {
  assert.ok(input.markdown.length <= pdfMarkdownCharsMax, `markdown is over ${pdfMarkdownCharsMax} characters`);
  assert.ok(Number.isFinite(Date.parse(input.createdAt)), `createdAt is not a date: ${input.createdAt}`);
  const markdown = input.markdown.replace(/\r\n?/g, '\n');
  const { frontMatter, body } = splitFrontMatter(markdown);
  const r = new Renderer(input, parseArtifact(markdown));
  const chunks: Buffer[] = [];
  const done = new Promise<Buffer>((resolve, reject) => {
    r.doc.on('data', (c: Buffer) => chunks.push(c));
    r.doc.on('end', () => resolve(Buffer.concat(chunks)));
    r.doc.on('error', reject);
  });
  r.header(frontMatter, undrawnCharacters(input.title, markdown));
  r.blocks(lex(body), { x: page.left, width: r.contentWidth, depth: 0, section: 'none' });
  r.appendix();
  r.finish();
  r.doc.end();
  return done;
}
