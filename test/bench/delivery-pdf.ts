// The PDF renderer's cost: one artifact of 200 claims (real corpus sentences and their sources) rendered `renders`
// times in one process. The first render pays for loading the fonts' metrics and warming the code; the rest is the
// steady rate. No service needed.
//   node --import tsx test/bench/delivery-pdf.ts [--claims 200] [--renders 50]
// `benchPdf` is exported for `npm run bench:delivery` to print beside the delivery routes' figures.
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { pdfRendererVersion, renderPdf } from '../../actors/delivery/pdf.ts';
import { claimsArtifact } from '../support/pdf.ts';

export interface PdfBench {
  rendererVersion: string;
  claims: number;
  markdownChars: number;
  renders: number;
  pdfBytes: number;
  firstRenderMs: number;
  /** Renders per second after the first. */
  rendersPerSecond: number;
  meanMs: number;
}

export async function benchPdf(options: { claims?: number; renders?: number } = {}): Promise<PdfBench> {
  const claims = options.claims ?? 200;
  const renders = Math.max(2, options.renders ?? 50);
  const { markdown, title } = claimsArtifact(claims);
  const input = {
    markdown,
    title,
    contentHash: `sha256:${'a'.repeat(64)}`,
    reportDigest: `sha256:${'b'.repeat(64)}`,
    editionId: '00000000-0000-4000-8000-000000000000',
    createdAt: '2026-10-01T00:00:00.000Z',
  };
  let started = performance.now();
  const first = await renderPdf(input);
  const firstRenderMs = performance.now() - started;
  started = performance.now();
  for (let i = 1; i < renders; i++) await renderPdf(input);
  const seconds = (performance.now() - started) / 1000;
  return {
    rendererVersion: pdfRendererVersion,
    claims,
    markdownChars: markdown.length,
    renders,
    pdfBytes: first.length,
    firstRenderMs,
    rendersPerSecond: (renders - 1) / seconds,
    meanMs: (seconds * 1000) / (renders - 1),
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: { claims: { type: 'string', default: '200' }, renders: { type: 'string', default: '50' } },
  });
  const r = await benchPdf({ claims: Number(values.claims), renders: Number(values.renders) });
  console.log(
    `PDF renderer ${r.rendererVersion}, ${r.claims} claims (${r.markdownChars} characters of Markdown, ` +
      `${r.pdfBytes} bytes of PDF):\n` +
      `  first render ${r.firstRenderMs.toFixed(1)} ms, then ${r.rendersPerSecond.toFixed(1)} renders/s ` +
      `(${r.meanMs.toFixed(1)} ms each over ${r.renders - 1})`,
  );
}
