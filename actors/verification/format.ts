// The artifact format: a context file in Markdown with optional front matter, a `## Claims` section whose items
// each cite a source and a locator, and a `## Sources` section holding the cited text. See docs/verification.md.

export interface ParsedClaim {
  id: string;
  text: string;
  sourceId: string;
  locator: string;
}

export interface ParsedSource {
  id: string;
  title: string;
  /** Text of each `#### <locator>` section, keyed by lower-cased locator. */
  sections: Map<string, string>;
  /** The whole source text (all sections). */
  text: string;
}

export interface ParsedArtifact {
  frontMatter: { title?: string; topics?: string[]; floor?: number; description?: string };
  claims: ParsedClaim[];
  sources: Map<string, ParsedSource>;
}

const claimLine =
  /^\s*[-*]\s+\[([A-Za-z0-9_.-]{1,40})\]\s+(.+?)\s*\(source:\s*([A-Za-z0-9_.-]{1,40})(?:\s*,\s*locator:\s*"([^"]{0,200})")?\s*\)\s*$/;
const sourceHeading = /^###\s+\[([A-Za-z0-9_.-]{1,40})\]\s*(.*)$/;

export function parseArtifact(content: string): ParsedArtifact {
  const lines = content.replace(/\r\n?/g, '\n').split('\n');
  let i = 0;
  const frontMatter: ParsedArtifact['frontMatter'] = {};
  if (lines[0]?.trim() === '---') {
    const end = lines.indexOf('---', 1);
    if (end > 0) {
      for (const line of lines.slice(1, end)) parseFrontMatterLine(line, frontMatter);
      i = end + 1;
    }
  }
  const claims: ParsedClaim[] = [];
  const sources = new Map<string, ParsedSource>();
  let section: 'none' | 'claims' | 'sources' = 'none';
  let source: { id: string; title: string; locator: string; parts: Map<string, string[]> } | null = null;
  const closeSource = () => {
    if (!source) return;
    const sections = new Map<string, string>();
    for (const [loc, body] of source.parts) sections.set(loc, body.join('\n').trim());
    const text = [...sections.values()].join('\n');
    if (!sources.has(source.id)) sources.set(source.id, { id: source.id, title: source.title, sections, text });
    source = null;
  };
  for (; i < lines.length; i++) {
    const line = lines[i]!;
    const h2 = /^##\s+(.+?)\s*$/.exec(line);
    if (h2 && !line.startsWith('###')) {
      closeSource();
      const name = h2[1]!.toLowerCase();
      section = name === 'claims' ? 'claims' : name === 'sources' ? 'sources' : 'none';
      continue;
    }
    if (section === 'claims') {
      const m = claimLine.exec(line);
      if (m) claims.push({ id: m[1]!, text: m[2]!.trim(), sourceId: m[3]!, locator: (m[4] ?? '').trim() });
    } else if (section === 'sources') {
      const sh = sourceHeading.exec(line);
      if (sh) {
        closeSource();
        source = { id: sh[1]!, title: sh[2]!.trim(), locator: '', parts: new Map([['', []]]) };
        continue;
      }
      if (!source) continue;
      const h4 = /^####\s+(.+?)\s*$/.exec(line);
      if (h4) {
        source.locator = h4[1]!.toLowerCase();
        if (!source.parts.has(source.locator)) source.parts.set(source.locator, []);
        continue;
      }
      source.parts.get(source.locator)!.push(line.replace(/^>\s?/, ''));
    }
  }
  closeSource();
  return { frontMatter, claims, sources };
}

function parseFrontMatterLine(line: string, fm: ParsedArtifact['frontMatter']): void {
  const m = /^([a-z_]+):\s*(.*)$/.exec(line.trim());
  if (!m) return;
  const [, key, raw] = m as unknown as [string, string, string];
  const value = raw.trim();
  if (key === 'title' || key === 'description') fm[key] = unquote(value);
  else if (key === 'floor') {
    const n = Number(value);
    if (Number.isFinite(n) && n >= 0 && n <= 1) fm.floor = n;
  } else if (key === 'topics') {
    const list = value.replace(/^\[|\]$/g, '');
    fm.topics = list
      .split(',')
      .map((t) => unquote(t.trim()))
      .filter(Boolean);
  }
}

const unquote = (s: string) => s.replace(/^["']|["']$/g, '');
