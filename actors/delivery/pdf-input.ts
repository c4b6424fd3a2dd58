// What the PDF renderer takes and the names it is cached by, apart from the renderer itself: pdf.ts loads pdfkit,
// fontkit and marked (about 0.3 s of start-up), which only a process that renders a PDF should pay for.
import { schemas } from '../../contracts/index.ts';

/** Names the layout: bump it whenever the bytes for some input change (delivered PDFs are cached by it). */
export const pdfRendererVersion = 'pdf/2.0.0';

/** The largest Markdown rendered: an edition's content is never longer (contracts' `contentCharsMax`). */
export const pdfMarkdownCharsMax = schemas.contentCharsMax;

export interface PdfInput {
  /** The edition's Markdown, exactly as stored. */
  markdown: string;
  title: string;
  /** `sha256:<hex>` of the Markdown: the judged bytes this PDF renders. */
  contentHash: string;
  /** Digest of the edition's signed report, or null before it is judged. */
  reportDigest: string | null;
  editionId: string;
  /** ISO 8601: the edition's creation time, used as the PDF's creation and modification date. */
  createdAt: string;
}

/** The renderer, loaded on the first render. */
export async function renderPdf(input: PdfInput): Promise<Buffer> {
  return (await import('./pdf.ts')).renderPdf(input);
}
