// The part of fontkit 2 (pdfkit's font engine, a direct dependency pinned to pdfkit's version) that the PDF
// renderer uses: opening a font file and asking which characters it has. fontkit ships no types.
declare module 'fontkit' {
  export interface Glyph {
    readonly advanceWidth: number;
  }

  export interface Font {
    readonly postscriptName: string;
    readonly unitsPerEm: number;
    readonly ascent: number;
    readonly descent: number;
    readonly lineGap: number;
    hasGlyphForCodePoint(codePoint: number): boolean;
    glyphForCodePoint(codePoint: number): Glyph;
    /** What pdfkit checks to take an opened font as it is. */
    layout(text: string, features?: unknown): unknown;
  }

  export function create(buffer: Uint8Array, postscriptName?: string): Font;
}
