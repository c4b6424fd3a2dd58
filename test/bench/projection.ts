// `npm run bench:projection`: what PostgreSQL spends per purchase on the LEDGER stream's shared projection pass
// (principal facts and events), without NATS, the gateway or the actors around it, so a change to the projection's
// statements or tables is measured in seconds and without the full benchmark's run-to-run drift. The real
// projections (`principalFactsOf`, `eventsOf`) apply synthetic purchases in batches as the projector commits them
// (one transaction: both projections, both checkpoints, synchronous_commit off): 1,000 buyers over 5,000 artifacts
// from 5 sellers, each purchase held and settled in one fact as the actor records it when the report is known, a
// quarter of them refunded. Printed: the backend's CPU per purchase (from /proc: the one connection's server
// process), wall time per purchase, and, when the server preloads pg_stat_statements, each statement's share.
//   npm run bench:projection -- [--batches 400] [--batch 100] [--sql "<DDL to run first, to measure a variant>"]
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { eventsOf, principalFactsOf } from '../../actors/index.ts';
import { type LedgerFact, loadConfig, names as namesOf } from '../../contracts/index.ts';
import { ensureDatabase, migrate, openPool, type Sql } from '../../storage/index.ts';
import { dropDatabase, pgServerUrl, uniqueNamespace } from '../support/env.ts';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '400' },
    batch: { type: 'string', default: '100' },
    sql: { type: 'string' },
  },
});
const batches = Number(values.batches);
const perBatch = Number(values.batch);

const ns = uniqueNamespace('proj');
const db = `assay_${ns}`;
const url = `${pgServerUrl}/${db}`;
await ensureDatabase(url);
// One connection: the server process whose CPU is read is the one that does all of the work.
const sql = openPool(url, 1);
try {
  await migrate(sql);
  if (values.sql) await sql.unsafe(values.sql);
  const names = namesOf(ns);
  const config = loadConfig({ ...process.env, DATABASE_URL: url, ASSAY_NAMESPACE: ns });
  const projections = [principalFactsOf(names, config), eventsOf(names)];
  for (const p of projections)
    await sql`INSERT INTO projection_checkpoints (name, last_seq) VALUES (${p.checkpoint}, 0)`;

  const buyers = Array.from({ length: 1000 }, () => randomUUID());
  const artifacts = Array.from({ length: 5000 }, () => randomUUID());
  const sellers = Array.from({ length: 5 }, () => randomUUID());
  let seq = 0;
  let bought = 0;
  const startMs = Date.now();
  /** A purchase as the principal actor appends it when the edition's report is known: held and settled at once. */
  const purchase = (): LedgerFact => {
    const i = bought++;
    const buyer = buyers[i % buyers.length]!;
    const artifact = artifacts[(i * 7919) % artifacts.length]!;
    const released = i % 4 !== 0;
    const balance = 1_000_000_000 - i * 500;
    return {
      id: randomUUID(),
      at: new Date(startMs + i).toISOString(),
      principalId: buyer,
      sandbox: true,
      balanceAfterCents: balance - 500,
      type: 'escrow_held',
      orderId: randomUUID(),
      agentId: buyer,
      listingId: artifact,
      artifactId: artifact,
      editionId: randomUUID(),
      sellerPrincipalId: sellers[i % sellers.length]!,
      priceCents: 500,
      formats: ['md'],
      floor: 0.7,
      priceSnapshotId: `${artifact}@3`,
      subscriptionId: null,
      idempotency: { key: `bench-${i}`, requestHash: 'a'.repeat(64), agentId: buyer },
      settled: {
        id: randomUUID(),
        type: released ? 'escrow_released' : 'escrow_refunded',
        balanceAfterCents: released ? balance - 500 : balance,
        reportDigest: `sha256:${'b'.repeat(64)}`,
        meanEntailment: released ? 0.9 : 0.5,
      },
    } as LedgerFact;
  };
  /** Commit batches as the projector does: both projections and both checkpoints in one transaction. */
  const project = async (count: number) => {
    for (let b = 0; b < count; b++) {
      const from = seq;
      const batch = Array.from({ length: perBatch }, () => ({ seq: ++seq, fact: purchase() }));
      await sql.begin(async (tx) => {
        const t = tx as unknown as Sql;
        await t`SET LOCAL synchronous_commit TO off`;
        await Promise.all(projections.map((p) => p.apply(t, batch)));
        for (const p of projections)
          await t`UPDATE projection_checkpoints SET last_seq = ${seq} WHERE name = ${p.checkpoint} AND last_seq = ${from}`;
      });
    }
  };
  const [backend] = await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  const backendCpuSeconds = () => {
    const fields = readFileSync(`/proc/${backend!.pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  };
  // Tables with some content first, as on a running system.
  await project(Math.ceil(batches / 2));
  const [preloads] = await sql<{ statements: boolean }[]>`
    SELECT current_setting('shared_preload_libraries') LIKE '%pg_stat_statements%' AS statements`;
  const statements = preloads!.statements;
  if (statements) {
    await sql`CREATE EXTENSION IF NOT EXISTS pg_stat_statements`;
    await sql`SELECT pg_stat_statements_reset()`;
  }
  const cpu0 = backendCpuSeconds();
  const wall0 = performance.now();
  await project(batches);
  const n = batches * perBatch;
  const us = (x: number) => `${x.toFixed(1)} µs`;
  console.log(
    `projection of ${n} purchases, ${perBatch} a batch${values.sql ? ` (after: ${values.sql})` : ''}: PostgreSQL backend CPU ${us(((backendCpuSeconds() - cpu0) / n) * 1e6)} per purchase, wall ${us(((performance.now() - wall0) / n) * 1000)} per purchase`,
  );
  if (!statements) {
    console.log('  (each statement: preload pg_stat_statements on the server, shared_preload_libraries)');
  } else {
    const rows = await sql<{ query: string; calls: number; ms: number }[]>`
      SELECT left(regexp_replace(query, '[[:space:]]+', ' ', 'g'), 70) AS query, calls::int, total_exec_time AS ms
      FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT LIKE '%pg_stat_statements%'
      ORDER BY total_exec_time DESC LIMIT 8`;
    for (const r of rows)
      console.log(
        `  ${us((r.ms * 1000) / n).padStart(9)} per purchase in ${String(r.calls).padStart(5)} calls: ${r.query}`,
      );
  }
} finally {
  await sql.end();
  await dropDatabase(db);
}
