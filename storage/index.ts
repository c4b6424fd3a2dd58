// Public entry of storage/: JetStream definitions, PostgreSQL access and migrations, projections.
export { activateKey, activeKey, allKeys, type KeyPurpose, type StoredKey } from './keys.ts';
export { insertLedgerRows, ledgerProjection, ledgerRow, readLedgerPage } from './ledger-projection.ts';
export { type Projection, projectionCheckpoint, rebuildProjection, runProjection } from './projector.ts';
export { connectNats, dropNamespace, duplicateWindowMs, ensureStreams, isNotFound, openBuckets } from './nats.ts';
export { ensureDatabase, migrate, openPool, type Sql } from './postgres.ts';
export { countRateWindow, insertSandboxPrincipal, type NewSandboxPrincipal, pruneRateWindows } from './registry.ts';
