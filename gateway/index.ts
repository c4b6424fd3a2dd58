// Public entry of gateway/: the uWebSockets.js server, the shared pipeline and the generated documents.
export { GatewayBus } from './bus.ts';
export { errorsPage } from './docs.ts';
export { openApiDocument } from './openapi.ts';
export { type CallInput, type CallResult, Pipeline, requestHash } from './pipeline.ts';
export { Gateway, type GatewayOptions } from './server.ts';
