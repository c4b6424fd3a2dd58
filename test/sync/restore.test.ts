// `assay restore` against a server that does not play by the rules (docs/sync.md, Restore): the real CLI, as a
// subprocess, restores from a loopback HTTP server that speaks the sync routes and serves revisions the real server
// refuses at commit (links through links, paths through links, targets that leave the folder) and modes with the
// setuid, setgid and sticky bits. Nothing may appear outside the directory restored into, and no such bit is set.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { assayArgs } from '../support/assay-cli.ts';

const root = new URL('../../', import.meta.url).pathname;
const work = mkdtempSync(join(tmpdir(), 'assay-restore-test-'));
const configDir = join(work, 'config');
/** Restores go into directories under `jail`; anything else appearing in it was written outside them. */
const jail = join(work, 'jail');
const locator = 'laptop/notes';

const digestOf = (bytes: Buffer) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
const blobs = new Map<string, Buffer>();
function file(path: string, text: string, mode = 0o644) {
  const bytes = Buffer.from(text);
  blobs.set(digestOf(bytes), bytes);
  return { path, mode, size: bytes.length, digest: digestOf(bytes) };
}
const link = (path: string, target: string) => ({ path, type: 'symlink', target });

/** Revisions the real server would refuse at commit, by number, and one it accepts whose modes carry special bits. */
const revisions: Record<number, { name: string; files: unknown[] }> = {
  1: {
    name: "the review's chain: each target alone stays inside, l2 resolves through l to the folder's parent",
    files: [file('a-note.md', 'kept?\n'), link('d1/l', '..'), link('d1/l2', 'l/..'), link('d1/l2/escaped', 'pwned')],
  },
  2: {
    name: 'a link under a link that points out of the folder',
    files: [link('out', '..'), link('out/planted', 'pwned')],
  },
  3: {
    name: 'a file under a link (written through it, it would land in the folder above)',
    files: [link('out', '..'), file('out/planted.txt', 'written through a link\n')],
  },
  4: { name: 'a link whose target climbs out', files: [link('up', '../../etc')] },
  5: { name: 'an absolute target', files: [link('passwd', '/etc/passwd')] },
  6: {
    name: 'a path that climbs out',
    files: [file('../outside.txt', 'climbed\n')],
  },
  7: {
    name: 'setuid, setgid and sticky bits',
    files: [
      file('bin/run.sh', '#!/bin/sh\necho setuid\n', 0o4755),
      file('bin/group.sh', '#!/bin/sh\necho setgid\n', 0o2750),
      file('shared/sticky.txt', 'sticky\n', 0o1777),
      file('plain.txt', 'plain\n', 0o640),
      link('run', 'bin/run.sh'),
    ],
  },
};

let server: http.Server;
let url: string;

before(async () => {
  mkdirSync(jail, { recursive: true });
  server = http.createServer((req, res) => {
    const u = new URL(req.url!, 'http://x');
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (u.pathname === '/api/sync/revisions') {
      const number = Number(u.searchParams.get('revision'));
      const rev = revisions[number];
      if (!rev) return json(404, { error: 'not_found', message: 'no such revision' });
      return json(200, {
        locator,
        revisions: [
          {
            id: '00000000-0000-4000-8000-00000000000' + number,
            number,
            locator,
            created_at: new Date().toISOString(),
            file_count: rev.files.length,
            total_bytes: 0,
            flagged: false,
            findings: [],
            files: rev.files,
          },
        ],
        usage: { bytes: 0, blobs: 0, quota_bytes: 1 },
      });
    }
    const blob = blobs.get(decodeURIComponent(u.pathname.slice('/api/sync/blobs/'.length)));
    if (blob) return res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(blob);
    json(404, { error: 'not_found', message: 'no route' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  // A login to it, as `assay login` keeps one.
  mkdirSync(configDir, { recursive: true, mode: 0o700 });
  const login = {
    client_id: 'cli',
    access_token: 'asyo_not_checked',
    refresh_token: 'asyr_not_checked',
    expires_at: Date.now() + 3_600_000,
    scope: 'sync',
  };
  writeFileSync(
    join(configDir, 'credentials.json'),
    JSON.stringify({ default_server: url, servers: { [url]: login } }),
    { mode: 0o600 },
  );
});
after(() => {
  server?.close();
  rmSync(work, { recursive: true, force: true });
});

function restore(revision: number, dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    [...assayArgs(), 'restore', locator, '--revision', String(revision), dir, '--server', url],
    { cwd: root, env: { ...process.env, ASSAY_CONFIG_DIR: configDir, ASSAY_CACHE_DIR: join(work, 'cache') } },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += c));
  child.stderr.on('data', (c) => (stderr += c));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr })));
}

/** Every path under `dir` (links as links, never followed). */
function listing(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const visit = (rel: string) => {
    for (const name of readdirSync(join(dir, rel))) {
      const path = rel === '' ? name : `${rel}/${name}`;
      out.push(path);
      if (lstatSync(join(dir, path)).isDirectory()) visit(path);
    }
  };
  visit('');
  return out.sort();
}

test('[SEC-SYNC-RESTORE-CONFINED] restore of a revision a hostile server hands over writes nothing outside its directory: links through links, paths through links and escaping targets are refused', async () => {
  for (const number of [1, 2, 3, 4, 5, 6]) {
    const name = `restore-${number}`;
    const dir = join(jail, name);
    const r = await restore(number, dir);
    const what = `${revisions[number]!.name}: ${r.stderr}`;
    assert.deepEqual(
      readdirSync(jail).filter((n) => !n.startsWith('restore-')),
      [],
      `nothing appears beside the directory (${what})`,
    );
    assert.ok(!existsSync(join(work, 'pwned')) && !existsSync(join(work, 'outside.txt')), what);
    assert.equal(r.code, 5, what);
    assert.match(r.stderr, /not safe to restore|nothing outside the directory was written/, what);
    assert.deepEqual(listing(dir), [], `nothing of the revision is restored (${what})`);
  }
  // The jail holds the restore directories and nothing else, and the folder above it only what the test made.
  assert.deepEqual(
    readdirSync(work).filter((n) => !['cache', 'config', 'jail'].includes(n)),
    [],
  );
});

test('[SEC-SYNC-RESTORE-MODES] restore keeps the permission bits of a mode and never sets setuid, setgid or sticky', async () => {
  const dir = join(jail, 'modes');
  const r = await restore(7, dir);
  assert.equal(r.code, 0, r.stderr);
  const mode = (path: string) => lstatSync(join(dir, path)).mode & 0o7777;
  assert.equal(mode('bin/run.sh'), 0o755, 'setuid dropped');
  assert.equal(mode('bin/group.sh'), 0o750, 'setgid dropped');
  assert.equal(mode('shared/sticky.txt'), 0o777, 'sticky dropped');
  assert.equal(mode('plain.txt'), 0o640);
  assert.equal(readFileSync(join(dir, 'bin/run.sh'), 'utf8'), '#!/bin/sh\necho setuid\n');
  assert.equal(readlinkSync(join(dir, 'run')), 'bin/run.sh');
  assert.deepEqual(listing(dir), [
    'bin',
    'bin/group.sh',
    'bin/run.sh',
    'plain.txt',
    'run',
    'shared',
    'shared/sticky.txt',
  ]);
});
