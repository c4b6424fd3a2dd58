// The PDF renderer's cost: one artifact of 200 claims (real corpus sentences and their sources), or the Greek,
// Russian and Japanese one of the tests (`--scripts`), rendered `renders` times in one process. The first render
// pays for opening the fonts, shaping every word once and warming the code; the rest is the steady rate. No
// service needed.
//   node --import tsx test/bench/delivery-pdf.ts [--claims 200] [--scripts] [--renders 50]
// `benchPdf` is exported for `npm run bench:delivery` to print beside the delivery routes' figures.
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { pdfRendererVersion, renderPdf } from '../../actors/delivery/pdf.ts';
import { claimsArtifact, scriptsArtifact } from '../support/pdf.ts';

export interface PdfBench {
  rendererVersion: string;
  /** What was rendered: `200 claims`, or `Greek, Russian and Japanese`. */
  artifact: string;
  markdownChars: number;
  renders: number;
  pdfBytes: number;
  firstRenderMs: number;
  /** CPU of this process for the first render (user and system): less moved by other load than wall time. */
  firstRenderCpuMs: number;
  /** Renders per second after the first. */
  rendersPerSecond: number;
  meanMs: number;
  meanCpuMs: number;
}

export async function benchPdf(
  options: { claims?: number; scripts?: boolean; renders?: number } = {},
): Promise<PdfBench> {
  const claims = options.claims ?? 200;
  const renders = Math.max(2, options.renders ?? 50);
  const { markdown, title } = options.scripts ? scriptsArtifact() : claimsArtifact(claims);
  const input = {
    markdown,
    title,
    contentHash: `sha256:${'a'.repeat(64)}`,
    reportDigest: `sha256:${'b'.repeat(64)}`,
    editionId: '00000000-0000-4000-8000-000000000000',
    createdAt: '2026-10-01T00:00:00.000Z',
  };
  const cpuMs = () => {
    const { user, system } = process.cpuUsage();
    return (user + system) / 1000;
  };
  let started = performance.now();
  let cpuStarted = cpuMs();
  const first = await renderPdf(input);
  const firstRenderMs = performance.now() - started;
  const firstRenderCpuMs = cpuMs() - cpuStarted;
  started = performance.now();
  cpuStarted = cpuMs();
  for (let i = 1; i < renders; i++) await renderPdf(input);
  const seconds = (performance.now() - started) / 1000;
  const meanCpuMs = (cpuMs() - cpuStarted) / (renders - 1);
  return {
    rendererVersion: pdfRendererVersion,
    artifact: options.scripts ? 'Greek, Russian and Japanese' : `${claims} claims`,
    markdownChars: markdown.length,
    renders,
    pdfBytes: first.length,
    firstRenderMs,
    firstRenderCpuMs,
    rendersPerSecond: (renders - 1) / seconds,
    meanMs: (seconds * 1000) / (renders - 1),
    meanCpuMs,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({
    options: {
      claims: { type: 'string', default: '200' },
      scripts: { type: 'boolean', default: false },
      renders: { type: 'string', default: '50' },
    },
  });
  const r = await benchPdf({ claims: Number(values.claims), scripts: values.scripts, renders: Number(values.renders) });
  console.log(
    `PDF renderer ${r.rendererVersion}, ${r.artifact} (${r.markdownChars} characters of Markdown, ` +
      `${r.pdfBytes} bytes of PDF):\n` +
      `  first render ${r.firstRenderMs.toFixed(1)} ms (CPU ${r.firstRenderCpuMs.toFixed(0)} ms), then ` +
      `${r.rendersPerSecond.toFixed(1)} renders/s (${r.meanMs.toFixed(1)} ms each over ${r.renders - 1}, CPU ` +
      `${r.meanCpuMs.toFixed(1)} ms)`,
  );
}
