// The folder walk of `assay sync`: every file and symlink under the folder, in path order, less what `.gitignore`
// and `.assayignore` files exclude (each applies to its own directory and below, as git reads them; the `ignore`
// package matches the patterns) and `.git/` itself. Symlinks are recorded as links, never followed. Hashes are
// streamed and kept in a cache keyed by (path, size, mtime, inode), so an unchanged file is not read again.
import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { lstat, readdir, readFile, readlink } from 'node:fs/promises';
import { join } from 'node:path';
import ignore, { type Ignore } from 'ignore';
import { cacheDir } from './credentials.ts';

export interface WalkedFile {
  path: string;
  abs: string;
  mode: number;
  size: number;
  mtimeMs: number;
  ino: number;
}
export interface WalkedLink {
  path: string;
  target: string;
}

const ignoreFiles = ['.gitignore', '.assayignore'];

export async function walk(root: string): Promise<{ files: WalkedFile[]; links: WalkedLink[]; ignored: number }> {
  const files: WalkedFile[] = [];
  const links: WalkedLink[] = [];
  let ignored = 0;
  // Rules of each directory that has ignore files, with the directory's path relative to the root.
  const visit = async (rel: string, rules: { base: string; ig: Ignore }[]) => {
    const dirAbs = join(root, rel);
    const entries = (await readdir(dirAbs, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
    const names = new Set(entries.map((e) => e.name));
    let own = rules;
    for (const f of ignoreFiles) {
      if (!names.has(f)) continue;
      const ig = ignore().add(readFileSync(join(dirAbs, f), 'utf8'));
      own = [...own, { base: rel, ig }];
    }
    for (const e of entries) {
      const path = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.name === '.git' && e.isDirectory()) continue;
      const isDir = e.isDirectory();
      const excluded = own.some(({ base, ig }) => {
        const sub = base === '' ? path : path.slice(base.length + 1);
        return ig.ignores(isDir ? `${sub}/` : sub);
      });
      if (excluded) {
        ignored++;
        continue;
      }
      if (isDir) await visit(path, own);
      else if (e.isSymbolicLink()) links.push({ path, target: await readlink(join(root, path)) });
      else if (e.isFile()) {
        const st = await lstat(join(root, path));
        files.push({
          path,
          abs: join(root, path),
          mode: st.mode & 0o7777,
          size: st.size,
          mtimeMs: st.mtimeMs,
          ino: st.ino,
        });
      }
    }
  };
  await visit('', []);
  return { files, links, ignored };
}

/** Files up to this size are read whole (one read, no 1 MiB stream buffer to allocate and collect per file). */
export const smallFileBytes = 256 * 1024;

export async function hashFile(abs: string, size: number, onBytes?: (n: number) => void): Promise<string> {
  if (size <= smallFileBytes) {
    const bytes = await readFile(abs);
    onBytes?.(bytes.length);
    return `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  }
  const h = createHash('sha256');
  for await (const c of createReadStream(abs, { highWaterMark: 1 << 20 })) {
    h.update(c as Buffer);
    onBytes?.((c as Buffer).length);
  }
  return `sha256:${h.digest('hex')}`;
}

/** Digests of files seen before, by folder; a file whose size, mtime or inode changed is hashed again. */
export class HashCache {
  private readonly file: string;
  private entries: Record<string, [number, number, number, string]> = {};

  constructor(root: string) {
    const key = createHash('sha256').update(root).digest('hex').slice(0, 32);
    this.file = join(cacheDir(), 'hashes', `${key}.json`);
    try {
      this.entries = JSON.parse(readFileSync(this.file, 'utf8'));
    } catch {
      this.entries = {};
    }
  }

  get(f: WalkedFile): string | null {
    const e = this.entries[f.path];
    return e && e[0] === f.size && e[1] === f.mtimeMs && e[2] === f.ino ? e[3] : null;
  }

  set(f: WalkedFile, digest: string): void {
    this.entries[f.path] = [f.size, f.mtimeMs, f.ino, digest];
  }

  save(keep: Set<string>): void {
    for (const p of Object.keys(this.entries)) if (!keep.has(p)) delete this.entries[p];
    mkdirSync(join(this.file, '..'), { recursive: true, mode: 0o700 });
    writeFileSync(this.file, JSON.stringify(this.entries));
  }
}
