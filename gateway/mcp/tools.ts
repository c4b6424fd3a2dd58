// MCP tools generated from the operation table: one per available row with a tool name. A tool's arguments are the
// row's path parameters, query parameters and body properties in one object (the same TypeBox schemas the REST
// pipeline validates with), plus `idempotency_key` on mutating rows. Results carry the REST body as
// structuredContent and as JSON text; refusals carry the typed error object the same way, with isError set.
import type { Static } from 'typebox';
import { Value } from 'typebox/value';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { mcpIdempotencyKeyArgument, type Operation, schemas } from '../../contracts/index.ts';
import type { Deprecation } from '../deprecation.ts';
import { type BodyInput, type CallResult, idempotencyKeyLengthMax } from '../pipeline.ts';

export interface McpTool {
  op: Operation;
  definition: Tool;
}

type JsonSchema = Record<string, any>;
const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema)) as JsonSchema;

/** The tools of the table, in table order: only rows that are built (`available`) and have a tool name. */
export function toolsFromTable(ops: readonly Operation[]): McpTool[] {
  return ops
    .filter((op) => op.tool !== null && op.available)
    .map((op) => ({
      op,
      definition: {
        name: op.tool!,
        description: describe(op, ops),
        inputSchema: inputSchema(op) as Tool['inputSchema'],
        outputSchema: outputSchema(op) as Tool['outputSchema'],
        annotations: op.mutating
          ? {
              readOnlyHint: false,
              destructiveHint: op.destructive ?? false,
              idempotentHint: true,
              openWorldHint: false,
            }
          : { readOnlyHint: true, openWorldHint: false },
      },
    }));
}

function describe(op: Operation, ops: readonly Operation[]): string {
  const twin = `The twin of ${op.method} ${op.path} (scope ${op.scope}); same rules and errors.`;
  const key = op.mutating
    ? ` Send a new ${mcpIdempotencyKeyArgument} for each intended effect; repeating a call with the same key and arguments replays the first result instead of acting twice.`
    : '';
  return `${op.summary} ${twin}${key}${deprecationNote(op, ops)}`;
}

/** A deprecated tool says so where an agent reads first, with the tool to use instead (docs/deprecation.md). */
function deprecationNote(op: Operation, ops: readonly Operation[]): string {
  const d = op.deprecated;
  if (!d) return '';
  const replacement = ops.find((r) => r.id === d.replacement);
  const instead = replacement?.tool ? ` Use ${replacement.tool} instead.` : '';
  return ` Deprecated since ${d.since}; from ${d.sunset} it answers not_found.${instead}`;
}

function parts(op: Operation): JsonSchema[] {
  return [op.params, op.query, ...(op.body ? [op.body] : [])].map(plain);
}

export function inputSchema(op: Operation): JsonSchema {
  const properties: JsonSchema = {};
  const required: string[] = [];
  let closed = true;
  for (const part of parts(op)) {
    Object.assign(properties, part.properties ?? {});
    required.push(...((part.required as string[] | undefined) ?? []));
    if (part.additionalProperties !== false) closed = false;
  }
  if (op.mutating) {
    properties[mcpIdempotencyKeyArgument] = {
      type: 'string',
      minLength: 1,
      maxLength: idempotencyKeyLengthMax,
      description:
        'The Idempotency-Key of this call: the same key with the same arguments replays the stored result; with other arguments it is refused with idempotency_conflict.',
    };
    required.push(mcpIdempotencyKeyArgument);
  }
  return {
    type: 'object',
    properties,
    ...(required.length > 0 ? { required } : {}),
    ...(closed ? { additionalProperties: false } : {}),
  };
}

/**
 * The operation's output, or (on an isError result) the typed error object. MCP wants structured results to match
 * the declared schema and the SDK's client checks error results too, so the schema names both.
 */
export function outputSchema(op: Operation): JsonSchema {
  return { type: 'object', anyOf: [plain(op.output), plain(schemas.ErrorObject)] };
}

export interface SplitArguments {
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: BodyInput;
  idempotencyKey: string | undefined;
}

/**
 * An own data property whatever the name: `__proto__` among the arguments must stay an argument (which validation
 * then refuses as unknown), not become the object's prototype.
 */
function setOwn(target: Record<string, unknown>, name: string, value: unknown): void {
  Object.defineProperty(target, name, { value, enumerable: true, writable: true, configurable: true });
}

/**
 * Route each argument to the part of the request its name belongs to. Names the operation does not know go to the
 * body (or the query when there is no body), where validation refuses them exactly as REST refuses them.
 */
export function splitArguments(op: Operation, args: Record<string, unknown>): SplitArguments {
  const params: Record<string, unknown> = {};
  const query: Record<string, unknown> = {};
  const body: Record<string, unknown> = {};
  const paramNames = new Set(Object.keys(op.params.properties));
  const queryNames = new Set(Object.keys(op.query.properties));
  let idempotencyKey: string | undefined;
  for (const [name, value] of Object.entries(args)) {
    if (op.mutating && name === mcpIdempotencyKeyArgument) {
      // A key that is not a string is treated as missing: the pipeline refuses it with validation_failed.
      idempotencyKey = typeof value === 'string' && value !== '' ? value : undefined;
    } else if (paramNames.has(name)) params[name] = value;
    else if (queryNames.has(name) || !op.body) setOwn(query, name, value);
    else setOwn(body, name, value);
  }
  return {
    // The pipeline checks the params against their schema, so a non-string value is refused there, not trusted.
    params: params as Record<string, string>,
    query,
    body: op.body ? { kind: 'value', value: body } : { kind: 'none' },
    idempotencyKey,
  };
}

/**
 * The rate-limit headers of a tool call's result (and Retry-After when it was rate limited), for the HTTP response
 * that carries it; null when the call spent no token (refused before the limiter).
 */
export function rateLimitHeaders(r: CallResult): Record<string, string> | null {
  const limit = r.headers['x-ratelimit-limit'];
  if (limit === undefined) return null;
  const headers: Record<string, string> = {
    'x-ratelimit-limit': limit,
    'x-ratelimit-remaining': r.headers['x-ratelimit-remaining']!,
    'x-ratelimit-reset': r.headers['x-ratelimit-reset']!,
  };
  if (r.error?.code === 'rate_limited' && r.headers['retry-after']) headers['retry-after'] = r.headers['retry-after'];
  return headers;
}

/**
 * A pipeline result as a tool result: the body (or the typed error) as structuredContent and as JSON text. A
 * delivery (a `toolResource` row) carries its bytes once, as an embedded resource block, and the rest as usual. A
 * deprecated operation's result carries in _meta what its REST twin sends as Deprecation, Sunset and Link.
 */
export function toolResult(r: CallResult, op: Operation, deprecation?: Deprecation): CallToolResult {
  const meta: Record<string, unknown> = { 'assay/status': r.status };
  if (deprecation) Object.assign(meta, deprecation.meta);
  if (r.headers['idempotent-replayed'] === 'true') meta['assay/idempotent_replayed'] = true;
  if (r.headers['retry-after']) meta['assay/retry_after_s'] = Number(r.headers['retry-after']);
  const limit = r.headers['x-ratelimit-limit'];
  if (limit !== undefined) {
    meta['assay/rate_limit'] = {
      limit: Number(limit),
      remaining: Number(r.headers['x-ratelimit-remaining']),
      reset_s: Number(r.headers['x-ratelimit-reset']),
    };
  }
  const body: unknown = r.body;
  if (op.toolResource && !r.error) {
    if (!Value.Check(schemas.OrderContent, body)) throw new Error(`${op.id} answered a delivery its schema refuses`);
    return deliveryResult(body, meta);
  }
  const payload = r.error ?? body;
  // Every operation answers a JSON object (or the typed error), as MCP's structuredContent must be.
  if (!isObject(payload)) throw new Error(`${op.id} answered something other than a JSON object`);
  return {
    content: [{ type: 'text', text: JSON.stringify(payload) }],
    structuredContent: payload,
    ...(r.error ? { isError: true } : {}),
    _meta: meta,
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Markdown as a text resource, a PDF as a blob resource, each with the hashes that tie it to the signed report;
 * structuredContent is the delivery without the bytes (its schema makes them optional), so they travel once.
 */
function deliveryResult(d: Static<typeof schemas.OrderContent>, meta: Record<string, unknown>): CallToolResult {
  const { content, content_base64, ...described } = d;
  const contents = {
    uri: d.download_url,
    mimeType: d.media_type,
    _meta: {
      'assay/content_hash': d.content_hash,
      'assay/delivered_digest': d.delivered_digest,
      'assay/report_digest': d.report_digest,
    },
  };
  return {
    content: [
      { type: 'text', text: JSON.stringify(described) },
      {
        type: 'resource',
        resource: content !== undefined ? { ...contents, text: content } : { ...contents, blob: content_base64 ?? '' },
      },
    ],
    structuredContent: described,
    _meta: meta,
  };
}
