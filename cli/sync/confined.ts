// Restoring a revision into a directory without writing anywhere else (docs/sync.md, Restore). The server refuses
// unsafe snapshots when they are committed, but restore does not trust it to have: an old server, a hostile one, or
// rows written around the scan must not make it write outside the directory. So every entry is checked before
// anything is written, and then every path is made one component at a time: a component that exists must be a
// directory this restore made or checked with lstat (never a link), files are created new (O_EXCL) without
// following a link (O_NOFOLLOW), links are created last and never through another link, and modes keep their
// permission bits only (no setuid, setgid or sticky bit).
import { constants } from 'node:fs';
import { lstat, mkdir, open, realpath, rename, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { CliError, exitCodes } from './http.ts';

export type RevisionEntry =
  | { path: string; type?: 'file'; mode: number; size: number; digest: string }
  | { path: string; type: 'symlink'; target: string };

/** Links followed at most while resolving one target (Linux's own bound). */
const linkFollowsMax = 40;

/**
 * Why this revision cannot be restored safely, or null: a path that is not plain relative segments, a path through
 * one of the revision's own links, a link whose target is absolute or leaves the directory once resolved through
 * the revision's other links. The same rules as the server's scan (actors/sync/scan.ts), restated here because the
 * client does not load the server's modules (seconds of start-up for every command), in their plain form: a
 * revision comes from the user's own account, so the bound on work that protects the server is not needed.
 */
export function unsafeEntry(entries: readonly RevisionEntry[]): string | null {
  const links = new Map<string, string>();
  for (const e of entries) if (e.type === 'symlink') links.set(e.path, e.target);
  for (const e of entries) {
    const p = e.path;
    if (!plainPath(p)) return `the path ${p} is not a plain relative path`;
    for (let i = p.indexOf('/'); i !== -1; i = p.indexOf('/', i + 1)) {
      if (links.has(p.slice(0, i))) return `the path ${p} passes through the revision's symbolic link ${p.slice(0, i)}`;
    }
    if (e.type !== 'symlink') continue;
    const leaves = linkEscape(p, e.target, links);
    if (leaves !== null) return `the symbolic link ${p} -> ${e.target} ${leaves}`;
  }
  return null;
}

function plainPath(p: string): boolean {
  if (p.startsWith('/') || p.includes('\\') || p.includes('\0')) return false;
  return p.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

/** How a link's target leaves the directory when resolved through the revision's links, or null. */
function linkEscape(linkPath: string, target: string, links: ReadonlyMap<string, string>): string | null {
  if (target.startsWith('/')) return 'points to an absolute path';
  const at: string[] = [];
  const pending = [...linkPath.split('/').slice(0, -1), ...target.split('/')].reverse();
  let follows = 0;
  while (pending.length > 0) {
    const s = pending.pop()!;
    if (s === '' || s === '.') continue;
    if (s === '..') {
      if (at.length === 0) return 'leads outside the directory';
      at.pop();
      continue;
    }
    at.push(s);
    const next = links.get(at.join('/'));
    if (next === undefined) continue;
    if (++follows > linkFollowsMax) return `does not resolve within ${linkFollowsMax} links`;
    if (next.startsWith('/')) return 'leads to an absolute path';
    at.pop();
    for (const t of next.split('/').reverse()) pending.push(t);
  }
  return null;
}

const refused = (why: string) =>
  new CliError(exitCodes.refused, `${why}; nothing outside the directory was written, and restore stopped`);

/** A directory that restore writes into, and nowhere else. */
export class ConfinedDir {
  /** Directories (relative) this restore made or checked with lstat; nothing but restore's own links replaces one. */
  private readonly dirs = new Set<string>(['']);

  private constructor(readonly root: string) {}

  /** The directory named by the user (made if missing), by its real path: the one place that is followed. */
  static async open(dir: string): Promise<ConfinedDir> {
    await mkdir(dir, { recursive: true });
    return new ConfinedDir(await realpath(dir));
  }

  /** The real directory `rel` goes into, made one component at a time; refused at a link or a non-directory. */
  private async parentOf(rel: string): Promise<string> {
    const parts = rel.split('/').slice(0, -1);
    let sofar = '';
    for (const part of parts) {
      sofar = sofar === '' ? part : `${sofar}/${part}`;
      if (this.dirs.has(sofar)) continue;
      const abs = join(this.root, sofar);
      await mkdir(abs).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
      });
      const st = await lstat(abs);
      if (!st.isDirectory()) {
        throw refused(
          `${sofar} is ${st.isSymbolicLink() ? 'a symbolic link' : 'not a directory'}, so ${rel} is not restored through it`,
        );
      }
      this.dirs.add(sofar);
    }
    return join(this.root, ...parts);
  }

  /** Refuse a path that exists already (the directory was empty: the revision names it twice, or as a directory). */
  private async mustBeNew(abs: string, rel: string): Promise<void> {
    const st = await lstat(abs).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw err;
    });
    if (st !== null) throw refused(`${rel} exists already (the revision names it twice, or as a directory too)`);
  }

  /**
   * Write a file: `fill` writes its bytes into a new temporary file beside it, and says whether they are to be kept
   * (their digest matched). Kept bytes get the entry's permission bits and are renamed into place.
   */
  async writeFile(
    rel: string,
    mode: number,
    fill: (write: (chunk: Uint8Array) => Promise<void>) => Promise<boolean>,
  ): Promise<boolean> {
    const parent = await this.parentOf(rel);
    const name = rel.slice(rel.lastIndexOf('/') + 1);
    const final = join(parent, name);
    await this.mustBeNew(final, rel);
    const partial = join(parent, `${name}.assay-partial`);
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    const out = await open(partial, flags, 0o600).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST' || err.code === 'ELOOP') throw refused(`${rel}.assay-partial exists already`);
      throw err;
    });
    let keep = false;
    try {
      keep = await fill(async (chunk) => {
        for (let done = 0; done < chunk.byteLength; ) {
          done += (await out.write(chunk, done)).bytesWritten;
        }
      });
      // The permission bits alone: restore never makes a setuid, setgid or sticky file.
      if (keep) await out.chmod(mode & 0o777);
    } finally {
      await out.close();
      if (!keep) await rm(partial, { force: true });
    }
    if (!keep) return false;
    await this.mustBeNew(final, rel);
    await rename(partial, final);
    return true;
  }

  /** Create a symbolic link (never followed: restore writes nothing through it). */
  async link(rel: string, target: string): Promise<void> {
    const parent = await this.parentOf(rel);
    await symlink(target, join(parent, rel.slice(rel.lastIndexOf('/') + 1))).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'EEXIST')
        throw refused(`${rel} exists already (the revision names it twice, or as a directory too)`);
      throw err;
    });
  }
}
