// The injection scan of a snapshot before it is committed (docs/sync.md, Injection scan). Two kinds of finding:
// structural ones (an absolute path, a path that climbs out with `..`, a symlink whose target leaves the folder) make
// a snapshot that cannot be restored safely, so they refuse the commit; content ones (text aimed at a model, hidden
// Unicode) are attached to the revision and flagged, because the owner's own notes may quote such text on purpose,
// and every reader of the revision (the CLI, `restore`, the export) shows them.
import type { SyncEntryT, SyncFinding } from '../../contracts/index.ts';

/** Structural findings of one snapshot's paths and symlinks. */
export function scanPaths(files: readonly SyncEntryT[]): SyncFinding[] {
  const out: SyncFinding[] = [];
  for (const f of files) {
    const p = f.path;
    if (isAbsolute(p)) out.push({ type: 'absolute_path', path: p, detail: 'the path is absolute; paths are relative' });
    else if (climbs(p)) {
      out.push({
        type: 'path_traversal',
        path: p,
        detail: 'the path has a `..`, `.` or empty segment, or a backslash',
      });
    }
    if (f.type === 'symlink') {
      const t = f.target;
      if (isAbsolute(t)) {
        out.push({ type: 'symlink_escape', path: p, detail: `the link points to the absolute path ${t}` });
      } else if (escapes(p, t)) {
        out.push({ type: 'symlink_escape', path: p, detail: `the link's target ${t} is outside the folder` });
      }
    }
  }
  return out;
}

function isAbsolute(p: string): boolean {
  return p.startsWith('/') || p.startsWith('\\') || /^[A-Za-z]:/.test(p) || p.startsWith('~');
}

/** A path must be plain segments: no `..`, `.` or empty segment, no backslash (a separator on Windows), no NUL. */
function climbs(p: string): boolean {
  if (p.includes('\\') || p.includes('\0')) return true;
  return p.split('/').some((s) => s === '' || s === '.' || s === '..');
}

/** Whether a relative symlink target, resolved from the link's directory, leaves the folder. */
function escapes(linkPath: string, target: string): boolean {
  if (target.includes('\\') || target.includes('\0')) return true;
  const parts = linkPath.split('/').slice(0, -1);
  for (const s of target.split('/')) {
    if (s === '' || s === '.') continue;
    if (s === '..') {
      if (parts.length === 0) return true;
      parts.pop();
    } else parts.push(s);
  }
  return false;
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
