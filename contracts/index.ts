// Public entry of contracts/: schemas, the operation table, the error table, bus names and envelopes, configuration.
// Pure data, types and pure functions; no I/O, and nothing else of ours is imported.
export {
  actorKinds,
  type ActorKind,
  type AgentTokenClaims,
  type BusReply,
  type BusRequest,
  type Caller,
  decodeReply,
  encodeReply,
  errorReply,
  etagMatches,
  names,
  type Names,
  namespacePattern,
  okReply,
  replyParts,
  replyPartsHeader,
  type ServiceName,
  shardOf,
} from './bus.ts';
export { canonicalJson } from './canonical.ts';
export { type Config, configKeys, configMarkdownTable, idempotencyRetentionMs, loadConfig } from './config.ts';
export {
  type ErrorBody,
  type ErrorCode,
  type ErrorSpec,
  errorBody,
  errorCodes,
  errorDocsUrl,
  errorTable,
  transportStatus,
} from './errors.ts';
export {
  assertHandlers,
  type HandlerRecord,
  type OperationsOf,
  type OpRequest,
  type ReplyOf,
  type RequestOf,
  requiresCaller,
  type ServiceHandler,
  type ServiceHandlers,
  type Target,
} from './handlers.ts';
export { type HealthAlert, healthAlertKey } from './health.ts';
export {
  ArtifactQuote,
  GrantSandbox,
  GrantSandboxReply,
  IdempotencyLookupReply,
  type InternalOperation,
  type InternalOpId,
  internalOperations,
  ListingQuote,
  ListingState,
  MandateRecord,
  PublishArtifactCommand,
  PublishEditionCommand,
  SettleCommand,
  SubscriptionParties,
  SubscriptionRecord,
  type SubscriptionCycleCommand,
} from './internal.ts';
export { mcpSessionBucketMaxAgeMs, mcpSessionTouchEveryMs } from './mcp.ts';
export { type NatsFailure, natsFailure } from './nats-errors.ts';
export {
  assertOperationTable,
  changelogPath,
  deprecationInstants,
  deprecationNoticeDays,
  deprecationPolicyPath,
  type Dispatch,
  mcpIdempotencyKeyArgument,
  type Operation,
  type OperationDeprecation,
  operations,
  pathParamNames,
  pipelineErrors,
  type Scope,
  scopes,
  type TableOperation,
} from './operations.ts';
export {
  agentBucket,
  type BucketSpec,
  type Plan,
  PlanName,
  planNames,
  plans,
  RateClass,
  rateClasses,
  rateClassOf,
  utcDay,
} from './plans.ts';
export * as schemas from './schemas.ts';
export {
  type AccountViewT,
  accessTokenType,
  credentialPrefixes,
  grantTypes,
  type OAuthBody,
  type OAuthHttpT,
  type OAuthMessage,
  type OAuthReply,
  oauthMessages,
  oauthResources,
  passwordMinLength,
  revokedKeys,
  revokedRetentionMs,
  scopeWords,
} from './oauth.ts';
export { isUuid, pageLimits } from './schemas.ts';
export type {
  ArtifactT,
  BalanceT,
  ClaimT,
  EditionT,
  ErratumT,
  LedgerEntryT,
  LedgerPageT,
  ListingT,
  MandateT,
  OfferDocumentT,
  SandboxAgentT,
  SearchItemT,
  TopUpResultT,
  TrustT,
  VerificationReportT,
} from './schemas.ts';
export type {
  CallRecordedFact,
  CreditedFact,
  EscrowHeldFact,
  EscrowRefundedFact,
  EscrowReleasedFact,
  IdempotencyRecord,
  LedgerFact,
  ListingFact,
  MandateRevokedFact,
  MandateSetFact,
  PlanSetFact,
  SubscriptionChangedFact,
} from './facts.ts';

export { jsonDepthMax, jsonValueProblem, storableText, textProblem } from './text.ts';
export {
  canonicalBytes,
  reportSignedBody,
  type SignedBundle,
  type SignedReport,
  sha256Digest,
  type VerifyOutcome,
  verifyBundle,
  verifyEs256,
  verifyReport,
} from './signed.ts';
