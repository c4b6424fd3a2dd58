// What uploads leave behind (docs/operations.md, Device sync sweep): the sweep of a running system, every 200 ms here,
// releases reservations whose upload stopped and deletes blob files no owner holds and no upload is storing, and
// temporary files, once older than the grace period; it keeps held blobs, reserved ones and young files. An upload
// whose reservation was released that way is refused at its record when the quota has no room, and its file goes
// at once.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { freePort } from '../support/env.ts';
import { digestOf, putBlob, type SyncAccount, syncAccount } from '../support/sync.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';

const blobDir = mkdtempSync(join(tmpdir(), 'assay-sync-sweep-'));
const quotaBytes = 100_000;
const graceSeconds = 600;
let sys: TestSystem;
let metricsPort: number;
let owner: SyncAccount;

before(async () => {
  metricsPort = await freePort();
  sys = await startSystem({
    ASSAY_SYNC_DIR: blobDir,
    ASSAY_SYNC_QUOTA_BYTES: String(quotaBytes),
    ASSAY_SYNC_SWEEP_MS: '200',
    ASSAY_SYNC_ORPHAN_GRACE_SECONDS: String(graceSeconds),
    ASSAY_SYNC_RESERVATION_TTL_SECONDS: '600',
    ASSAY_METRICS_PORT: String(metricsPort),
  });
  owner = await syncAccount(sys, 'sweep-owner@example.com');
});
after(async () => {
  await sys?.stop();
  rmSync(blobDir, { recursive: true, force: true });
});

const pathOf = (digest: string) => {
  const hex = digest.slice('sha256:'.length);
  return join(blobDir, hex.slice(0, 2), hex.slice(2, 4), hex);
};
/** A file put in the store by hand, as a crash or a lost deletion leaves one; `ageS` seconds old. */
function plant(bytes: Buffer, ageS: number): string {
  const digest = digestOf(bytes);
  mkdirSync(join(pathOf(digest), '..'), { recursive: true });
  writeFileSync(pathOf(digest), bytes);
  age(pathOf(digest), ageS);
  return digest;
}
function age(path: string, seconds: number): void {
  const at = new Date(Date.now() - seconds * 1000);
  utimesSync(path, at, at);
}

/** A counter's value from the admin listener's scrape (0 when it has no such series). */
async function counter(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(' ')[1]) : 0;
}
/** Wait until two more sweep passes have run: at least one of them started after this call. */
async function sweptTwice(): Promise<void> {
  const from = await counter('assay_sync_sweeps_total', '{outcome="ok"}');
  await eventually(
    'two sweep passes',
    async () => ((await counter('assay_sync_sweeps_total', '{outcome="ok"}')) >= from + 2 ? true : undefined),
    30_000,
  );
}

/** The owner's usage row (all zero when it has none: a row left all zero is deleted) and its reservations. */
async function usage(principalId: string) {
  const [u] = await sys.sql<{ bytes: number; reserved_bytes: number; reservations: number }[]>`
    SELECT coalesce((SELECT bytes FROM sync_usage WHERE principal_id = ${principalId}), 0)::int AS bytes,
           coalesce((SELECT reserved_bytes FROM sync_usage WHERE principal_id = ${principalId}), 0)::int AS reserved_bytes,
           (SELECT count(*)::int FROM sync_reservations WHERE principal_id = ${principalId}) AS reservations`;
  return u!;
}

test('[SEC-SYNC-ORPHAN-SWEEP] the sweep deletes unowned blob files and temporaries past the grace period and releases stale reservations; held, reserved and young files stay', async () => {
  const old = 2 * 3600;
  // Read before anything is planted: the sweep runs every 200 ms meanwhile, and may remove an orphan at once.
  const removedBefore = await counter('assay_sync_orphans_removed_total', '{kind="blob"}');
  // A blob the owner holds, as old as the orphans: it stays.
  const held = Buffer.from('held by its owner\n');
  assert.equal((await putBlob(sys, owner.token, held)).status, 201);
  age(pathOf(digestOf(held)), old);
  // Orphans: a file with no row (a gateway died between the rename and the record), and one with a row but no
  // owner (a refused upload before this fix left those).
  // (The sweep runs meanwhile: each thing is planted whole, its rows before its file.)
  const bare = plant(Buffer.from('orphan without a row\n'), old);
  const rowedBytes = Buffer.from('orphan with a row\n');
  const rowed = digestOf(rowedBytes);
  await sys.sql`INSERT INTO sync_blobs (digest, size_bytes, created_at)
                VALUES (${rowed}, ${rowedBytes.length}, now() - interval '2 hours')`;
  plant(rowedBytes, old);
  // Young: within the grace period, whoever it belongs to.
  const young = plant(Buffer.from('written a moment ago\n'), 0);
  // Reserved by an upload under way (its reservation is fresh): its bytes are being stored, so the file stays. And a
  // reservation whose upload stopped two hours ago (its gateway died): its quota comes back. The reservations
  // first, as an upload makes them, with the usage row's sum kept as the service keeps it.
  const reservedBytes = Buffer.from('being uploaded right now\n');
  const reserved = digestOf(reservedBytes);
  await sys.sql.begin(async (tx) => {
    await tx`
      INSERT INTO sync_reservations (id, principal_id, digest, size_bytes, created_at, touched_at) VALUES
        (${randomUUID()}, ${owner.principalId}, ${reserved}, ${reservedBytes.length}, now(), now()),
        (${randomUUID()}, ${owner.principalId}, ${digestOf('never finished')}, 5000, now() - interval '2 hours', now() - interval '2 hours')`;
    await tx`UPDATE sync_usage SET reserved_bytes = reserved_bytes + ${reservedBytes.length + 5000}
             WHERE principal_id = ${owner.principalId}`;
  });
  plant(reservedBytes, old);
  const tmp = join(blobDir, 'tmp');
  writeFileSync(join(tmp, 'stale-upload'), Buffer.alloc(1000));
  age(join(tmp, 'stale-upload'), old);
  writeFileSync(join(tmp, 'live-upload'), Buffer.alloc(10));

  await sweptTwice();

  assert.ok(!existsSync(pathOf(bare)), 'an old file with no owner is deleted');
  assert.ok(!existsSync(pathOf(rowed)), 'an old file whose row has no owner is deleted');
  assert.equal((await sys.sql`SELECT 1 FROM sync_blobs WHERE digest IN (${bare}, ${rowed})`).length, 0, 'with its row');
  assert.ok(existsSync(pathOf(digestOf(held))), 'a held blob stays, however old');
  assert.ok(existsSync(pathOf(young)), 'a file younger than the grace period stays');
  assert.ok(existsSync(pathOf(reserved)), 'a file an upload under way has reserved stays');
  assert.deepEqual(readdirSync(tmp), ['live-upload'], 'an old temporary file is deleted, a young one stays');
  const u = await usage(owner.principalId);
  assert.deepEqual(
    [u.reserved_bytes, u.reservations],
    [reservedBytes.length, 1],
    'the stale reservation is released, the live one kept',
  );
  assert.ok((await counter('assay_sync_orphans_removed_total', '{kind="blob"}')) >= removedBefore + 2);
  assert.ok((await counter('assay_sync_orphans_removed_total', '{kind="temporary"}')) >= 1);
  assert.ok((await counter('assay_sync_reservations_expired_total')) >= 1);
  // The held blob still downloads whole.
  const down = await fetch(`${sys.config.webUrl}/api/sync/blobs/${digestOf(held)}`, {
    headers: { authorization: `Bearer ${owner.token}` },
  });
  assert.deepEqual(Buffer.from(await down.arrayBuffer()), held);
});

test('[SEC-SYNC-QUOTA-RESERVED] an upload whose reservation the sweep released is refused at its record when the quota has no room, and its file is deleted at once', async () => {
  const late = await syncAccount(sys, 'sweep-late@example.com');
  const bytes = Buffer.alloc(40_000, 9);
  const digest = digestOf(bytes);
  const req = http.request(`${sys.config.webUrl}/api/sync/blobs/${digest}`, {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${late.token}`,
      'content-type': 'application/octet-stream',
      'content-length': String(bytes.length),
    },
  });
  const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(Buffer.concat(chunks).toString()) }));
    });
    req.on('error', reject);
  });
  void answer.catch(() => {}); // awaited below; a failure before then must not be an unhandled rejection
  req.write(bytes.subarray(0, 1000));
  await eventually('the upload to hold a reservation', async () =>
    (await usage(late.principalId)).reservations === 1 ? true : undefined,
  );
  // Its gateway is judged dead: the reservation is stale, and the sweep gives its quota back.
  await sys.sql`UPDATE sync_reservations SET touched_at = now() - interval '1 day' WHERE principal_id = ${late.principalId}`;
  await eventually('the sweep to release it', async () =>
    (await usage(late.principalId)).reservations === 0 ? true : undefined,
  );
  // Meanwhile the quota fills up.
  const filler = Buffer.alloc(quotaBytes, 8);
  assert.equal((await putBlob(sys, late.token, filler)).status, 201);
  req.end(bytes.subarray(1000));
  const r = await answer;
  assert.equal(r.status, 507, JSON.stringify(r.body));
  assert.equal(r.body.error, 'quota_exceeded');
  assert.ok(!existsSync(pathOf(digest)), "the refused upload's file is deleted when it is refused");
  assert.equal((await sys.sql`SELECT 1 FROM sync_blobs WHERE digest = ${digest}`).length, 0);
  assert.deepEqual(await usage(late.principalId), { bytes: quotaBytes, reserved_bytes: 0, reservations: 0 });
  assert.ok((await counter('assay_sync_orphans_removed_total', '{kind="refused"}')) >= 1);
});
