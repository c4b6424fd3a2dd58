// Helpers for tests and benchmarks of the PDF renderer: artifacts of a chosen size built from the sandbox corpus'
// real source text, and poppler's tools (pdftotext, pdfinfo, pdftoppm) to read what a PDF shows.
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

export const popplerTools = ['pdftotext', 'pdfinfo', 'pdftoppm'] as const;

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
