// The OpenAPI 3.1 document, generated from the operation table and the error table. Operations that are not
// available in this version are left out.
import {
  errorTable,
  type ErrorCode,
  type Operation,
  pipelineErrors,
  schemas,
  transportStatus,
} from '../contracts/index.ts';
import { idempotencyKeyLengthMax } from './pipeline.ts';

const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;
const errorRef = { $ref: '#/components/schemas/Error' };

export function openApiDocument(ops: readonly Operation[], baseUrl: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of ops) {
    if (!op.available) continue;
    paths[op.path] = { ...paths[op.path], [op.method.toLowerCase()]: operationObject(op) };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Assay agent API',
      version: '1.0.0',
      description:
        'Verified-artifact marketplace for AI agents. Every /v1 route has an MCP tool twin (x-mcp-tool) running the same pipeline: scope, validation, Idempotency-Key, handler. Errors are always the typed Error object; see /docs/errors.',
    },
    servers: [{ url: baseUrl }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: { Error: plain(schemas.ErrorObject) },
    },
    paths,
  };
}

function operationObject(op: Operation) {
  const parameters: unknown[] = [];
  for (const [name, schema] of Object.entries(op.params.properties)) {
    parameters.push({ name, in: 'path', required: true, schema: plain(schema) });
  }
  const requiredQuery = new Set(op.query.required ?? []);
  for (const [name, schema] of Object.entries(op.query.properties)) {
    parameters.push({ name, in: 'query', required: requiredQuery.has(name), schema: plain(schema) });
  }
  if (op.mutating) {
    parameters.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: true,
      description: 'Same key and body replays the stored result; same key, other body: idempotency_conflict.',
      schema: { type: 'string', minLength: 1, maxLength: idempotencyKeyLengthMax },
    });
  }
  const errorsByStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...pipelineErrors(op), ...op.errors])) {
    const status = errorTable[code].status;
    errorsByStatus.set(status, [...(errorsByStatus.get(status) ?? []), code]);
  }
  if (op.body) {
    errorsByStatus.set(transportStatus.malformedJson, ['validation_failed']);
    errorsByStatus.set(transportStatus.bodyTooLarge, ['validation_failed']);
  }
  const isHtml = op.dispatch.to === 'gateway' && op.dispatch.page === 'errors';
  const responses: Record<string, unknown> = {
    [op.successStatus]: {
      description: 'Success.',
      content: { [isHtml ? 'text/html' : 'application/json']: { schema: plain(op.output) } },
    },
  };
  for (const [status, codes] of [...errorsByStatus].sort((a, b) => a[0] - b[0])) {
    responses[status] = {
      description: `Typed error: ${codes.join(', ')}.`,
      content: { 'application/json': { schema: errorRef } },
    };
  }
  return {
    operationId: op.id,
    summary: op.summary,
    ...(op.scope ? { security: [{ bearer: [] }], 'x-scope': op.scope } : { security: [] }),
    ...(op.tool ? { 'x-mcp-tool': op.tool } : {}),
    'x-dispatch': op.dispatch,
    parameters,
    ...(op.body
      ? { requestBody: { required: true, content: { 'application/json': { schema: plain(op.body) } } } }
      : {}),
    responses,
  };
}
