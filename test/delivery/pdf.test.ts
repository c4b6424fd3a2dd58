// The PDF rendering of an edition (actors/delivery/pdf.ts), read back with poppler's tools as a person's viewer would
// show it: the text on the pages, the Info dictionary, and page 1 as a picture under test-artifacts/ to look at.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { promisify } from 'node:util';
import { type PdfInput, pdfMarkdownCharsMax, renderPdf } from '../../actors/delivery/pdf.ts';
import { asDrawn, undrawnCharacters } from '../../actors/delivery/pdf-fonts.ts';
import { corpusArtifact } from '../../actors/sandbox/corpus.ts';
import { type ParsedClaim, parseArtifact } from '../../actors/verification/format.ts';
import { claimsArtifact, missingPopplerTools, scriptsArtifact, squeeze } from '../support/pdf.ts';

const run = promisify(execFile);
const missing = missingPopplerTools();
// The project's rule for tools a test needs: skipped with a message on a developer's machine, a failure in CI.
const skip =
  missing.length > 0 && process.env['CI'] !== 'true'
    ? `needs ${missing.join(', ')} (apt-get install poppler-utils)`
    : false;
const artifactsDir = new URL('../../test-artifacts/', import.meta.url).pathname;
const workDir = mkdtempSync(join(tmpdir(), 'assay-pdf-'));
after(() => rmSync(workDir, { recursive: true, force: true }));

let fileCount = 0;
function save(pdf: Buffer): string {
  const path = join(workDir, `${++fileCount}.pdf`);
  writeFileSync(path, pdf);
  return path;
}

async function poppler(tool: string, args: string[]): Promise<string> {
  assert.deepEqual(missing, [], `poppler-utils are missing (${missing.join(', ')}): CI installs them in .ci/run`);
  return (await run(tool, args, { maxBuffer: 64 * 1024 * 1024 })).stdout;
}

/** The text on the pages in the order it was drawn (`-raw`: no re-flowing, and a hyphen at a line's end is kept). */
const pdfText = async (pdf: Buffer) => poppler('pdftotext', ['-raw', '-enc', 'UTF-8', save(pdf), '-']);

/** Each word on page 1 with its box (points from the top left), as `pdftotext -bbox` reads them. */
async function pdfWords(pdf: Buffer): Promise<{ text: string; x: number; x1: number; y0: number; y1: number }[]> {
  const html = await poppler('pdftotext', ['-bbox', '-f', '1', '-l', '1', '-enc', 'UTF-8', save(pdf), '-']);
  return [
    ...html.matchAll(/<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">([^<]*)<\/word>/g),
  ].map((m) => ({ text: m[5]!, x: Number(m[1]), x1: Number(m[3]), y0: Number(m[2]), y1: Number(m[4]) }));
}

/** What `pdfinfo` says (pages, ...) and `pdfinfo -custom` (the whole Info dictionary), as key/value pairs. */
async function pdfInfo(pdf: Buffer): Promise<Map<string, string>> {
  const path = save(pdf);
  const out = (await poppler('pdfinfo', [path])) + (await poppler('pdfinfo', ['-custom', path]));
  return new Map(
    out
      .split('\n')
      .map((line) => /^([A-Za-z ]+?):\s+(.*)$/.exec(line))
      .filter((m) => m !== null)
      .map((m) => [m[1]!, m[2]!] as [string, string]),
  );
}

/** Page 1 at 60 dpi as a PNG under test-artifacts/, for a person to look at; returns its bytes. */
async function pageOnePng(pdf: Buffer, name: string): Promise<Buffer> {
  mkdirSync(artifactsDir, { recursive: true });
  const prefix = join(artifactsDir, name);
  await poppler('pdftoppm', ['-png', '-r', '60', '-f', '1', '-l', '1', '-singlefile', save(pdf), prefix]);
  return readFileSync(`${prefix}.png`);
}

/** Each claim as the PDF draws it: its id, then its text (a claim's text alone may also be its source's passage). */
const claimsAsDrawn = (claims: ParsedClaim[]) => claims.map((c) => `[${c.id}] ${c.text}`);

/** The texts of `expected` that the extracted text does not contain, whitespace aside (lines wrap anywhere). */
function notShown(text: string, expected: string[]): string[] {
  const shown = squeeze(text);
  return expected.filter((e) => !shown.includes(squeeze(asDrawn(e))));
}

const hash = `sha256:${'3f'.repeat(32)}`;
const digest = `sha256:${'c7'.repeat(32)}`;
const input = (markdown: string, over: Partial<PdfInput> = {}): PdfInput => ({
  markdown,
  title: 'Connection pooling in PostgreSQL',
  contentHash: hash,
  reportDigest: digest,
  editionId: '6d0f3c1e-8d4a-4f7e-9a51-2b7c9e0d1a44',
  createdAt: '2026-10-01T12:34:56.000Z',
  ...over,
});

/** Every element the renderer lays out, with the artifact format's parts and a few claims in awkward places. */
const everything = `---
title: "Every element: a hand-written artifact"
topics: [testing, pdf]
floor: 0.8
description: Headings, lists, quotes, code, tables, links and Unicode, all in one file.
---

# Every element: a hand-written artifact

A paragraph with **bold**, *italic*, ***both***, \`inline code\`, ~~struck~~, a [link](https://example.org/docs "t")
and an autolink https://example.org/auto, an escaped \\* star, &amp; an entity, and a hard  
line break.

## Claims

- [c1] In transaction pooling mode a server connection is assigned to a client only during a transaction. (source: pgbouncer, locator: "Pool modes")
- [c2] The server connection is put back into the pool when the transaction is over. (source: pgbouncer, locator: "Pool modes")
- [x] A claim whose id reads like a checked task box is still a claim. (source: pg-wiki)
- [a-claim-identifier-forty-characters-long] A long claim id gets a line of its own. (source: pgbouncer)
- [c5] Prepared statements survive transaction pooling. (source: missing-source)
- A list item that is not a claim.
  - A nested item.
    - Nested deeper, with \`code\`.

1. An ordered item.
2. A second ordered item.

| Setting | Default | Meaning |
|---|---:|---|
| \`pool_mode\` | session | When a server connection goes back to the pool |
| \`max_client_conn\` | 100 | Largest number of client connections |

---

\`\`\`sql
SELECT pid, usename, state FROM pg_stat_activity WHERE state = 'idle in transaction';
\`\`\`

\`\`\`
- [c6] A claim line inside a code fence is still read by the verifier. (source: pgbouncer)
\`\`\`

<div class="note">Raw HTML is shown as its source.</div>

<!-- A comment is not shown.
- [c7] A claim line inside an HTML comment is still read by the verifier. (source: pgbouncer)
-->

## Sources

### [pgbouncer] PgBouncer documentation
#### Pool modes
> In transaction pooling mode, a server connection is assigned to a client only during a transaction.
> When PgBouncer notices that the transaction is over, the server connection is put back into the pool.

#### Limits
> max_client_conn is the maximum number of client connections allowed.

### [pg-wiki] PostgreSQL wiki: prepared statements
Text that is not quoted is part of the source as well.

> A nested quote:
> > quoted twice.
`;

test('[DELIVERY-PDF] a corpus artifact: the title, the edition it renders and every claim are on its pages', {
  skip,
}, async () => {
  const a = corpusArtifact('pdf-test', 3);
  const claims = parseArtifact(a.content).claims;
  assert.ok(claims.length >= 4);
  const pdf = await renderPdf(input(a.content, { title: a.title, editionId: a.editionId, createdAt: a.createdAt }));
  assert.equal(pdf.subarray(0, 5).toString(), '%PDF-');
  const text = await pdfText(pdf);
  assert.deepEqual(notShown(text, [a.title, a.editionId, hash, digest]), []);
  assert.deepEqual(notShown(text, claimsAsDrawn(claims)), [], 'claims missing from the PDF');
  // Each claim with its id and its citation; each source with its title and sections.
  for (const c of claims) {
    assert.deepEqual(notShown(text, [`[${c.id}]`, `Source: [${c.sourceId}]`, `section "${c.locator}"`]), []);
  }
  for (const s of parseArtifact(a.content).sources.values()) {
    assert.deepEqual(notShown(text, [`[${s.id}] ${s.title}`, ...s.text.split('\n')]), []);
  }
  // The front matter is a table, not YAML.
  assert.doesNotMatch(text, /^topics: \[/m);
  assert.deepEqual(
    notShown(text, ['FRONT MATTER', `topics${parseArtifact(a.content).frontMatter.topics!.join(', ')}`]),
    [],
  );
  const png = await pageOnePng(pdf, 'pdf-corpus-page1');
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
});

test('[DELIVERY-PDF] a hand-written artifact with every element: text, structure and every claim the verifier reads', {
  skip,
}, async () => {
  const claims = parseArtifact(everything).claims;
  assert.deepEqual(
    claims.map((c) => c.id),
    ['c1', 'c2', 'x', 'a-claim-identifier-forty-characters-long', 'c5', 'c6', 'c7'],
  );
  const pdf = await renderPdf(
    input(everything, { title: 'Every element: a hand-written artifact', reportDigest: null }),
  );
  const text = await pdfText(pdf);
  assert.deepEqual(notShown(text, claimsAsDrawn(claims)), [], 'claims missing from the PDF');
  assert.deepEqual(
    notShown(text, [
      'Every element: a hand-written artifact',
      'not judged yet',
      'descriptionHeadings, lists, quotes, code, tables, links and Unicode, all in one file.',
      'A paragraph with bold, italic, both, inline code, struck, a link (https://example.org/docs)',
      'https://example.org/auto, an escaped * star, & an entity',
      '[x]',
      'A claim whose id reads like a checked task box is still a claim.',
      'Source: [pg-wiki] PostgreSQL wiki: prepared statements, the whole source',
      "Source: [missing-source], the whole source (not among this file's sources)",
      'A list item that is not a claim.',
      'Nested deeper, with code.',
      '1. An ordered item.',
      'SettingDefaultMeaning',
      'pool_modesessionWhen a server connection goes back to the pool',
      "SELECT pid, usename, state FROM pg_stat_activity WHERE state = 'idle in transaction';",
      '<div class="note">Raw HTML is shown as its source.</div>',
      '[pgbouncer] PgBouncer documentation',
      'Pool modes',
      'When PgBouncer notices that the transaction is over, the server connection is put back into the pool.',
      'quoted twice.',
      // The claims inside a code fence and a comment: the fence shows its line, and both are listed as claims.
      'Claims not shown as a list above',
      '[c7] A claim line inside an HTML comment is still read by the verifier.',
    ]),
    [],
  );
  assert.ok(!text.includes('A comment is not shown'), 'an HTML comment is not shown');
  // Two citations of c6: the fenced line as code, then the claim in the appendix.
  assert.equal(squeeze(text).split(squeeze('[c6] A claim line inside a code fence')).length - 1, 2);
  const png = await pageOnePng(pdf, 'pdf-every-element-page1');
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
  // 60 dpi of A4 (595 x 842 points): about 496 x 702 pixels.
  assert.ok(Math.abs(png.readUInt32BE(16) - 496) <= 1 && Math.abs(png.readUInt32BE(20) - 702) <= 1);
});

test('[DELIVERY-PDF] the claim check fails when a claim is not in the PDF', { skip }, async () => {
  const { markdown } = claimsArtifact(12);
  const claims = claimsAsDrawn(parseArtifact(markdown).claims);
  const without = markdown
    .split('\n')
    .filter((line) => !line.startsWith('- [c5] '))
    .join('\n');
  const text = await pdfText(await renderPdf(input(without)));
  assert.deepEqual(notShown(text, claims), [claims[4]]);
});

test('[DELIVERY-PDF-META] the Info dictionary names the judged bytes: content hash, report digest, edition', {
  skip,
}, async () => {
  const a = corpusArtifact('pdf-test', 7);
  const pdf = await renderPdf(input(a.content, { title: a.title, editionId: a.editionId }));
  const info = await pdfInfo(pdf);
  assert.equal(info.get('Title'), a.title);
  assert.equal(info.get('Author'), 'Assay');
  assert.equal(info.get('Creator'), 'Assay');
  assert.equal(info.get('ContentHash'), hash);
  assert.equal(info.get('ReportDigest'), digest);
  assert.equal(info.get('EditionId'), a.editionId);
  assert.match(info.get('RendererVersion') ?? '', /^pdf\/\d+\.\d+\.\d+$/);
  assert.match(info.get('Subject') ?? '', new RegExp(`${a.editionId}.*${hash}.*${digest}`));
  assert.match(info.get('Keywords') ?? '', new RegExp(`Assay, ${a.topics[0]}, .*${a.editionId}`));
  // The edition's time, not the time of rendering.
  assert.equal(info.get('CreationDate'), 'Thu Oct  1 12:34:56 2026 UTC');
  assert.equal(info.get('ModDate'), 'Thu Oct  1 12:34:56 2026 UTC');
  assert.ok(Number(info.get('Pages')) >= 1);

  const unjudged = await pdfInfo(await renderPdf(input(a.content, { reportDigest: null })));
  assert.equal(unjudged.get('ContentHash'), hash);
  assert.equal(unjudged.has('ReportDigest'), false, 'no report digest before the edition is judged');
  assert.match(unjudged.get('Subject') ?? '', /not judged yet/);
});

test('[DELIVERY-PDF-DETERMINISTIC] the same input gives the same bytes; the edition time is the only date', async () => {
  const { markdown, title } = claimsArtifact(40);
  const one = await renderPdf(input(markdown, { title }));
  // Interleaved renders share nothing that changes the bytes.
  const [two, three] = await Promise.all([renderPdf(input(markdown, { title })), renderPdf(input(everything))]);
  assert.ok(one.equals(two), 'two renders of one input differ');
  assert.ok(!one.equals(three));
  assert.ok((await renderPdf(input(everything))).equals(three));
  const later = await renderPdf(input(markdown, { title, createdAt: '2026-10-02T12:34:56.000Z' }));
  assert.ok(!one.equals(later), 'the creation date is part of the bytes');
  const dates = one.toString('latin1').match(/\(D:\d{14}Z\)/g);
  assert.deepEqual([...new Set(dates)], ['(D:20261001123456Z)']);
});

test('[DELIVERY-PDF-DETERMINISTIC] a fresh process renders the same bytes as one whose fonts and shaped words are warm', async () => {
  // Fonts are opened once per process and shaped words are remembered across documents; neither may show.
  const { markdown, title } = scriptsArtifact();
  const scripts = input(markdown, { title });
  const warm = await renderPdf(scripts);
  assert.ok((await renderPdf(scripts)).equals(warm));
  const inputPath = join(workDir, 'scripts.json');
  const outputPath = join(workDir, 'scripts-fresh.pdf');
  writeFileSync(inputPath, JSON.stringify(scripts));
  const script = new URL('../support/render-pdf.ts', import.meta.url).pathname;
  await run(process.execPath, ['--import', 'tsx', script, inputPath, outputPath]);
  assert.ok(readFileSync(outputPath).equals(warm), 'a fresh process rendered other bytes');
});

test('[DELIVERY-PDF-UNICODE] each character is drawn, left out when invisible, or written as its code point: never dropped', () => {
  const cases: [string, string, string][] = [
    ['Western European letters and signs', 'café naïve Größe – — € “quotes” •', 'café naïve Größe – — € “quotes” •'],
    ['composed first (NFC)', 'cafe\u0301', 'café'],
    [
      'arrows and comparisons',
      'a → b ← c ⇒ d, x ≥ 1, y ≤ 2, z ≠ 3, w ≈ 4',
      'a → b ← c ⇒ d, x ≥ 1, y ≤ 2, z ≠ 3, w ≈ 4',
    ],
    ['letters beyond Latin-1', 'Dvořák, Łódź, Việt Nam', 'Dvořák, Łódź, Việt Nam'],
    ['Greek, Cyrillic and Japanese', 'Ελληνικά русский 日本語 カタカナ', 'Ελληνικά русский 日本語 カタカナ'],
    ['invisible format characters are left out', 'zero\u200bwidth co\u00adoperation\ufeff', 'zerowidth cooperation'],
    ['emoji, joined or not', 'ok 😀, family 👨\u200d👩', 'ok <U+1F600>, family <U+1F468><U+1F469>'],
    ['Hebrew (right to left)', 'שלום', '<U+05E9><U+05DC><U+05D5><U+05DD>'],
    ['Arabic (right to left, joined)', 'سلام', '<U+0633><U+0644><U+0627><U+0645>'],
    ['Devanagari (shaped)', 'नमस्ते', '<U+0928><U+092E><U+0938><U+094D><U+0924><U+0947>'],
    ['Hangul (no face has it)', '한국', '<U+D55C><U+AD6D>'],
    ['controls and lone surrogates', 'a\u0007b\ud800c\u0085d\te', 'a<U+0007>b<U+D800>c<U+0085>d e'],
  ];
  for (const [what, from, to] of cases) assert.equal(asDrawn(from), to, what);
  assert.deepEqual(undrawnCharacters('Zürich → 東京', 'שלום 😀 नमस्ते, שלום again'), [
    { reason: 'rightToLeft', count: 8, scripts: ['Hebrew'], codePoints: [0x5d5, 0x5dc, 0x5dd, 0x5e9] },
    { reason: 'shaping', count: 6, scripts: ['Devanagari'], codePoints: [0x924, 0x928, 0x92e, 0x938, 0x947, 0x94d] },
    { reason: 'noGlyph', count: 1, scripts: [], codePoints: [0x1f600] },
  ]);
  assert.deepEqual(undrawnCharacters('Привет — 東京', 'Ελληνικά, Zürich'), []);
});

test('[DELIVERY-PDF-SCRIPTS] Greek, Russian and Japanese in the title, body, table, code, claims, sources and footer: every word on the pages', {
  skip,
}, async () => {
  const { markdown, title, words } = scriptsArtifact();
  const pdf = await renderPdf(input(markdown, { title }));
  const text = await pdfText(pdf);
  assert.doesNotMatch(text, /<U\+[0-9A-F]{4,6}>/, 'no character is written as its code point');
  assert.doesNotMatch(text, /code point/, 'page 1 has no note about characters not drawn');
  assert.deepEqual(
    words.filter((w) => !squeeze(text).includes(w)),
    [],
    'words missing from the PDF',
  );
  assert.deepEqual(notShown(text, claimsAsDrawn(parseArtifact(markdown).claims)), [], 'claims missing from the PDF');
  assert.deepEqual(
    notShown(text, [
      title,
      'Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο.',
      '東京は日本の首都であり、世界で最も人口の多い都市圏の一つです。吾輩は猫である。名前はまだ無い。',
      'Grüße aus Zürich: the café by the Limmat opens at seven, and Straße is spelled with ß.',
      'print("Привет, κόσμε, こんにちは — Zürich")',
      'Source: [s1] Заметки · Σημειώσεις · メモ, section "Notes"',
      // The running footer, in the same fonts.
      `${title} · ${input('').editionId}`,
    ]),
    [],
  );
  // Every font is embedded as a subset of the glyphs used: the whole of Noto Sans JP alone is 5.5 MB.
  const fonts = await poppler('pdffonts', [save(pdf)]);
  const rows = fonts
    .split('\n')
    .slice(2)
    .filter((line) => line.trim() !== '');
  assert.ok(
    rows.some((row) => /\+NotoSansJP-Regular\s/.test(row)) && rows.some((row) => /\+NotoSans-Regular\s/.test(row)),
  );
  for (const row of rows) assert.match(row, /^[A-Z]{6}\+\S+\s+CID TrueType\s+Identity-H\s+yes yes yes /, row);
  assert.ok(pdf.length < 150_000, `${pdf.length} bytes`);
  const png = await pageOnePng(pdf, 'pdf-scripts-page1');
  assert.equal(png.subarray(1, 4).toString(), 'PNG');
});

test('[DELIVERY-PDF-SCRIPTS] Japanese breaks between characters; a line of code keeps its columns with wide characters', {
  skip,
}, async () => {
  // 400 kanji and kana with no space: pdfkit breaks between characters (UAX #14), so it fills lines like prose.
  const japanese = '吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。'.repeat(13).slice(0, 400);
  const pdf = await renderPdf(input(`${japanese}\n\n\`\`\`\n${'東京'.repeat(60)}\n\`\`\``));
  const lines = (await pdfText(pdf)).split('\n');
  const prose = lines.filter((l) => l.startsWith('吾輩') || (l.length > 10 && japanese.includes(l.trim())));
  assert.ok(prose.length >= 8, `${prose.length} lines of prose`);
  assert.equal(squeeze(prose.join('')), squeeze(japanese));
  for (const l of prose.slice(0, -1)) assert.ok(l.length >= 35, `a short line: ${l}`);
  // 120 wide characters, two columns each, in lines of 89 columns: 44 characters, 44, then 32; nothing between
  // them reads as a space.
  const code = lines.filter((l) => /^(東京)+$/.test(l.trim()));
  assert.deepEqual(
    code.map((l) => l.trim().length),
    [44, 44, 32],
  );
  // Each as wide as its columns: 88 of 0.6 em at 8.5 pt.
  const codeWords = (await pdfWords(pdf)).filter((w) => /^(東京)+$/.test(w.text));
  assert.deepEqual(
    codeWords.map((w) => Math.round(w.x1 - w.x)),
    [449, 449, 326],
  );
});

test('[DELIVERY-PDF-SCRIPTS] a table row of several lines of Japanese is as tall as its text: the next row starts below it', {
  skip,
}, async () => {
  const tall = '東京は日本の首都であり、世界で最も人口の多い都市圏の一つです。'.repeat(4);
  const pdf = await renderPdf(input(`| 都市 | 説明 |\n|---|---|\n| 東京 | ${tall} |\n| 大阪 | 次の行 |\n`));
  const words = await pdfWords(pdf);
  const cell = words.filter((w) => w.x > 250 && w.y0 > words.find((x) => x.text === '説明')!.y1);
  const next = words.find((w) => w.text === '大阪')!;
  const above = cell.filter((w) => w.y0 < next.y0);
  assert.ok(above.length >= 4, `${above.length} lines of the tall cell`);
  assert.equal(squeeze(above.map((w) => w.text).join('')), squeeze(tall));
  assert.ok(next.y0 >= Math.max(...above.map((w) => w.y1)), 'the next row overlaps the tall one');
});

test('[DELIVERY-PDF-SCRIPTS] right-to-left and shaped scripts and emoji are written as code points, and page 1 names exactly which', {
  skip,
}, async () => {
  const markdown = [
    '## Claims',
    '',
    '- [c1] Shalom is שלום and salaam is سلام. (source: s)',
    '- [c2] Namaste is नमस्ते, written 😀 too. (source: s)',
    '',
    '## Sources',
    '',
    '### [s] Приветствия',
    '> Shalom is שלום.',
  ].join('\n');
  const pdf = await renderPdf(input(markdown, { title: 'Greetings: שלום' }));
  const text = await pdfText(pdf);
  assert.deepEqual(
    notShown(text, [
      'Greetings: <U+05E9><U+05DC><U+05D5><U+05DD>',
      '[c1] Shalom is <U+05E9><U+05DC><U+05D5><U+05DD> and salaam is <U+0633><U+0644><U+0627><U+0645>.',
      '[c2] Namaste is <U+0928><U+092E><U+0938><U+094D><U+0924><U+0947>, written <U+1F600> too.',
      'Source: [s] Приветствия',
      '23 characters of this edition are written as their code point instead, such as <U+05D5>:',
      '16 in Hebrew and Arabic, written right to left, which this PDF does not lay out: ' +
        'U+05D5, U+05DC, U+05DD, U+05E9, U+0627, U+0633, U+0644, U+0645;',
      '6 in Devanagari, whose letters join or change form, which this PDF does not lay out: ' +
        'U+0924, U+0928, U+092E, U+0938, U+0947, U+094D;',
      '1 that none of its fonts has (control characters, emoji, and scripts other than these): U+1F600.',
    ]),
    [],
  );
  await pageOnePng(pdf, 'pdf-scripts-undrawn-page1');
});

test('[DELIVERY-PDF-BOUNDS] a 200-claim artifact renders on several pages, every claim on them', {
  skip,
}, async () => {
  const { markdown, title } = claimsArtifact(200);
  const claims = parseArtifact(markdown).claims;
  assert.equal(claims.length, 200);
  // Its speed is measured by `npm run bench:delivery`, not asserted here (about 150 ms cold, 55 ms warm).
  const pdf = await renderPdf(input(markdown, { title }));
  assert.ok(Number((await pdfInfo(pdf)).get('Pages')) > 1);
  const text = await pdfText(pdf);
  assert.deepEqual(notShown(text, claimsAsDrawn(claims)), [], 'claims missing from the PDF');
  assert.deepEqual(notShown(text, ['Page 1 of', 'Page 2 of']), []);
});

test('[DELIVERY-PDF-BOUNDS] odd but valid Markdown renders; the largest edition written to be slow renders in bounded time', async () => {
  const odd: [string, string][] = [
    ['empty', ''],
    ['front matter only', '---\ntitle: x\n---'],
    ['unclosed front matter', '---\ntitle: x\n\n# Body'],
    ['CRLF and lone CR', '# a\r\n\r\n- [c1] x (source: s)\rmore\r\n'],
    ['tabs and controls', 'a\tb\u0001c\u007f\n\n\tcode\ttab'],
    ['a list nested 200 deep', Array.from({ length: 200 }, (_, i) => `${' '.repeat(i * 2)}- item ${i}`).join('\n')],
    ['a table of 30 columns', `|${'a|'.repeat(30)}\n|${'-|'.repeat(30)}\n|${'b|'.repeat(30)}`],
    ['a table cell taller than a page', `|a|b|\n|-|-|\n|${'word '.repeat(20_000)}|x|`],
    ['a code line of 60,000 characters', `\`\`\`\n${'y'.repeat(60_000)}\n\`\`\``],
    ['20,000 unclosed links', '[a]('.repeat(20_000)],
    ['an unclosed code fence', '## Claims\n\n```\n- [c1] fenced (source: s)'],
    ['headings only', Array.from({ length: 500 }, (_, i) => `${'#'.repeat((i % 6) + 1)} h${i}`).join('\n\n')],
  ];
  for (const [what, markdown] of odd) {
    const out = await renderPdf(input(markdown));
    assert.equal(out.subarray(0, 5).toString(), '%PDF-', what);
  }
  // The largest edition, written to be slow: emphasis delimiters marked's inline pass is quadratic in, a word
  // longer than any line, thousands of nested quotes.
  const fill = (unit: string) => unit.repeat(Math.floor(pdfMarkdownCharsMax / unit.length));
  for (const hostile of [
    fill(`${'*a **b *c **d'.repeat(9)}\n\n`),
    'x'.repeat(pdfMarkdownCharsMax),
    `${'>'.repeat(20_000)} deep`,
  ]) {
    const t0 = performance.now();
    const out = await renderPdf(input(hostile));
    assert.ok(
      performance.now() - t0 < 20_000,
      `${hostile.slice(0, 20)}... took ${(performance.now() - t0).toFixed(0)} ms`,
    );
    assert.equal(out.subarray(0, 5).toString(), '%PDF-');
  }
  await assert.rejects(renderPdf(input('x'.repeat(pdfMarkdownCharsMax + 1))), /over 512000 characters/);
});
