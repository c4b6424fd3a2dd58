// Public entry of gateway/: the agent API's HTTP face and the pieces the composition root wires into it (bus,
// token verifier, pipeline, MCP endpoint and session store), the router, and the generated documents.
export { Authenticator } from './authenticator.ts';
export { GatewayBus } from './bus.ts';
export { type Deprecation, deprecationHeaders, deprecationsOf } from './deprecation.ts';
export { errorsPage } from './docs.ts';
export { McpEndpoint, type McpEndpointDeps } from './mcp/endpoint.ts';
export { type McpSession, McpSessions, type McpSessionsBucket, type McpSessionsOptions } from './mcp/sessions.ts';
export { type McpTool, toolsFromTable } from './mcp/tools.ts';
export { agentOpenApiDocument } from './openapi/agent.ts';
export { contextOpenApiDocument } from './openapi/contexts.ts';
export { type CallInput, type CallResult, Pipeline, requestHash } from './pipeline.ts';
export { admitAll, RateLimiter, type RateTaker, type RateVerdict } from './rate-limiter.ts';
export { RevokedSet } from './revocations.ts';
export { compileRouter, type Route, type RouteMatch } from './router.ts';
export { Gateway, type GatewayOptions } from './server.ts';
export { jwksOverBus, TokenVerifier, type TokenVerifierOptions } from './tokens.ts';
export { WebFace, webRoutes } from './web/face.ts';
export { ContextFace } from './context/face.ts';
export { OkfExport } from './context/okf.ts';
export { SyncFace } from './sync/face.ts';
export { X402Face } from './x402/face.ts';
export { telemetry as gatewayTelemetry } from './telemetry.ts';
