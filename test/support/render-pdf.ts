// Renders one PDF in a process of its own, with no font opened and no word shaped yet:
//   node --import tsx test/support/render-pdf.ts <input.json> <output.pdf>
// The input is a PdfInput as JSON. Tests compare its bytes with a render in a process that has rendered before.
import { readFileSync, writeFileSync } from 'node:fs';
import { type PdfInput, renderPdf } from '../../actors/delivery/pdf.ts';

const [inputPath, outputPath] = process.argv.slice(2);
if (!inputPath || !outputPath) throw new Error('usage: render-pdf.ts <input.json> <output.pdf>');
const input: PdfInput = JSON.parse(readFileSync(inputPath, 'utf8'));
writeFileSync(outputPath, await renderPdf(input));
