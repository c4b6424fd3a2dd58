// Helpers for tests and benchmarks of the PDF renderer: artifacts of a chosen size built from the sandbox corpus'
// real source text, one in Greek, Russian and Japanese, and poppler's tools (pdftotext, pdfinfo, pdftoppm, pdffonts) to
// read what a PDF shows.
import { execFileSync } from 'node:child_process';
import { sourcesSectionLines } from '../../actors/sandbox/corpus.ts';
import { corpusTopics } from '../../actors/sandbox/corpus-text.ts';

/**
 * An artifact in the format of docs/verification.md with `claimCount` claims, each a sentence of a corpus source
 * (with a counter, so every claim is distinct), citing that source and section; every cited source follows.
 */
export function claimsArtifact(claimCount: number): { markdown: string; title: string } {
  const passages = corpusTopics.flatMap((t) =>
    t.sources.flatMap((s) =>
      Object.entries(s.sections).flatMap(([locator, lines]) => lines.map((line) => ({ s, locator, line }))),
    ),
  );
  const cited = new Map<string, (typeof passages)[number]['s']>();
  const lines: string[] = [];
  for (let i = 0; i < claimCount; i++) {
    const p = passages[i % passages.length]!;
    cited.set(p.s.id, p.s);
    const text = `${p.line} (${i + 1})`;
    lines.push(`- [c${i + 1}] ${text} (source: ${p.s.id}, locator: "${p.locator}")`);
  }
  const title = `Field notes with ${claimCount} claims`;
  const markdown = [
    '---',
    `title: ${title}`,
    'topics: [postgresql, nats, http]',
    'floor: 0.7',
    '---',
    '',
    `# ${title}`,
    '',
    'Every claim below cites the passage it rests on.',
    '',
    '## Claims',
    '',
    ...lines,
    '',
    '## Sources',
    '',
    ...sourcesSectionLines(cited.values()),
  ].join('\n');
  return { markdown, title };
}

export const popplerTools = ['pdftotext', 'pdfinfo', 'pdftoppm', 'pdffonts'] as const;

/** The poppler tools this machine lacks. */
export function missingPopplerTools(): string[] {
  return popplerTools.filter((tool) => {
    try {
      execFileSync(tool, ['-v'], { stdio: 'ignore' });
      return false;
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT';
    }
  });
}

/** Text for comparing what a PDF shows with what went in: no whitespace at all, since lines wrap anywhere. */
export const squeeze = (s: string) => s.replace(/\s+/g, '');

/**
 * An artifact in Greek, Russian and Japanese with some Latin ("Zürich"): its title, front matter, prose, a heading,
 * a table, code, claims that quote their source, and the source. `words` are every word of its text (split at
 * spaces and punctuation; a run of Japanese, which has no spaces, is one), to look for on the pages.
 */
export function scriptsArtifact(): { markdown: string; title: string; words: string[] } {
  const title = 'Привет — 東京';
  const description = 'Ελληνικά, русский и 日本語 σε ένα αρχείο.';
  const prose = [
    'Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο. Съешь же ещё этих мягких французских булок, да выпей ' +
      'чаю. 東京は日本の首都であり、世界で最も人口の多い都市圏の一つです。吾輩は猫である。名前はまだ無い。',
    'Grüße aus Zürich: the café by the Limmat opens at seven, and Straße is spelled with ß.',
  ];
  const heading = 'Κεφάλαιο: Таблица и код';
  const table = [
    ['Язык', 'Λέξη', '言葉'],
    ['русский', 'καλημέρα', 'おはよう'],
  ];
  const code = 'print("Привет, κόσμε, こんにちは — Zürich")';
  const claims = [
    'Grüße aus Zürich: the café by the Limmat opens at seven.',
    'Москва — столица России, Αθήνα — πρωτεύουσα της Ελλάδας.',
    '東京は日本の首都です。',
  ];
  const sourceTitle = 'Заметки · Σημειώσεις · メモ';
  const markdown = [
    '---',
    `title: "${title}"`,
    'topics: [i18n, testing]',
    'floor: 0.7',
    `description: ${description}`,
    '---',
    '',
    `# ${title}`,
    '',
    ...prose.flatMap((p) => [p, '']),
    `## ${heading}`,
    '',
    `| ${table[0]!.join(' | ')} |`,
    '|---|---|---|',
    `| ${table[1]!.join(' | ')} |`,
    '',
    '```',
    code,
    '```',
    '',
    '## Claims',
    '',
    ...claims.map((c, i) => `- [c${i + 1}] ${c} (source: s1, locator: "Notes")`),
    '',
    '## Sources',
    '',
    `### [s1] ${sourceTitle}`,
    '#### Notes',
    ...claims.map((c) => `> ${c}`),
  ].join('\n');
  const words = [title, description, ...prose, heading, ...table.flat(), code, ...claims, sourceTitle]
    .flatMap((text) => text.split(/[\s\p{P}\p{S}]+/u))
    .filter((w) => w !== '');
  return { markdown, title, words: [...new Set(words)] };
}
