// The measurement behind the blob store of device sync (docs/sync.md, "Where blobs live"): the same blobs written
// to the three candidates with the same streaming hash, on this machine's real servers. Many small blobs (the
// common folder) and one large blob fed in 1 MiB chunks (as an upload arrives). `npm run bench:sync -- --stores`.
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { mkdir, open, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import postgres from 'postgres';
import { connectNats } from '../../storage/index.ts';
import { dropDatabase, natsUrl, pgServerUrl, uniqueNamespace } from '../support/env.ts';

interface Candidate {
  name: string;
  /** Store one blob from its chunks; resolves once it is durable as the store defines it. */
  put(digest: string, chunks: AsyncIterable<Uint8Array>): Promise<void>;
  close(): Promise<void>;
}

async function* chunked(bytes: Uint8Array, size = 1 << 20): AsyncIterable<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += size) yield bytes.subarray(at, at + size);
}

async function* repeated(chunk: Uint8Array, count: number): AsyncIterable<Uint8Array> {
  for (let i = 0; i < count; i++) yield chunk;
}

async function fileSystem(): Promise<Candidate> {
  const dir = mkdtempSync(join(tmpdir(), 'assay-sync-measure-'));
  return {
    name: 'file system (temp file, fsync, rename)',
    async put(digest, chunks) {
      const tmp = join(dir, `.tmp-${digest}-${process.pid}`);
      const out = createWriteStream(tmp);
      const h = createHash('sha256');
      for await (const c of chunks) {
        h.update(c);
        if (!out.write(c)) await once(out, 'drain');
      }
      out.end();
      await once(out, 'finish');
      const fh = await open(tmp, 'r');
      await fh.sync();
      await fh.close();
      const final = join(dir, digest.slice(0, 2), digest);
      await mkdir(join(dir, digest.slice(0, 2)), { recursive: true });
      await rename(tmp, final);
      h.digest('hex');
    },
    async close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function objectStore(): Promise<Candidate> {
  const nc = await connectNats(natsUrl, 'sync-measure');
  const bucket = uniqueNamespace('syncmeasure');
  const os = await new Objm(nc).create(bucket, { storage: 'file' });
  return {
    name: 'JetStream object store (file storage)',
    async put(digest, chunks) {
      const h = createHash('sha256');
      const iterator = chunks[Symbol.asyncIterator]();
      const stream = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = await iterator.next();
          if (next.done) controller.close();
          else {
            h.update(next.value);
            controller.enqueue(next.value);
          }
        },
      });
      await os.put({ name: digest }, stream);
      h.digest('hex');
    },
    async close() {
      await (await jetstreamManager(nc)).streams.delete(`OBJ_${bucket}`);
      await nc.drain();
    },
  };
}

async function largeObjects(): Promise<Candidate> {
  const db = `assay_${uniqueNamespace('syncmeasure')}`;
  const admin = postgres(`${pgServerUrl}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`CREATE DATABASE "${db}"`);
  await admin.end();
  const sql = postgres(`${pgServerUrl}/${db}`, { max: 4, onnotice: () => {} });
  await sql`CREATE TABLE blobs (digest text PRIMARY KEY, oid oid NOT NULL)`;
  return {
    name: 'PostgreSQL large objects (lo_put per chunk, one transaction)',
    async put(digest, chunks) {
      const h = createHash('sha256');
      await sql.begin(async (tx) => {
        const [{ oid }] = (await tx`SELECT lo_create(0) AS oid`) as unknown as [{ oid: number }];
        let offset = 0;
        for await (const c of chunks) {
          h.update(c);
          await tx`SELECT lo_put(${oid}, ${offset}, ${Buffer.from(c.buffer, c.byteOffset, c.byteLength)})`;
          offset += c.byteLength;
        }
        await tx`INSERT INTO blobs VALUES (${digest}, ${oid})`;
      });
      h.digest('hex');
    },
    async close() {
      await sql.end();
      await dropDatabase(db);
    },
  };
}

/** Small blobs with `concurrency` uploads at once, then one large blob; rates and the RSS growth while writing. */
async function measure(c: Candidate, smallCount: number, smallBytes: number, largeMiB: number, concurrency: number) {
  const small = Array.from({ length: smallCount }, () => randomBytes(smallBytes));
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 20);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < small.length) {
        const b = small[next++]!;
        await c.put(createHash('sha256').update(b).digest('hex'), chunked(b));
      }
    }),
  );
  const smallS = (performance.now() - t0) / 1000;
  const chunk = randomBytes(1 << 20);
  const t1 = performance.now();
  await c.put(`large-${randomBytes(8).toString('hex')}`, repeated(chunk, largeMiB));
  const largeS = (performance.now() - t1) / 1000;
  clearInterval(sampler);
  return {
    store: c.name,
    small_blobs_per_s: Math.round(smallCount / smallS),
    large_mb_per_s: Math.round((largeMiB * 1.048576) / largeS),
    rss_growth_mb: Math.round((peak - rssBefore) / 1e6),
  };
}

export async function measureStores(o: { smallCount?: number; largeMiB?: number } = {}) {
  const smallCount = o.smallCount ?? 2000;
  const largeMiB = o.largeMiB ?? 256;
  const rows = [];
  for (const make of [fileSystem, objectStore, largeObjects]) {
    const c = await make();
    try {
      rows.push(await measure(c, smallCount, 4096, largeMiB, 16));
    } finally {
      await c.close();
    }
  }
  return { small: `${smallCount} blobs of 4 KiB, 16 at once`, large: `one blob of ${largeMiB} MiB`, rows };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const r = await measureStores();
  console.log(`blob store candidates: ${r.small}; ${r.large}`);
  console.table(r.rows);
}
