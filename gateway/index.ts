// Public entry of gateway/: the uWebSockets.js server, the shared pipeline, the MCP tools and session store, and the
// generated documents.
export { GatewayBus } from './bus.ts';
export { errorsPage } from './docs.ts';
export { type McpSession, McpSessions, type McpSessionsBucket, type McpSessionsOptions } from './mcp/sessions.ts';
export { type McpTool, toolsFromTable } from './mcp/tools.ts';
export { openApiDocument } from './openapi.ts';
export { type CallInput, type CallResult, Pipeline, requestHash } from './pipeline.ts';
export { compileRouter, type Route, type RouteMatch } from './router.ts';
export { Gateway, type GatewayOptions } from './server.ts';
