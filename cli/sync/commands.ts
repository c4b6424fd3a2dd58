// The client commands of `assay` (docs/sync.md, The command-line client): login and logout with the OAuth device
// grant, sync of a folder, its revisions, and restore. They talk HTTP only. Output: what a person reads on stdout,
// progress and warnings on stderr, or one JSON document on stdout with --json; exit codes in http.ts (exitCodes).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { basename, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfinedDir, type RevisionEntry, unsafeEntry } from './confined.ts';
import { credentials } from './credentials.ts';
import { type Answer, Auth, CliError, exitCodes, Http, read, refusal } from './http.ts';
import { helpOf, isCommand } from '../usage.ts';
import { byteSize, count, Progress } from './progress.ts';
import { HashCache, hashFile, walk, type WalkedFile } from './walk.ts';

const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
/**
 * The command-line client every deployment knows without registration (contracts' firstPartyClients.cli; the
 * client commands import nothing of the server, and test/oauth/first-party-cli.test.ts pins the two equal).
 */
export const firstPartyCliClientId = 'a55a7c11-c11e-4c11-8c11-00000000c11e';
/**
 * Uploads at once by default: the server commits the records of one owner's concurrent uploads together, so 8 at
 * once syncs small files about a third faster than 4, and 16 no faster than 8 (docs/sync.md, Measured).
 */
const defaultJobs = 8;
const locatorPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}\/[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

type Out = { json: boolean; quiet: boolean };

/** A client command's usage, for a usage error (an unknown name has none of its own). */
const usageOf = (command: string) => (isCommand(command) ? helpOf(command) : '');

export async function clientCommand(command: string, args: string[]): Promise<number> {
  let json = args.includes('--json');
  try {
    switch (command) {
      case 'login':
        return await login(args);
      case 'logout':
        return await logout(args);
      case 'sync':
        return await sync(args);
      case 'revisions':
        return await revisions(args);
      case 'restore':
        return await restore(args);
      case 'forget':
        return await forget(args);
    }
    throw new CliError(exitCodes.usage, `unknown command ${command}`);
  } catch (err) {
    let e: CliError;
    if (err instanceof CliError) e = err;
    else if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      e = new CliError(exitCodes.usage, `${(err as Error).message}\n\n${usageOf(command)}`);
    } else e = new CliError(exitCodes.failed, (err as Error).message ?? String(err));
    json &&= e.exitCode !== exitCodes.usage;
    if (json) {
      const body = { ok: false, exit_code: e.exitCode, error: e.message, ...(e.body ? { server: e.body } : {}) };
      process.stdout.write(`${JSON.stringify(body)}\n`);
    } else process.stderr.write(`assay ${command}: ${e.message}\n`);
    return e.exitCode;
  }
}

function serverOf(flag: string | undefined): string {
  const server = flag ?? process.env.ASSAY_SERVER ?? credentials.defaultServer();
  if (!server) {
    throw new CliError(exitCodes.usage, 'no server: pass --server https://... (or set ASSAY_SERVER), or log in first');
  }
  try {
    const u = new URL(server);
    return u.origin;
  } catch {
    throw new CliError(exitCodes.usage, `--server ${server} is not a URL`);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function login(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      server: { type: 'string' },
      'initial-access-token': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const server = serverOf(values.server);
  const h = new Http(server, 2);
  let stopOffer = () => {};
  try {
    let clientId = credentials.get(server)?.client_id ?? null;
    const iat = values['initial-access-token'] ?? process.env.ASSAY_INITIAL_ACCESS_TOKEN;
    // Without an initial access token the CLI signs in as the server's own command-line client (like `gh`); with
    // one it registers a client of its own, as a third-party agent does.
    if (clientId === null && iat) {
      const reg = await h.call('POST', '/oauth/register', {
        headers: { authorization: `Bearer ${iat}` },
        json: { client_name: `assay CLI on ${hostname()}`, grant_types: [deviceGrant, 'refresh_token'], scope: 'sync' },
      });
      if (reg.status !== 201) {
        throw new CliError(
          exitCodes.login,
          `registering this device failed (${reg.body?.error ?? reg.status}): ${reg.body?.error_description ?? ''}; issue a new initial access token on ${server}/account`,
        );
      }
      clientId = reg.body.client_id as string;
      credentials.put(server, {
        client_id: clientId,
        access_token: null,
        refresh_token: null,
        expires_at: 0,
        scope: 'sync',
      });
    }
    clientId ??= firstPartyCliClientId;
    const started = await h.call('POST', '/oauth/device_authorization', {
      form: { client_id: clientId, scope: 'sync' },
    });
    if (started.status !== 200) {
      if (started.body?.error === 'invalid_client') credentials.forgetTokens(server);
      throw new CliError(
        exitCodes.login,
        `the server refused the device login (${started.body?.error ?? started.status}): ${started.body?.error_description ?? ''}`,
      );
    }
    const d = started.body as {
      device_code: string;
      user_code: string;
      verification_uri: string;
      verification_uri_complete: string;
      interval?: number;
      expires_in: number;
    };
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ verification_uri: d.verification_uri, verification_uri_complete: d.verification_uri_complete, user_code: d.user_code, expires_in: d.expires_in })}\n`,
      );
    } else {
      process.stdout.write(
        `To sign in this device, open\n\n  ${d.verification_uri}\n\nand enter the code  ${d.user_code}\n\nor open this address, which carries the code:\n\n  ${d.verification_uri_complete}\n\nWaiting for approval...\n`,
      );
    }
    stopOffer = values.json ? () => {} : offerBrowser(d.verification_uri_complete);
    let intervalMs = (d.interval ?? 5) * 1000;
    const deadline = Date.now() + d.expires_in * 1000;
    for (;;) {
      await sleep(intervalMs);
      if (Date.now() > deadline)
        throw new CliError(exitCodes.login, 'the code expired before it was approved; run `assay login` again');
      const r = await h.call('POST', '/oauth/token', {
        form: { grant_type: deviceGrant, device_code: d.device_code, client_id: clientId },
      });
      if (r.status === 200) {
        credentials.put(server, {
          client_id: clientId,
          access_token: r.body.access_token,
          refresh_token: r.body.refresh_token ?? null,
          expires_at: Date.now() + Number(r.body.expires_in ?? 600) * 1000,
          scope: r.body.scope ?? 'sync',
        });
        if (values.json)
          process.stdout.write(
            `${JSON.stringify({ ok: true, server, scope: r.body.scope, credentials: credentials.path() })}\n`,
          );
        else
          process.stdout.write(`Logged in to ${server} (scope ${r.body.scope}). Credentials: ${credentials.path()}\n`);
        return exitCodes.ok;
      }
      const error = r.body?.error;
      if (error === 'authorization_pending') continue;
      if (error === 'slow_down') {
        intervalMs += 5000;
        continue;
      }
      if (error === 'access_denied')
        throw new CliError(exitCodes.login, 'the login was denied on the verification page');
      throw new CliError(exitCodes.login, `the login failed (${error ?? r.status}); run \`assay login\` again`);
    }
  } finally {
    stopOffer();
    h.close();
  }
}

/**
 * On a terminal, offer to open the verification page: Enter opens it in the system's browser while polling goes on.
 * Returns what ends the offer. Off a terminal (scripts, tests) there is no offer and no browser.
 */
function offerBrowser(url: string): () => void {
  if (!process.stdin.isTTY || !process.stdout.isTTY) return () => {};
  process.stdout.write('Press Enter to open it in your browser.\n');
  const stop = () => {
    process.stdin.off('data', open);
    process.stdin.pause();
  };
  const open = () => {
    stop();
    const opener = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
    spawn(opener, [url], { stdio: 'ignore', detached: true })
      .on('error', () => process.stderr.write(`could not start a browser (${opener}); open the address yourself\n`))
      .unref();
  };
  process.stdin.once('data', open);
  process.stdin.resume();
  return stop;
}

async function logout(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { server: { type: 'string' }, json: { type: 'boolean', default: false } },
  });
  const server = serverOf(values.server);
  const login = credentials.get(server);
  if (!login?.refresh_token) {
    if (values.json) process.stdout.write(`${JSON.stringify({ ok: true, server, revoked: false })}\n`);
    else process.stdout.write(`Not logged in to ${server}.\n`);
    return exitCodes.ok;
  }
  const h = new Http(server, 1);
  try {
    const r = await h.call('POST', '/oauth/revoke', {
      form: { token: login.refresh_token, client_id: login.client_id },
    });
    credentials.forgetTokens(server);
    if (r.status !== 200)
      throw new CliError(
        exitCodes.failed,
        `the tokens were forgotten here, but the server did not confirm the revocation (${r.status})`,
      );
    if (values.json) process.stdout.write(`${JSON.stringify({ ok: true, server, revoked: true })}\n`);
    else process.stdout.write(`Logged out of ${server}: the login is revoked and its tokens are forgotten.\n`);
    return exitCodes.ok;
  } finally {
    h.close();
  }
}

/** A locator from the user's words: `device/folder` as given, or a bare folder name on this device. */
function locatorOf(name: string): string {
  const loc = name.includes('/') ? name : `${deviceName()}/${safeName(name)}`;
  if (!locatorPattern.test(loc)) {
    throw new CliError(
      exitCodes.usage,
      `${loc} is not a locator: <device>/<folder>, letters, digits, dot, dash, underscore`,
    );
  }
  return loc;
}

function deviceName(): string {
  return safeName(process.env.ASSAY_DEVICE ?? hostname().split('.')[0] ?? 'device');
}

function safeName(s: string): string {
  const out = s
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return out === '' ? 'folder' : out;
}

function session(server: string, jobs: number) {
  const h = new Http(server, jobs + 1);
  return { h, auth: Auth.of(h) };
}

/** Run `task` over `items` with at most `jobs` at once; the first failure stops the rest. */
async function pool<T>(items: T[], jobs: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed: unknown = null;
  await Promise.all(
    Array.from({ length: Math.min(jobs, items.length) }, async () => {
      while (next < items.length && failed === null) {
        const item = items[next++]!;
        try {
          await task(item);
        } catch (err) {
          failed ??= err;
        }
      }
    }),
  );
  if (failed !== null) throw failed;
}

function onInterrupt(what: string): () => void {
  const handler = () => {
    process.stderr.write(`\nassay: ${what} interrupted; run the same command again to resume\n`);
    process.exit(exitCodes.interrupted);
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return () => {
    process.off('SIGINT', handler);
    process.off('SIGTERM', handler);
  };
}

async function sync(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      server: { type: 'string' },
      locator: { type: 'string' },
      jobs: { type: 'string', default: String(defaultJobs) },
      json: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
    },
  });
  if (positionals.length !== 1) throw new CliError(exitCodes.usage, `sync takes one folder\n\n${helpOf('sync')}`);
  const root = resolve(positionals[0]!);
  if (!existsSync(root) || !statSync(root).isDirectory())
    throw new CliError(exitCodes.usage, `${root} is not a folder`);
  const jobs = Number(values.jobs);
  if (!Number.isInteger(jobs) || jobs < 1 || jobs > 64)
    throw new CliError(exitCodes.usage, '--jobs is a whole number from 1 to 64');
  const locator = locatorOf(values.locator ?? basename(root));
  const out: Out = { json: values.json, quiet: values.quiet };
  const sink = out.json || out.quiet ? null : process.stderr;
  const server = serverOf(values.server);
  const { h, auth } = session(server, jobs);
  const stopWatching = onInterrupt('sync');
  try {
    const walked = await walk(root);
    const cache = new HashCache(root);
    // Files read and hashed: those the cache does not know with this size, mtime and inode (--json reports them).
    const toHash = walked.files.filter((f) => cache.get(f) === null);
    const hashBytes = toHash.reduce((n, f) => n + f.size, 0);
    const hashing = new Progress(
      toHash.length > 0 && hashBytes > 64e6 ? sink : null,
      'hashing',
      toHash.length,
      hashBytes,
    );
    const digests = new Map<string, string>();
    await pool(walked.files, 4, async (f) => {
      let d = cache.get(f);
      if (d === null) {
        d = await hashFile(f.abs, f.size, (n) => hashing.bytes(n));
        cache.set(f, d);
        hashing.file();
      }
      digests.set(f.path, d);
    });
    if (toHash.length > 0) hashing.end();
    cache.save(new Set(walked.files.map((f) => f.path)));

    const unique = [...new Set(digests.values())];
    const manifest = await auth.call('POST', `/api/sync/manifest?locator=${encodeURIComponent(locator)}`, {
      json: { digests: unique },
    });
    if (manifest.status !== 200) throw refusal(manifest, 'the manifest question was');
    const missing = new Set<string>(manifest.body.missing);
    const uploads: WalkedFile[] = [];
    for (const f of walked.files) {
      const d = digests.get(f.path)!;
      if (missing.has(d)) {
        uploads.push(f);
        missing.delete(d);
      }
    }
    const upBytes = uploads.reduce((n, f) => n + f.size, 0);
    const progress = new Progress(uploads.length > 0 ? sink : null, 'uploading', uploads.length, upBytes);
    await pool(uploads, jobs, async (f) => {
      const digest = digests.get(f.path)!;
      const r = await auth.putBlob(digest, f.abs, f.size, (n) => progress.bytes(n));
      if (r.status === 409 || (r.status === 422 && r.body?.error === 'digest_mismatch')) {
        throw new CliError(exitCodes.failed, `${f.path} changed while it was being synced; run \`assay sync\` again`);
      }
      if (r.status !== 200 && r.status !== 201) throw refusal(r, `uploading ${f.path} was`);
      progress.file();
    });
    if (uploads.length > 0) progress.end();

    const files = [
      ...walked.files.map((f) => ({ path: f.path, mode: f.mode, size: f.size, digest: digests.get(f.path)! })),
      ...walked.links.map((l) => ({ path: l.path, type: 'symlink' as const, target: l.target })),
    ].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    const latest = await auth.call(
      'GET',
      `/api/sync/revisions?locator=${encodeURIComponent(locator)}&limit=1&files=false`,
    );
    if (latest.status !== 200 && latest.status !== 404) throw refusal(latest, 'reading the latest revision was');
    const parent = latest.status === 200 ? (latest.body.revisions[0]?.number ?? 0) : 0;
    // The key names this exact snapshot on top of this parent: a commit whose answer was lost replays, while the
    // same files committed again after another revision are a new commit.
    const key = createHash('sha256')
      .update(`${locator}\n${parent}\n${JSON.stringify(files)}`)
      .digest('hex');
    const commit = () =>
      auth.call('POST', `/api/sync/snapshots?locator=${encodeURIComponent(locator)}`, {
        headers: { 'idempotency-key': key },
        json: { files },
      });
    let committed = await commit();
    if (committed.status === 409 && committed.body?.error === 'missing_blobs') {
      // A forget on another device freed blobs this sync found held (docs/sync.md, Retention): send them, once.
      const again = new Set<string>(committed.body.missing);
      const resend = walked.files.filter((f) => again.delete(digests.get(f.path)!));
      await pool(resend, jobs, async (f) => {
        const r = await auth.putBlob(digests.get(f.path)!, f.abs, f.size, () => {});
        if (r.status !== 200 && r.status !== 201) throw refusal(r, `uploading ${f.path} was`);
      });
      committed = await commit();
    }
    if (committed.status === 422 && committed.body?.error === 'unsafe_paths') {
      for (const f of committed.body.findings ?? [])
        process.stderr.write(`  unsafe: ${f.path}: ${f.type}: ${f.detail}\n`);
    }
    if (committed.status !== 200 && committed.status !== 201) throw refusal(committed, 'the commit was');
    const rev = committed.body.revision;
    const changes = committed.body.changes as { added: string[]; modified: string[]; removed: string[] };
    const findings = (rev.findings ?? []) as { type: string; path: string; line?: number; detail: string }[];
    if (out.json) {
      process.stdout.write(
        `${JSON.stringify({ ok: true, server, locator, revision: rev, created: committed.body.created, changes, uploaded: { files: uploads.length, bytes: upBytes }, hashed: { files: toHash.length, bytes: hashBytes }, files: walked.files.length, symlinks: walked.links.length, ignored: walked.ignored })}\n`,
      );
    } else {
      const head = committed.body.created
        ? `revision ${rev.number} of ${locator}: ${changes.added.length} added, ${changes.modified.length} modified, ${changes.removed.length} removed`
        : `${locator} is unchanged since revision ${rev.number}`;
      process.stdout.write(
        `${head} (${count(rev.file_count, 'file')}, ${byteSize(rev.total_bytes)}; uploaded ${count(uploads.length, 'file')}, ${byteSize(upBytes)})\n`,
      );
      const show = (sign: string, list: string[]) => {
        for (const p of list.slice(0, 50)) process.stdout.write(`  ${sign} ${p}\n`);
        if (list.length > 50) process.stdout.write(`  ${sign} ... and ${list.length - 50} more\n`);
      };
      show('+', changes.added);
      show('~', changes.modified);
      show('-', changes.removed);
    }
    if (findings.length > 0) {
      if (!out.json) {
        process.stderr.write(
          `warning: the injection scan flagged ${count(findings.length, 'finding')} in this revision:\n`,
        );
        for (const f of findings)
          process.stderr.write(`  ${f.path}${f.line ? `:${f.line}` : ''}: ${f.type}: ${f.detail}\n`);
      }
      return exitCodes.findings;
    }
    return exitCodes.ok;
  } finally {
    stopWatching();
    h.close();
  }
}

async function forget(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      server: { type: 'string' },
      keep: { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const keep = Number(values.keep);
  if (positionals.length !== 1 || values.keep === undefined || !Number.isInteger(keep) || keep < 1) {
    throw new CliError(exitCodes.usage, `forget takes one locator and --keep N (N at least 1)\n\n${helpOf('forget')}`);
  }
  const locator = locatorOf(positionals[0]!);
  const { h, auth } = session(serverOf(values.server), 1);
  try {
    const r = await auth.call('POST', `/api/sync/forget?locator=${encodeURIComponent(locator)}`, { json: { keep } });
    if (r.status !== 200) throw refusal(r, 'forgetting revisions was');
    const b = r.body as { forgotten: number[]; kept: number; freed: { blobs: number; bytes: number } };
    if (values.json) process.stdout.write(`${JSON.stringify({ ok: true, ...r.body })}\n`);
    else {
      process.stdout.write(
        `${locator}: forgot ${count(b.forgotten.length, 'revision')}${b.forgotten.length > 0 ? ` (${b.forgotten.join(', ')})` : ''}, kept ${b.kept}; freed ${count(b.freed.blobs, 'file')}, ${byteSize(b.freed.bytes)}\n`,
      );
    }
    return exitCodes.ok;
  } finally {
    h.close();
  }
}

async function revisionsOf(auth: Auth, locator: string, query: string): Promise<Answer> {
  const r = await auth.call('GET', `/api/sync/revisions?locator=${encodeURIComponent(locator)}&${query}`);
  if (r.status !== 200) throw refusal(r, 'reading the revisions was');
  return r;
}

async function revisions(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      server: { type: 'string' },
      limit: { type: 'string', default: '20' },
      json: { type: 'boolean', default: false },
    },
  });
  if (positionals.length !== 1)
    throw new CliError(exitCodes.usage, `revisions takes one locator\n\n${helpOf('revisions')}`);
  const locator = locatorOf(positionals[0]!);
  const { h, auth } = session(serverOf(values.server), 1);
  try {
    const r = await revisionsOf(auth, locator, `limit=${encodeURIComponent(values.limit)}&files=${values.json}`);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ ok: true, ...r.body })}\n`);
      return exitCodes.ok;
    }
    process.stdout.write(`${locator}: ${count(r.body.revisions.length, 'revision')}, newest first\n`);
    process.stdout.write(
      `${'rev'.padStart(5)}  ${'created (UTC)'.padEnd(24)}  ${'files'.padStart(7)}  ${'size'.padStart(10)}  findings\n`,
    );
    for (const v of r.body.revisions) {
      process.stdout.write(
        `${String(v.number).padStart(5)}  ${v.created_at.padEnd(24)}  ${String(v.file_count).padStart(7)}  ${byteSize(v.total_bytes).padStart(10)}  ${v.flagged ? `${v.findings.length} flagged` : '-'}\n`,
      );
    }
    return exitCodes.ok;
  } finally {
    h.close();
  }
}

async function restore(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      server: { type: 'string' },
      revision: { type: 'string' },
      jobs: { type: 'string', default: '4' },
      json: { type: 'boolean', default: false },
      quiet: { type: 'boolean', default: false },
    },
  });
  if (positionals.length !== 2)
    throw new CliError(exitCodes.usage, `restore takes a locator and a directory\n\n${helpOf('restore')}`);
  const locator = locatorOf(positionals[0]!);
  const dir = resolve(positionals[1]!);
  if (existsSync(dir) && (!statSync(dir).isDirectory() || readdirSync(dir).length > 0)) {
    throw new CliError(exitCodes.usage, `${dir} is not an empty directory; restore into a new or empty one`);
  }
  const jobs = Math.max(1, Math.min(64, Number(values.jobs) || 4));
  const { h, auth } = session(serverOf(values.server), jobs);
  const stopWatching = onInterrupt('restore');
  try {
    const query = values.revision ? `revision=${encodeURIComponent(values.revision)}&limit=1` : 'limit=1';
    const r = await revisionsOf(auth, locator, query);
    const rev = r.body.revisions[0];
    if (!rev) throw new CliError(exitCodes.refused, `${locator} has no revisions`);
    const entries = rev.files as RevisionEntry[];
    // Checked whole before anything is written (docs/sync.md, Restore).
    const unsafe = unsafeEntry(entries);
    if (unsafe !== null) {
      throw new CliError(
        exitCodes.refused,
        `revision ${rev.number} of ${locator} is not safe to restore: ${unsafe}; nothing was written`,
      );
    }
    const into = await ConfinedDir.open(dir);
    const regular = entries.filter((e): e is Extract<RevisionEntry, { digest: string }> => e.type !== 'symlink');
    const progress = new Progress(
      values.json || values.quiet ? null : process.stderr,
      'restoring',
      regular.length,
      rev.total_bytes,
    );
    await pool(regular, jobs, async (f) => {
      let actual = '';
      await into.writeFile(f.path, f.mode, async (write) => {
        const res = await auth.getBlob(f.digest);
        if (res.statusCode !== 200) throw refusal(await read(res), `downloading ${f.path} was`);
        const hash = createHash('sha256');
        for await (const c of res) {
          hash.update(c as Buffer);
          progress.bytes((c as Buffer).length);
          await write(c as Buffer);
        }
        actual = `sha256:${hash.digest('hex')}`;
        return actual === f.digest;
      });
      if (actual !== f.digest) {
        throw new CliError(
          exitCodes.corrupt,
          `${f.path} arrived with digest ${actual}, not ${f.digest}; it was not written. Run restore again`,
        );
      }
      progress.file();
    });
    progress.end();
    // Links last, one at a time: no file is ever written through one, and none is made through another.
    for (const e of entries) if (e.type === 'symlink') await into.link(e.path, e.target);
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({ ok: true, locator, revision: { ...rev, files: undefined }, directory: dir, files: regular.length, bytes: rev.total_bytes })}\n`,
      );
    } else {
      process.stdout.write(
        `restored revision ${rev.number} of ${locator} into ${dir}: ${count(entries.length, 'entry', 'entries')}, ${byteSize(rev.total_bytes)}, every file checked against its digest\n`,
      );
      if (rev.flagged) {
        process.stderr.write(`warning: this revision was flagged by the injection scan:\n`);
        for (const f of rev.findings)
          process.stderr.write(`  ${f.path}${f.line ? `:${f.line}` : ''}: ${f.type}: ${f.detail}\n`);
      }
    }
    return exitCodes.ok;
  } finally {
    stopWatching();
    h.close();
  }
}
