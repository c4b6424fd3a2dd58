// Public entry of storage/: JetStream definitions, PostgreSQL access and migrations, projections.
export { activateKey, activeKey, allKeys, type KeyPurpose, type StoredKey } from './keys.ts';
export { type IdempotencyKeyRow, lookupIdempotencyKeys } from './idempotency.ts';
export { type LedgerRow, readLedgerPage } from './ledger-projection.ts';
export {
  type DeriveRows,
  type OrderInsertRow,
  type OrderSettlementRow,
  type PayoutRow,
  type PrincipalFactRows,
  principalFactsCheckpoint,
  principalFactsProjection,
} from './principal-facts.ts';
export {
  type DeriveEvents,
  type EventInsertRow,
  type EventRow,
  eventSeqThroughSource,
  eventsPage,
  eventsProjection,
  latestEvents,
} from './events.ts';

export { type HealthAlerts, healthAlerts } from './health.ts';
export {
  accountByEmail,
  accountByPrincipal,
  type AccountRow,
  endWebSession,
  insertAccount,
  insertWebSession,
  webSession,
} from './accounts.ts';
export * as oauthStore from './oauth.ts';
export {
  getRenderedPdf,
  insertReceipts,
  type NewReceipt,
  type ReceiptRow,
  type RenderedPdf,
  receiptsPage,
  storeRenderedPdf,
} from './deliveries.ts';
export { getVerdicts, putVerdicts } from './judge-verdicts.ts';
export { createOrderedConsumer } from './projection-consumer.ts';
export {
  parkedFacts,
  type Projection,
  type ProjectorOptions,
  projectionCheckpoint,
  rebuildProjection,
  runProjection,
  runProjections,
} from './projector.ts';
export {
  connectNats,
  dropNamespace,
  duplicateWindowMs,
  ensureStreams,
  isNotFound,
  natsPatchedVersion,
  natsPatches,
  openBuckets,
  openHealthBucket,
} from './nats.ts';
export { ensureDatabase, jsonRows, migrate, openPool, type Sql } from './postgres.ts';
export {
  accountSandbox,
  countThisMinute,
  ensureAccountSandbox,
  ensurePrincipal,
  insertSandboxAgent,
  insertSandboxPrincipal,
  type NewSandboxPrincipal,
  sandboxAgentsOf,
  subjectSandbox,
} from './registry.ts';
export {
  type ArtifactRow,
  currentEdition,
  purchaseEdition,
  type EditionRow,
  getArtifact,
  getEdition,
  getReport,
  insertArtifact,
  insertArtifactsBulk,
  insertEdition,
  type NewEdition,
  browseArtifacts,
  browseStatement,
  catalogSizeEstimate,
  type CatalogTermStats,
  catalogTermStats,
  type TierLookUp,
  type RankedPosition,
  rankedArtifacts,
  rankedStatement,
  runStatement,
  refreshSearchRanks,
  searchGeneration,
  type SearchFilters,
  type SearchRow,
  type SearchShape,
  type Statement,
  storeReport,
  type StoredReportInput,
  type TopicQueries,
  type TopicWord,
  topicQueries,
  topicWords,
} from './catalog.ts';
export {
  closeErratum,
  type ErratumRow,
  errataForArtifact,
  errataForArtifacts,
  openErratum,
} from './errata.ts';
export { getListingRow, type ListingRow, listingProjection, liveListingsFor, sellerListings } from './listings.ts';
export { deleteOutbox, enqueueOutbox, enqueueOutboxBulk, type OutboxRow, outboxChannel, peekOutbox } from './outbox.ts';

export {
  addTrustSamples,
  addToTrustSums,
  type TrustAggregate,
  type TrustSample,
  trustAggregates,
} from './trust.ts';
export {
  getBundle,
  getOrder,
  type OrderRow,
  ordersPage,
  ordersWithoutReport,
  payoutsPage,
  purchasedArtifactIds,
  settleableOrders,
  storeBundle,
} from './orders.ts';
export {
  type ClaimedCycle,
  claimDueCycles,
  releaseClaims,
  subscriptionParties,
  subscriptionRecordOf,
  type SubscriptionRow,
  subscriptionsOfUnlistedListings,
  subscriptionsPage,
  type SubscriptionUpsertRow,
} from './subscriptions.ts';
export { type ApprovalUpsertRow, expiredApprovals } from './approvals.ts';
export {
  type ContextFileRow,
  type PublicContextRow,
  publicContextFile,
  readableContextFiles,
  writeContextFiles,
} from './context-files.ts';
export { okfExportTag, okfPageBytes } from './okf-export.ts';
export { type ApiKeyRow, apiKeysOf, insertApiKey, revokeApiKey, useApiKey } from './api-keys.ts';
export {
  type AttemptRow,
  type AttemptResult,
  claimDueDeliveries,
  type DueDelivery,
  rearmEvent,
  recordAttempts,
  startDisabling,
  stopDisabling,
  type WebhookRow,
  webhookAttempts,
} from './webhooks.ts';
export {
  BlobDir,
  type SyncAddResult,
  syncAddOwnedBlobs,
  syncCollectOrphans,
  syncBlobHeld,
  syncBlobHeldAndUsage,
  syncCommitKey,
  syncCommitSnapshot,
  syncExportFor,
  syncForget,
  syncKnownScans,
  syncLocatorExists,
  syncMissingDigests,
  type SyncRevisionRow,
  syncRelease,
  syncReleaseStale,
  syncReserve,
  syncRevisionsOf,
  syncStoreScans,
  syncTouchReservation,
  syncUnreferenced,
  syncUsage,
} from './sync.ts';
export {
  type BillingProfileRow,
  type BillingRow,
  billingProfile,
  payableAccruals,
  type PayableAccruals,
  type HeldAccrual,
  type StandingRow,
  payoutCandidates,
  principalTopups,
  sellerTransfers,
  type TopupRow,
  type TransferRow,
} from './billing.ts';
export { exportPage } from './account-export.ts';
export { addToEscrowTotals, escrowTotals, pendingDeliveries } from './metrics-readings.ts';
export { telemetry as storageTelemetry } from './telemetry.ts';
export {
  type AuditEventRow,
  type AuditLedgerEntryRow,
  type AuditListingRow,
  type AuditOrderRow,
  type AuditPayoutRow,
  type AuditSnapshot,
  type AuditTransferRow,
  checkpointsNow,
  replayStream,
  streamLastSeq,
  withAuditSnapshot,
} from './audit.ts';
export { agentNames, type ListingLabelRow, listingLabels } from './labels.ts';
export {
  ensureX402Payer,
  getReceipt,
  getX402Bundle,
  getX402Payment,
  recordX402Order,
  recordX402Payment,
  recordX402Settlement,
  storeX402Bundle,
  type X402OfferRow,
  x402Offers,
  type X402PaymentRow,
} from './x402.ts';
