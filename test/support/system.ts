// A whole Assay system for a test: roles started in this process (or as child processes), a private namespace
// and database, and helpers that talk to it only over HTTP (assertions may also read NATS and PostgreSQL).
import { execFile } from 'node:child_process';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { Logger } from 'pino';
import {
  type Config,
  factsRecorded,
  type LedgerFact,
  loadConfig,
  type Names,
  names as namesOf,
} from '../../contracts/index.ts';
import { eventsOf, principalFactsOf } from '../../actors/index.ts';
import { type Running, startRoles, type Role, type RoleOptions, allRoles } from '../../cli/roles.ts';
import {
  connectNats,
  dropNamespace,
  listingProjection,
  openPool,
  type Projection,
  projectionCheckpoint,
  type Sql,
} from '../../storage/index.ts';
import { dropDatabase, systemEnv } from './env.ts';
import { type CallOptions, call, type Reply } from './http.ts';
import { assayArgs } from './assay-cli.ts';

export interface Agent {
  token: string;
  principalId: string;
  agentId: string;
  balanceCents: number;
}

export interface TestSystem {
  env: Record<string, string>;
  config: Config;
  names: Names;
  baseUrl: string;
  running: Running | null;
  /** Connections of the test itself, for assertions against the real stores. */
  nc: NatsConnection;
  sql: Sql;
  call<T = any>(method: string, path: string, o?: CallOptions): Promise<Reply<T>>;
  register(): Promise<Agent>;
  stop(): Promise<void>;
}

export async function startSystem(
  overrides: Record<string, string> = {},
  roles: Role[] = allRoles,
  log?: Logger,
  options: RoleOptions = {},
): Promise<TestSystem> {
  const env = await systemEnv(overrides);
  const config = loadConfig(env);
  const running = roles.length > 0 ? await startRoles(config, roles, log, options) : null;
  const names = namesOf(config.namespace);
  const nc = await connectNats(config.natsUrl, 'assay-test');
  const sql = openPool(config.databaseUrl, 4);
  const baseUrl = config.baseUrl;
  const sys: TestSystem = {
    env,
    config,
    names,
    baseUrl,
    running,
    nc,
    sql,
    call: (method, path, o) => call(baseUrl, method, path, o),
    async register() {
      const r = await call(baseUrl, 'POST', '/sandbox/agents', { body: {} });
      if (r.status !== 201) throw new Error(`sandbox registration failed: ${r.status} ${JSON.stringify(r.body)}`);
      return {
        token: r.body.token,
        principalId: r.body.principal_id,
        agentId: r.body.agent_id,
        balanceCents: r.body.balance_cents,
      };
    },
    async stop() {
      await running?.stop();
      await sql.end({ timeout: 1 });
      await dropNamespace(nc, names).catch(() => {});
      await nc.drain().catch(() => {});
      await dropDatabase(new URL(config.databaseUrl).pathname.slice(1)).catch(() => {});
    },
  };
  return sys;
}

const root = new URL('../../', import.meta.url).pathname;

/** Run an `assay` command (the real CLI) against a test system; resolves with its exit code and output. */
export function runCli(sys: TestSystem, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [...assayArgs(), ...args],
      { cwd: root, env: { ...process.env, ...sys.env } },
      (err, stdout, stderr) =>
        resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    ),
  );
}

/**
 * Poll until `check` returns a value other than undefined, or fail after `timeoutMs`. What `check` throws is retried
 * (and named by the timeout); what `fatal` returns ends the wait at once.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 10_000,
  fatal: () => Error | null = () => null,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const failed = fatal();
    if (failed) throw failed;
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A background load the test waits alongside: `whileLoading` is `eventually`, but fails at once if the load failed;
 * `finish` stops it (the load's loops read `running()`), waits for it and rethrows its failure.
 */
export function backgroundLoad(start: (running: () => boolean) => Promise<unknown>[]) {
  let running = true;
  let failure: unknown = null;
  const done = Promise.all(start(() => running)).catch((err) => {
    failure = err;
    running = false;
  });
  return {
    whileLoading<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
      return eventually(what, check, timeoutMs, () =>
        failure ? new Error(`the load failed while waiting for ${what}: ${String(failure)}`) : null,
      );
    },
    async finish(): Promise<void> {
      running = false;
      await done;
      if (failure) throw failure;
    },
  };
}

/** Wait until every order held on the ledger has a settlement fact (released or refunded). */
export async function everyOrderSettled(sys: TestSystem, timeoutMs = 60_000): Promise<void> {
  await eventually(
    'every order to settle',
    async () => {
      const held = new Set<string>();
      for (const { fact } of await ledgerFacts(sys)) {
        if (fact.type === 'escrow_held') held.add(fact.orderId);
        if (fact.type === 'escrow_released' || fact.type === 'escrow_refunded') held.delete(fact.orderId);
      }
      return held.size === 0 ? true : undefined;
    },
    timeoutMs,
  );
}

/**
 * Wait until every projection the system runs (principal facts and the events store over LEDGER, listings over
 * LISTINGS) holds every fact its stream held when this was called. A test that reads a projection to show that a
 * refusal changed nothing reads it after this: otherwise a fact the refusal wrongly appended may simply not be
 * projected yet (the reads' own wait for the caller's latest fact gives up after a second).
 */
export async function projectionsCaughtUp(sys: TestSystem, timeoutMs = 30_000): Promise<void> {
  const jsm = await jetstreamManager(sys.nc);
  const projections: Projection<unknown>[] = [
    principalFactsOf(sys.names, sys.config) as Projection<unknown>,
    eventsOf(sys.names) as Projection<unknown>,
    listingProjection(sys.names) as Projection<unknown>,
  ];
  const targets = await Promise.all(
    projections.map(async (p) => ({ p, lastSeq: (await jsm.streams.info(p.stream)).state.last_seq })),
  );
  await eventually(
    'the projections to hold every fact',
    async () => {
      for (const { p, lastSeq } of targets) {
        const at = await projectionCheckpoint(sys.sql, p);
        if (at < lastSeq) throw new Error(`${p.checkpoint} at ${at}, its stream at ${lastSeq}`);
      }
      return true;
    },
    timeoutMs,
  );
}

/** Remove the namespace and database of an environment made by systemEnv (for systems run as child processes). */
export async function dropEnv(env: Record<string, string>): Promise<void> {
  const nc = await connectNats(env.NATS_URL!, 'assay-test-cleanup');
  try {
    await dropNamespace(nc, namesOf(env.ASSAY_NAMESPACE!));
  } finally {
    await nc.drain();
  }
  await dropDatabase(new URL(env.DATABASE_URL!).pathname.slice(1));
}

/** Every fact of the namespace's LEDGER stream, in order. */
/**
 * The ledger as projected (credit rows, and the escrow entries stored with their orders, through the `ledger` view),
 * in stream order, shaped like `ledgerRow` so it can be compared with the facts' entries.
 */
export async function projectedLedger(sys: TestSystem) {
  return sys.sql`SELECT stream_seq, id, principal_id, type, amount_cents, balance_after_cents, reference, run_id,
                        sandbox, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
                 FROM ledger ORDER BY stream_seq, type IN ('escrow_released', 'escrow_refunded')`;
}

/**
 * Every LEDGER fact, as transitions: a hold settled in its own commit is read as the hold, then its settlement, at
 * the same sequence (contracts/facts.ts, factsRecorded).
 */
export async function ledgerFacts(sys: TestSystem): Promise<{ seq: number; fact: LedgerFact }[]> {
  const js = jetstream(sys.nc);
  const name = sys.names.streams.ledger.name;
  const info = await (await js.jetstreamManager()).streams.info(name);
  if (info.state.messages === 0) return [];
  const consumer = await js.consumers.get(name);
  const out: { seq: number; fact: LedgerFact }[] = [];
  const messages = await consumer.consume();
  for await (const m of messages) {
    for (const fact of factsRecorded(m.json<LedgerFact>())) out.push({ seq: m.seq, fact });
    if (m.seq >= info.state.last_seq) break;
  }
  await messages.close();
  return out;
}
