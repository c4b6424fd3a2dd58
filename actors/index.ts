// Public entry of actors/: the actor runtime, the principal actor and the stateless services.
export { authService } from './auth/service.ts';
export { ensureActiveKey, publicJwks, rotateKey, signAgentToken, type TokenRequest } from './auth/keys.ts';
export { deliveryService } from './delivery/service.ts';
export { oauthService } from './oauth/service.ts';
export { eventRows, eventsOf } from './ledger/events.ts';
export { principalFactRows, principalFactsOf } from './ledger/projection.ts';
export { ledgerService } from './ledger/service.ts';
export { skillsService } from './skills/service.ts';
export { runWebhookDelivery, senderOptionsOf } from './webhooks/delivery.ts';
export { webhooksService } from './webhooks/service.ts';
export { x402PayerIds, x402Service } from './x402/service.ts';
export { principalBehaviour } from './principal/principal.ts';
export { type IdempotencyIndex, IdempotencyIndexClient } from './principal/idempotency-index.ts';
export { QuoteCache, type Quotes } from './principal/quotes.ts';

export { type Clock, type IdSource, randomIds, systemClock } from './runtime/clock.ts';
export { type ActorBehaviour, ActorHost, type Decision, type HostOptions } from './runtime/host.ts';
export { ShardLeases, type ShardRef } from './runtime/leases.ts';
export { askInternal, busRequest, serveService } from './runtime/service.ts';
export { startSingleton } from './runtime/singleton.ts';
export { sandboxScopes, sandboxService } from './sandbox/service.ts';
export { catalogService } from './catalog/service.ts';
export { type PdfInput, pdfMarkdownCharsMax, pdfRendererVersion, renderPdf } from './delivery/pdf-input.ts';
export { trustScore } from './catalog/trust.ts';
export { trustHalfLifeDays, weightAtEpoch } from './shared/trust-weight.ts';
export { listingBehaviour } from './listing/listing.ts';
export { runOutboxRelay } from './outbox/relay.ts';
export { runSettlementSweeper } from './settlement/worker.ts';
export { runDueCycles, runSubscriptionScheduler, type SchedulerDeps } from './subscriptions/scheduler.ts';
export { expireDue, runApprovalSweep } from './approvals/sweep.ts';

export { corpusArtifact, corpusArtifactRow, corpusErrata, corpusSellers, loadSandboxCorpus } from './sandbox/corpus.ts';
export { currentJudgeVersion, judgeModel, judgePromptHash, judgeVersions } from './verification/judge.ts';
export {
  builtinJudge,
  type ClaimCase,
  type Judge,
  type JudgeRun,
  type Judges,
  JudgeUnavailable,
  judgeFromConfig,
  judgesFromConfig,
  judgeVersionSequence,
  MemoryVerdictCache,
  OpenAIJudge,
  PgVerdictCache,
} from './verification/judges/index.ts';
export { buildReport, meetsFloor, signReport } from './verification/report.ts';
export { runVerifier, verifyEdition } from './verification/worker.ts';
export { scanContent, scanPaths } from './sync/scan.ts';
export { changesBetween, type SyncDeps, syncService } from './sync/service.ts';
export { runSyncSweep, type SyncSweepDeps, type SyncSweepResult, sweepSyncStore } from './sync/sweep.ts';
export { paymentsService } from './payments/service.ts';
export { runPayoutSchedule } from './payments/payouts.ts';
export { processorOf } from './payments/processor.ts';
export { type AuditReport, runAudit } from './audit/audit.ts';
export { telemetry as actorsTelemetry } from './runtime/telemetry.ts';
export type { Violation, ViolationKind } from './audit/violations.ts';
