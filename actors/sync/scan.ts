// The injection scan of a snapshot before it is committed (docs/sync.md, Injection scan). Two kinds of finding:
// structural ones (an absolute path, a path that climbs out with `..`, a path through one of the snapshot's own
// symlinks, a symlink whose target leaves the folder, resolved through the snapshot's other links) make
// a snapshot that cannot be restored safely, so they refuse the commit; content ones (text aimed at a model, hidden
// Unicode) are attached to the revision and flagged, because the owner's own notes may quote such text on purpose,
// and every reader of the revision (the CLI, `restore`, the export) shows them.
import type { SyncEntryT, SyncFinding } from '../../contracts/index.ts';

/** Links followed at most while resolving one path (Linux's own bound, past which it answers ELOOP). */
const linkFollowsMax = 40;
/**
 * Path segments the resolution of one snapshot's links may step through in all, so that a hostile snapshot (links
 * in chains of 40, with 4 KiB targets) cannot hold the gateway's event loop for long. A link's outcome is remembered
 * once known, so a real folder's links take a few steps each. Past the bound, the links left are refused unchecked.
 */
const resolveStepsMax = 4_000_000;

export function scanPaths(files: readonly SyncEntryT[]): SyncFinding[] {
  const out: SyncFinding[] = [];
  const tree = new LinkTree(files);
  for (const f of files) {
    const p = f.path;
    if (isAbsolute(p)) {
      out.push({ type: 'absolute_path', path: p, detail: 'the path is absolute; paths are relative' });
      continue;
    }
    if (climbs(p)) {
      out.push({
        type: 'path_traversal',
        path: p,
        detail: 'the path has a `..`, `.` or empty segment, or a backslash',
      });
      continue;
    }
    const through = tree.linkAbove(p);
    if (through !== null) {
      out.push({
        type: 'path_through_symlink',
        path: p,
        detail: `the path passes through the snapshot's symlink ${shown(through)}, so it would be written where that link points`,
      });
      continue;
    }
    if (f.type !== 'symlink') continue;
    const outcome = tree.resolve(p);
    if (outcome === 'inside') continue;
    const t = shown(f.target);
    const detail =
      outcome === 'absolute'
        ? `the link points to the absolute path ${t}`
        : outcome === 'outside'
          ? `the link's target ${t} is outside the folder`
          : outcome === 'loop'
            ? `the link's target ${t} does not resolve within ${linkFollowsMax} links (a loop)`
            : `the snapshot's links take more than ${resolveStepsMax} steps to resolve; this one was not checked`;
    out.push({ type: 'symlink_escape', path: p, detail });
  }
  return out;
}

/** A path or target in a finding's words, cut short: a finding names it, it need not carry 4 KiB of it. */
function shown(p: string): string {
  return p.length <= 200 ? p : `${p.slice(0, 200)}...`;
}

function isAbsolute(p: string): boolean {
  return p.startsWith('/') || p.startsWith('\\') || /^[A-Za-z]:/.test(p) || p.startsWith('~');
}

/** A path must be plain segments: no `..`, `.` or empty segment, no backslash (a separator on Windows), no NUL. */
function climbs(p: string): boolean {
  if (p.includes('\\') || p.includes('\0')) return true;
  return p.split('/').some((s) => s === '' || s === '.' || s === '..');
}

/** A directory or link of the tree a snapshot makes, as far as its links need it. */
interface TreeNode {
  parent: TreeNode | null;
  children: Map<string, TreeNode> | null;
  /** The link's target, when this node is one of the snapshot's links. */
  target: string | null;
  /** A link's outcome once known: where it lands inside the folder, or why it lands nowhere inside. */
  outcome: Landing | 'outside' | 'loop' | 'absolute' | null;
}

/** A place inside the folder: a node of the tree, then `beyond` names below it that the tree does not have. */
interface Landing {
  at: TreeNode;
  beyond: number;
}

/**
 * The snapshot's links in the tree of their paths, resolved as the file system would resolve them in the restored
 * folder: `..` goes up, and a link is replaced by its target, resolved from the link's directory. Only the
 * snapshot's own links exist in that tree (a step is one lookup); a name that is not in it is at worst dangling inside
 * the folder, and so is anything under it. A link's outcome is kept once known: the next link through it goes on from
 * where it lands, or fails the same way.
 */
class LinkTree {
  private readonly root: TreeNode = { parent: null, children: null, target: null, outcome: null };
  /** Each link's node, by its path. */
  private readonly links = new Map<string, TreeNode>();
  private steps = 0;

  constructor(files: readonly SyncEntryT[]) {
    for (const f of files) {
      if (f.type !== 'symlink') continue;
      let n = this.root;
      for (const s of f.path.split('/')) {
        n.children ??= new Map();
        let c = n.children.get(s);
        if (c === undefined) {
          c = { parent: n, children: null, target: null, outcome: null };
          n.children.set(s, c);
        }
        n = c;
      }
      n.target = f.target;
      this.links.set(f.path, n);
    }
  }

  /** The first proper prefix of `path` that is one of the snapshot's links, or null. */
  linkAbove(path: string): string | null {
    for (let i = path.indexOf('/'); i !== -1; i = path.indexOf('/', i + 1)) {
      const prefix = path.slice(0, i);
      if (this.links.has(prefix)) return prefix;
    }
    return null;
  }

  /** Whether the link at `linkPath` lands inside the folder, or why not. */
  resolve(linkPath: string): 'inside' | 'outside' | 'loop' | 'absolute' | 'too_complex' {
    const link = this.links.get(linkPath)!;
    if (link.outcome === null) {
      const r = this.walk(link);
      if (r === 'too_complex') return r;
      link.outcome = r;
    }
    return typeof link.outcome === 'string' ? link.outcome : 'inside';
  }

  private walk(link: TreeNode): Landing | 'outside' | 'loop' | 'absolute' | 'too_complex' {
    let at = link.parent!;
    let beyond = 0;
    let follows = 0;
    const pending: string[] = [];
    const first = this.follow(link.target!, pending);
    if (first !== null) return first;
    while (pending.length > 0) {
      const s = pending.pop()!;
      if (s.includes('\\') || s.includes('\0')) return 'outside';
      if (s === '' || s === '.') continue;
      if (s === '..') {
        if (beyond > 0) beyond--;
        else if (at.parent === null) return 'outside';
        else at = at.parent;
        continue;
      }
      const next = beyond > 0 ? undefined : at.children?.get(s);
      if (next === undefined) {
        beyond++;
        continue;
      }
      if (next.target === null) {
        at = next;
        continue;
      }
      if (++follows > linkFollowsMax) return 'loop';
      if (next.outcome !== null) {
        // Known already: go on from where that link lands, or fail as it did.
        if (typeof next.outcome === 'string') return next.outcome;
        at = next.outcome.at;
        beyond = next.outcome.beyond;
        continue;
      }
      const failed = this.follow(next.target, pending);
      if (failed !== null) return failed;
      at = next.parent!;
    }
    return { at, beyond };
  }

  /** Queue a target's segments to be walked, counting them against the snapshot's bound. */
  private follow(target: string, pending: string[]): 'absolute' | 'too_complex' | null {
    if (isAbsolute(target)) return 'absolute';
    if (this.steps > resolveStepsMax) return 'too_complex';
    const segments = target.split('/');
    this.steps += segments.length;
    for (let i = segments.length - 1; i >= 0; i--) pending.push(segments[i]!);
    return null;
  }
}

/**
 * Phrases aimed at a language model rather than a reader: override attempts, fake role and system markers of the
 * common chat formats. Each is a whole-phrase pattern, case-insensitive, so prose about the topic rarely matches.
 */
const instructionPatterns: { name: string; re: RegExp }[] = [
  {
    name: 'asks to ignore earlier instructions',
    re: /\b(ignore|disregard|forget|override)\s+(all\s+|any\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|preceding)\s+(instructions|prompts?|rules|directions|context)/i,
  },
  { name: 'claims a new system prompt', re: /\b(new|updated|real)\s+system\s+(prompt|instructions)\s*:/i },
  { name: 'addresses the model directly', re: /\b(you are now|from now on,? you (are|will|must))\b/i },
  { name: 'asks to reveal the system prompt', re: /\b(reveal|print|repeat|show)\s+(your|the)\s+system\s+prompt/i },
  {
    name: 'chat-format role marker',
    re: /<\|(im_start|im_end|system|assistant|user|endoftext)\|>|\[\/?INST\]|<<\/?SYS>>/i,
  },
  { name: 'fake system header', re: /^\s*(#{1,6}\s*)?(system|assistant)\s*(message|prompt)?\s*:\s*$/im },
  {
    name: 'tells an AI agent to act secretly',
    re: /\b(AI|assistant|agent|model|LLM)s?\b[^.\n]{0,60}\b(do not|don't|never)\s+(tell|inform|mention|reveal)\b[^.\n]{0,40}\b(user|human|owner)/i,
  },
];

const bidiRe = /[\u202A-\u202E\u2066-\u2069]/u;
const tagRe = /[\u{E0000}-\u{E007F}]/u;
/** Two or more zero-width characters in a row: nothing a person types, a common way to hide text. */
const zeroWidthRunRe = /(?:\u200B|\u200C|\u200D|\u2060|\uFEFF){2,}/u;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Content findings of one file's bytes (without the path, which the caller adds): null when the bytes are not text
 * (a NUL byte, or not UTF-8), so binary files are not scanned. At most one finding per type and line.
 */
export function scanContent(bytes: Uint8Array): Omit<SyncFinding, 'path'>[] | null {
  if (bytes.subarray(0, 8192).includes(0)) return null;
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    // A cut in the middle of a character at the scan limit is still text.
    try {
      text = utf8.decode(bytes.subarray(0, Math.max(0, bytes.byteLength - 3)));
    } catch {
      return null;
    }
  }
  const out: Omit<SyncFinding, 'path'>[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    for (const p of instructionPatterns) {
      if (p.re.test(line)) {
        out.push({ type: 'model_instruction', line: i + 1, detail: p.name });
        break;
      }
    }
    if (bidiRe.test(line)) {
      out.push({ type: 'bidi_override', line: i + 1, detail: 'a bidirectional override or isolate character' });
    }
    if (tagRe.test(line)) {
      out.push({ type: 'tag_characters', line: i + 1, detail: 'Unicode tag characters (invisible text)' });
    }
    if (zeroWidthRunRe.test(line)) {
      out.push({ type: 'zero_width_run', line: i + 1, detail: 'a run of zero-width characters' });
    }
    if (out.length >= 100) break;
  }
  return out;
}
