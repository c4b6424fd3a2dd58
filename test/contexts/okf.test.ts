// The OKF export over real HTTP (docs/contexts.md, The OKF export): exactly the public files of every account, each
// line valid against the format's schema with a hash that matches its content, an ETag that moves with the public
// files only, 304 and HEAD; streamed at the reader's pace (a paused reader pauses the page reads, one that leaves
// frees its slot, a failure mid-stream cuts the response short); and 100,000 files through a separate serving
// process whose peak RSS stays far below the size of the export.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Compile } from 'typebox/compile';
import {
  OkfContext,
  OkfEnd,
  OkfHeader,
  OkfLine,
  okfContextLine,
  okfExportPath,
  okfExportsPerGatewayMax,
} from '../../contracts/index.ts';
import { openPool, type Sql } from '../../storage/index.ts';
import { contextCall, issueApiKey } from '../support/context-api.ts';
import { systemEnv } from '../support/env.ts';
import { signUp } from '../support/oauth.ts';
import { type RoleProcess, startRoleProcess } from '../support/processes.ts';
import { dropEnv, eventually, startSystem, type TestSystem } from '../support/system.ts';

const lineCheck = Compile(OkfLine);
const headerCheck = Compile(OkfHeader);
const contextCheck = Compile(OkfContext);
const endCheck = Compile(OkfEnd);

let sys: TestSystem;
let exportUrl: string;
const owners: { a: string; b: string } = { a: '', b: '' };

before(async () => {
  sys = await startSystem();
  exportUrl = `${sys.config.webUrl}${okfExportPath}`;
  owners.a = await issueApiKey(sys.config.webUrl, await signUp(sys.baseUrl, 'okf-a@example.com'));
  owners.b = await issueApiKey(sys.config.webUrl, await signUp(sys.baseUrl, 'okf-b@example.com'));
});
after(async () => {
  await sys?.stop();
});

const api = (key: string, method: string, path: string, body?: unknown) =>
  contextCall(sys.config.webUrl, `${sys.config.apiUrl}/v1${path}`, method, { bearer: key, body });

async function create(key: string, name: string, content: string, isPublic: boolean): Promise<string> {
  const r = await api(key, 'POST', '/contexts', { name, content, description: `about ${name}` });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  if (isPublic) await patch(key, r.body.data.id, { is_public: true });
  return r.body.data.id;
}

async function patch(key: string, id: string, body: unknown): Promise<void> {
  const r = await api(key, 'PATCH', `/contexts/${id}`, body);
  assert.equal(r.status, 200, JSON.stringify(r.body));
}

interface Export {
  status: number;
  headers: Headers;
  text: string;
  /** Each line as sent, and parsed. */
  raw: string[];
  lines: any[];
}

async function getExport(headers: Record<string, string> = {}): Promise<Export> {
  const res = await fetch(exportUrl, { headers });
  const text = await res.text();
  const raw = text === '' ? [] : text.replace(/\n$/, '').split('\n');
  return { status: res.status, headers: res.headers, text, raw, lines: raw.map((l) => JSON.parse(l)) };
}

/**
 * An export once `ready` says the projection has caught up with what the test wrote, and taken while nothing
 * changed (its end line's tag is its header's: otherwise a change landed between the tag and the pages).
 */
async function exportWhen(ready: (files: any[]) => boolean): Promise<Export> {
  return eventually('the export to show the changes', async () => {
    const e = await getExport();
    if (e.status !== 200 || e.lines[0].tag !== e.lines.at(-1).tag) return undefined;
    return ready(e.lines.filter((l) => l.type === 'context')) ? e : undefined;
  });
}

const etagOf = (e: { headers: Headers }) => e.headers.get('etag')!;
const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

test('[CONTEXT-OKF] the export holds exactly the public files of every account, each line valid, hashes matching, with no authentication', async () => {
  const tricky =
    'Line one\nline "two" with \\ and \t tab\u2028, \u0001\u001f\u007f\u0085, accents é, emoji 🧭, {"json": "inside"}';
  const publicA = await create(owners.a, 'Style Guide', '# Style\nWrite plainly.', true);
  const trickyA = await create(owners.a, 'Tricky', tricky, true);
  const privateA = await create(owners.a, 'Private Notes', 'secret A', false);
  const unpublishedA = await create(owners.a, 'Was Public', 'briefly out', true);
  await patch(owners.a, unpublishedA, { is_public: false });
  const deletedA = await create(owners.a, 'Gone', 'deleted soon', true);
  assert.equal((await api(owners.a, 'DELETE', `/contexts/${deletedA}`)).status, 200);
  const publicB = await create(owners.b, 'Reference', 'B shares this', true);
  const privateB = await create(owners.b, 'Diary', 'secret B', false);
  const expected = [publicA, trickyA, publicB].sort();

  const e = await exportWhen((files) => files.map((f) => f.id).join() === expected.join());
  assert.equal(e.headers.get('content-type'), 'application/x-ndjson');
  assert.equal(e.headers.get('transfer-encoding'), 'chunked');
  for (const line of e.lines) assert.ok(lineCheck.Check(line), JSON.stringify([...lineCheck.Errors(line)]));
  const [header, ...rest] = e.lines;
  const end = rest.pop();
  assert.ok(headerCheck.Check(header));
  assert.deepEqual(header, { type: 'header', okf: 1, source: sys.config.webUrl, tag: etagOf(e).slice(1, -1) });
  assert.ok(endCheck.Check(end));
  assert.deepEqual(end, { type: 'end', count: 3, tag: header.tag }, 'nothing changed while it streamed');
  // PostgreSQL writes the file lines: byte for byte what the format's builder writes.
  for (const [i, f] of rest.entries()) assert.equal(`${e.raw[i + 1]}\n`, okfContextLine(f));
  for (const f of rest) {
    assert.ok(contextCheck.Check(f));
    assert.equal(f.sha256, sha256(f.content));
    assert.equal(f.bytes, Buffer.byteLength(f.content));
  }
  const byId = new Map(rest.map((f) => [f.id, f]));
  assert.equal(byId.get(trickyA).content, tricky);
  assert.deepEqual(
    { ...byId.get(publicA), created_at: undefined, updated_at: undefined },
    {
      type: 'context',
      id: publicA,
      name: 'Style Guide',
      slug: 'style-guide',
      description: 'about Style Guide',
      content: '# Style\nWrite plainly.',
      sha256: sha256('# Style\nWrite plainly.'),
      bytes: 22,
      created_at: undefined,
      updated_at: undefined,
    },
  );
  // The API's own view of the file has the same times.
  const own = await api(owners.a, 'GET', `/contexts/${publicA}`);
  assert.equal(byId.get(publicA).created_at, own.body.data.created_at);
  assert.equal(byId.get(publicA).updated_at, own.body.data.updated_at);
  // Nothing private: not the private, unpublished or deleted files' ids or text, not the owners' ids.
  const owned = await sys.sql<{ owner_principal_id: string }[]>`SELECT DISTINCT owner_principal_id FROM context_files`;
  assert.ok(owned.length === 2);
  for (const hidden of [privateA, unpublishedA, deletedA, privateB, 'secret A', 'secret B', 'briefly out']) {
    assert.ok(!e.text.includes(hidden), `${hidden} is not in the export`);
  }
  for (const { owner_principal_id } of owned) assert.ok(!e.text.includes(owner_principal_id));

  // No authentication: credentials are neither needed nor looked at.
  const withJunk = await getExport({ authorization: 'Bearer not-a-token', cookie: 'assay_session=nope' });
  assert.equal(withJunk.status, 200);
  assert.equal(withJunk.text, e.text);
});

test('[CONTEXT-OKF] the ETag stays while nothing public changes and moves with each publish, update, unpublish and delete; If-None-Match answers 304; HEAD answers the head', async () => {
  const first = await getExport();
  const again = await getExport();
  assert.equal(etagOf(again), etagOf(first));
  assert.equal(again.text, first.text, 'the same tag is the same bytes');
  assert.match(etagOf(first), /^"okf1\.[0-9a-f]{12}\.\d+"$/);
  assert.equal(first.headers.get('cache-control'), 'no-cache');

  for (const inm of [etagOf(first), `W/${etagOf(first)}`, `"other", ${etagOf(first)}`, '*']) {
    const r = await fetch(exportUrl, { headers: { 'if-none-match': inm } });
    assert.equal(r.status, 304, inm);
    assert.equal(r.headers.get('etag'), etagOf(first));
    assert.equal(await r.text(), '');
  }
  assert.equal((await fetch(exportUrl, { headers: { 'if-none-match': '"okf1.000000000000.0"' } })).status, 200);
  const head = await fetch(exportUrl, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(head.headers.get('etag'), etagOf(first));
  assert.equal(head.headers.get('content-type'), 'application/x-ndjson');
  assert.equal(await head.text(), '');
  const post = await fetch(exportUrl, { method: 'POST' });
  assert.equal(post.status, 404);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
  assert.deepEqual(Object.keys(await post.json()), ['error', 'message']);

  // A private file's life does not move the tag (once the projection holds it, the tag is read again).
  const quiet = await create(owners.b, 'Quiet', 'private draft', false);
  await patch(owners.b, quiet, { content: 'private draft 2' });
  await eventually('the private change to be projected', async () => {
    const [row] = await sys.sql`SELECT content FROM context_files WHERE id = ${quiet}`;
    return row?.content === 'private draft 2' ? true : undefined;
  });
  assert.equal(etagOf(await getExport()), etagOf(first));

  // Each public change gives a tag never seen before, and the old one no longer answers 304.
  const seen = new Set([etagOf(first)]);
  const changed = async (what: string, ready: (files: any[]) => boolean) => {
    const e = await exportWhen(ready);
    assert.ok(!seen.has(etagOf(e)), `${what} gives a new tag`);
    seen.add(etagOf(e));
    const stale = await fetch(exportUrl, { headers: { 'if-none-match': etagOf(first) } });
    assert.equal(stale.status, 200, `${what}: the old tag is stale`);
    await stale.body?.cancel();
  };
  await patch(owners.b, quiet, { is_public: true });
  await changed('publish', (files) => files.some((f) => f.id === quiet));
  await patch(owners.b, quiet, { content: 'now public, edited' });
  await changed('update', (files) => files.some((f) => f.id === quiet && f.content === 'now public, edited'));
  await patch(owners.b, quiet, { is_public: false });
  await changed('unpublish', (files) => !files.some((f) => f.id === quiet));
  await patch(owners.b, quiet, { is_public: true });
  await changed('publish again', (files) => files.some((f) => f.id === quiet));
  assert.equal((await api(owners.b, 'DELETE', `/contexts/${quiet}`)).status, 200);
  await changed('delete', (files) => !files.some((f) => f.id === quiet));
});

/**
 * Public (and some private) files written straight into the projection table: a volume fixture, since the API
 * would take minutes for thousands of files. The table's triggers keep the export's tag as they do for the
 * projection. Content is `bytes` long (ASCII), its hash computed by PostgreSQL.
 */
async function insertFiles(sql: Sql, n: number, bytes: number, isPublic: boolean): Promise<void> {
  const batch = 20_000;
  for (let from = 0; from < n; from += batch) {
    const to = Math.min(n, from + batch);
    await sql`
      INSERT INTO context_files (id, owner_principal_id, name, slug, description, content, content_sha256,
        content_bytes, preview, is_public, created_at, updated_at, last_seq)
      SELECT gen_random_uuid(), gen_random_uuid(), 'Volume ' || i, 'volume-' || i, 'a file of the volume test',
             f.content, encode(sha256(convert_to(f.content, 'UTF8')), 'hex'), ${bytes}, left(f.content, 200),
             ${isPublic}, now(), now(), 0
      FROM generate_series(${from + 1}::int, ${to}::int) AS i,
           LATERAL (SELECT left('file ' || i || ' ' || repeat(md5(i::text), ${Math.ceil(bytes / 32) + 1}), ${bytes})
                    AS content) f`;
  }
}

/** Calls `onLine` with each line of a streamed body (the lines are not kept); rejects if the stream breaks. */
async function eachLine(body: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<number> {
  const decoder = new TextDecoder();
  let rest = '';
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    const text = rest + decoder.decode(chunk, { stream: true });
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      onLine(text.slice(start, nl));
      start = nl + 1;
    }
    rest = text.slice(start);
  }
  assert.equal(rest, '', 'the export ends with a newline');
  return bytes;
}

/** Counts the export's page requests on the bus (every message to the ledger service, seen by a plain subscriber). */
function watchPages(): { count: number; stop(): void } {
  const watch = { count: 0, stop: () => sub.unsubscribe() };
  const sub = sys.nc.subscribe(sys.names.serviceSubject('ledger'), {
    callback: (_err, msg) => {
      if ((msg.json() as { op: string }).op === 'context.export_page') watch.count++;
    },
  });
  return watch;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Resolves with the count once it has not moved for `quietMs`. */
async function settled(watch: { count: number }, quietMs = 700): Promise<number> {
  return eventually(
    'page reads to stop',
    async () => {
      const n = watch.count;
      await sleep(quietMs);
      return watch.count === n ? n : undefined;
    },
    15_000,
  );
}

test('[CONTEXT-OKF-STREAM] a reader that stops reading stops the page reads, and gets every file when it reads on; one that leaves frees its slot; a gateway streams a bounded number at once', async (t) => {
  // 3,000 files of 8 KiB: 64 to a page, 47 pages, far more than the socket buffers hold.
  await insertFiles(sys.sql, 3000, 8 * 1024, true);
  const publicCount = (await sys.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM context_files WHERE is_public`)[0]!
    .n;
  const pagesTotal = Math.ceil(3000 / 64);
  const pages = watchPages();
  try {
    const res = await fetch(exportUrl);
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    await reader.read();
    const stalled = await settled(pages);
    assert.ok(stalled < pagesTotal / 2, `${stalled} of ${pagesTotal} pages read while the reader waits`);
    reader.releaseLock();
    let files = 0;
    let end: any = null;
    await eachLine(res.body!, (line) => {
      if (line.startsWith('{"type":"context"')) files++;
      else if (line.startsWith('{"type":"end"')) end = JSON.parse(line);
    });
    // The first chunk held the header and maybe some files: what the reader skipped is counted by the end line.
    assert.equal(end?.count, publicCount);
    assert.ok(files > publicCount - 100);

    pages.count = 0;
    const leaving = new AbortController();
    const left = await fetch(exportUrl, { signal: leaving.signal });
    await left.body!.getReader().read();
    leaving.abort();
    await eventually('the export to give its slot back', async () =>
      sys.running!.gateway!.inflight === 0 ? true : undefined,
    );
    const readAfterLeaving = await settled(pages);
    assert.ok(readAfterLeaving < pagesTotal / 2, `${readAfterLeaving} pages read for a reader that left`);
    t.diagnostic(`pages read of ${pagesTotal}: ${stalled} for a paused reader, ${readAfterLeaving} for one that left`);

    // As many paused readers as a gateway streams to at once: the next one waits (503, Retry-After).
    const paused = Array.from({ length: okfExportsPerGatewayMax }, () => new AbortController());
    await Promise.all(
      paused.map(async (c) => {
        const r = await fetch(exportUrl, { signal: c.signal });
        await r.body!.getReader().read();
      }),
    );
    const refused = await fetch(exportUrl);
    assert.equal(refused.status, 503);
    assert.equal(refused.headers.get('retry-after'), '1');
    assert.equal((await refused.json()).error, 'unavailable');
    for (const c of paused) c.abort();
    await eventually('the paused exports to end', async () =>
      sys.running!.gateway!.inflight === 0 ? true : undefined,
    );
    assert.equal((await fetch(exportUrl, { method: 'HEAD' })).status, 200);
  } finally {
    pages.stop();
  }
});

test('[CONTEXT-OKF-STREAM] a failure mid-stream closes the connection without the end line', async () => {
  // Pages wait on the lock until the gateway's bus deadline passes; the header line has gone out by then.
  await sys.sql.begin(async (tx) => {
    await tx`LOCK TABLE context_files IN ACCESS EXCLUSIVE MODE`;
    const res = await fetch(exportUrl);
    assert.equal(res.status, 200);
    const lines: string[] = [];
    await assert.rejects(eachLine(res.body!, (line) => lines.push(line)));
    assert.equal(lines.length, 1);
    assert.ok(headerCheck.Check(JSON.parse(lines[0]!)));
  });
  const whole = await getExport();
  assert.equal(whole.lines.at(-1).type, 'end', 'the next export is whole again');
});

/** The process's peak resident set (VmHWM) and current one (VmRSS), in MiB. */
function memoryMiB(pid: number): { peak: number; now: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return { peak: kb('VmHWM') / 1024, now: kb('VmRSS') / 1024 };
}

test('[CONTEXT-OKF-STREAM] 100,000 public files stream to a real HTTP client while the serving process grows by a fraction of the export', async (t) => {
  const env = await systemEnv({ LOG_LEVEL: 'warn' });
  let serve: RoleProcess | null = null;
  const sql = openPool(env.DATABASE_URL!, 2);
  try {
    // One process serves it all (`assay serve`): the gateway and the ledger service that reads the pages.
    serve = await startRoleProcess('serve', env, 'gateway listening');
    const fileBytes = 4800;
    const count = 100_000;
    await insertFiles(sql, count, fileBytes, true);
    await insertFiles(sql, 2000, 100, false);
    const pid = serve.child.pid!;
    // Start the peak from now (Linux: writing 5 to clear_refs resets VmHWM), so start-up does not count.
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    const before = memoryMiB(pid);
    let sampledPeak = before.now;
    const sampler = setInterval(() => {
      sampledPeak = Math.max(sampledPeak, memoryMiB(pid).now);
    }, 50);

    const started = performance.now();
    const res = await fetch(`${env.ASSAY_BASE_URL}${okfExportPath}`);
    assert.equal(res.status, 200);
    let files = 0;
    let lastId = '';
    let header: any = null;
    let end: any = null;
    const bytes = await eachLine(res.body!, (line) => {
      if (header === null) {
        header = JSON.parse(line);
        return;
      }
      if (!line.startsWith('{"type":"context","id":"')) {
        end = JSON.parse(line);
        return;
      }
      const id = line.slice(24, 60);
      assert.ok(id > lastId, 'in id order, each once');
      lastId = id;
      files++;
      if (files % 1000 === 1) {
        const f = JSON.parse(line);
        assert.ok(contextCheck.Check(f));
        assert.equal(f.sha256, sha256(f.content));
      }
    });
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    const after = memoryMiB(pid);
    assert.ok(headerCheck.Check(header));
    assert.deepEqual(end, { type: 'end', count, tag: header.tag });
    assert.equal(files, count);

    const exportMiB = bytes / 1_048_576;
    const growthMiB = after.peak - before.now;
    t.diagnostic(
      `${count} files, ${exportMiB.toFixed(0)} MiB in ${seconds.toFixed(1)} s: ${Math.round(count / seconds)} files/s, ` +
        `${(exportMiB / seconds).toFixed(0)} MiB/s; serving process RSS ${before.now.toFixed(0)} MiB before, ` +
        `peak ${after.peak.toFixed(0)} MiB (sampled ${sampledPeak.toFixed(0)}), growth ${growthMiB.toFixed(0)} MiB`,
    );
    assert.ok(exportMiB > 450, `the export is ${exportMiB.toFixed(0)} MiB`);
    // Holding the files would take more than the export's size; streaming takes two pages a stream, and the rest
    // is the garbage collector's headroom for the buffers that pass through.
    assert.ok(growthMiB < 128, `peak RSS grew by ${growthMiB.toFixed(0)} MiB for a ${exportMiB.toFixed(0)} MiB export`);
  } finally {
    serve?.child.kill('SIGTERM');
    await serve?.exited;
    await sql.end({ timeout: 1 });
    await dropEnv(env);
  }
});
