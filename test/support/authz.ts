// Authorization matrices built from what the service publishes about itself: the operation table (contracts/) and
// the OpenAPI documents it serves (the agent API's, and the context-file API's on both base forms, the web one also
// carrying device sync's routes). Nothing here lists a route: a new row or a new documented route gets its cells.
import { randomUUID } from 'node:crypto';
import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import { ensureActiveKey, signAgentToken } from '../../actors/index.ts';
import { type Config, type Operation, operations } from '../../contracts/index.ts';
import { openPool, type Sql } from '../../storage/index.ts';
import type { WebJar } from './oauth.ts';

/** Which served document a route comes from; the context-file API's routes are in two, one per base form. */
export type Face = 'agent' | 'context-web' | 'context-api';

export interface ParamSpec {
  name: string;
  required: boolean;
  schema: unknown;
}

export interface AuthzRoute {
  face: Face;
  /** `typed`: the agent API's error object ({code, ...}); `context`: {error, message} (context files and sync). */
  errors: 'typed' | 'context';
  method: string;
  /** The path as documented, with `{name}` parameters. */
  path: string;
  /** Absolute URL template: the path under its server (a path item's own servers win over the document's). */
  url: string;
  pathParams: ParamSpec[];
  query: ParamSpec[];
  /** Documented headers the route requires (Idempotency-Key). */
  requiredHeaders: string[];
  /** The JSON request body's schema, 'bytes' for an octet stream, null for none. */
  body: unknown | 'bytes' | null;
  /**
   * What a bearer access token must hold: any one of these scope sets (the OAuth security requirements). Empty: no
   * access token is enough, only a signed-in session (the API keys routes).
   */
  scopeAlternatives: string[][];
  /** The route's x-scope: the scope the documents name for it. */
  scope: string;
  successStatus: number;
  documentedStatuses: number[];
  /** Codes a typed 403 names in its documented description ("Typed error: forbidden, ..."). */
  documented403Codes: string[];
  /** The operation table's row, for agent-document routes. */
  op: Operation | null;
  /** Changes state when it succeeds: every method but GET (and, on the agent API, exactly the mutating rows). */
  mutating: boolean;
}

export interface ServedDocs {
  agent: any;
  contextWeb: any;
  contextApi: any;
}

export async function servedDocs(baseUrl: string, webUrl: string, apiUrl: string): Promise<ServedDocs> {
  const get = async (url: string) => {
    const r = await fetch(url);
    if (r.status !== 200) throw new Error(`${url}: ${r.status}`);
    return r.json();
  };
  const [agent, contextWeb, contextApi] = await Promise.all([
    get(`${baseUrl}/openapi.json`),
    get(`${webUrl}/api/v1/openapi.json`),
    get(`${apiUrl}/v1/openapi.json`),
  ]);
  return { agent, contextWeb, contextApi };
}

const methods = ['get', 'put', 'post', 'patch', 'delete'] as const;

/**
 * Every route of the served documents that takes a bearer credential (it names an x-scope), with what its row says.
 * Throws when the table and the agent document disagree about a route's scope, so a drift between the two shows
 * here before any cell runs.
 */
export function authzRoutes(docs: ServedDocs): AuthzRoute[] {
  const routes: AuthzRoute[] = [];
  const faces: [Face, any][] = [
    ['agent', docs.agent],
    ['context-web', docs.contextWeb],
    ['context-api', docs.contextApi],
  ];
  for (const [face, doc] of faces) {
    const resolve = (s: any): any => (s?.$ref ? resolve(refTarget(doc, s.$ref)) : s);
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const method of methods) {
        const o = item[method];
        if (!o || o['x-scope'] === undefined) continue;
        const server = (item.servers ?? o.servers ?? doc.servers)[0].url as string;
        const params = [...(item.parameters ?? []), ...(o.parameters ?? [])].map(resolve);
        const spec = (p: any): ParamSpec => ({
          name: p.name,
          required: p.required === true,
          schema: resolve(p.schema),
        });
        const content = resolve(o.requestBody)?.content ?? null;
        const body =
          content === null
            ? null
            : content['application/json']
              ? resolveDeep(doc, content['application/json'].schema)
              : 'bytes';
        const security: Record<string, string[]>[] = o.security ?? doc.security ?? [];
        const schemes = doc.components?.securitySchemes ?? {};
        // A requirement with scopes is an OAuth access token's; a bare bearer requirement on the agent API stands
        // for the same tokens (sandbox or OAuth), whose scope is the x-scope; the cookie scheme is a session's.
        const scopeAlternatives = security
          .filter((req) => Object.keys(req).some((name) => (req[name] ?? []).length > 0))
          .map((req) => Object.values(req).flat());
        const statuses = Object.keys(o.responses).map(Number);
        const success = statuses.filter((s) => s >= 200 && s < 300).sort()[0]!;
        const forbidden = resolve(o.responses['403'])?.description ?? '';
        const op =
          face === 'agent'
            ? (operations.find((r) => r.method === method.toUpperCase() && r.path === path) ?? null)
            : null;
        if (face === 'agent') {
          if (!op) throw new Error(`${method.toUpperCase()} ${path} is in /openapi.json but not in the table`);
          if (op.scope !== o['x-scope'])
            throw new Error(`${op.id}: the table says ${op.scope}, the document ${o['x-scope']}`);
        }
        if (scopeAlternatives.length === 0 && Object.keys(schemes).length === 0) {
          throw new Error(`${method.toUpperCase()} ${path}: no security schemes to read`);
        }
        routes.push({
          face,
          errors: face === 'agent' ? 'typed' : 'context',
          method: method.toUpperCase(),
          path,
          url: `${server}${path}`,
          pathParams: params.filter((p) => p.in === 'path').map(spec),
          query: params.filter((p) => p.in === 'query').map(spec),
          requiredHeaders: params.filter((p) => p.in === 'header' && p.required).map((p) => p.name.toLowerCase()),
          body,
          scopeAlternatives,
          scope: o['x-scope'],
          successStatus: op?.successStatus ?? success,
          documentedStatuses: statuses,
          documented403Codes: (/Typed error: ([^.]*)\./.exec(forbidden)?.[1] ?? '').split(/,\s*/).filter(Boolean),
          op,
          mutating: op ? op.mutating : method !== 'get',
        });
      }
    }
  }
  // Every row that takes a token is in the document with the same scope (unavailable rows are absent on purpose).
  for (const op of operations) {
    if (op.scope === null || !op.available) continue;
    if (!routes.some((r) => r.op === op)) throw new Error(`${op.id} takes a token but is not in /openapi.json`);
  }
  return routes;
}

function refTarget(doc: any, ref: string): any {
  if (!ref.startsWith('#/')) throw new Error(`external $ref ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .reduce((o, k) => o?.[k], doc);
}

function resolveDeep(doc: any, s: any, depth = 0): any {
  if (depth > 32 || s === null || typeof s !== 'object') return s;
  if (s.$ref) return resolveDeep(doc, refTarget(doc, s.$ref), depth + 1);
  if (Array.isArray(s)) return s.map((x) => resolveDeep(doc, x, depth + 1));
  return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, resolveDeep(doc, v, depth + 1)]));
}

const checkers = new Map<unknown, { Check(v: unknown): boolean }>();
function valid(schema: unknown, value: unknown): boolean {
  let c = checkers.get(schema);
  if (!c) {
    c = Compile(schema as TSchema);
    checkers.set(schema, c);
  }
  return c.Check(value);
}

/**
 * A small value the schema accepts (required properties only, minimum sizes), or undefined when the schema asks for
 * something this cannot make up (a string pattern without a default): such a cell names its reason instead.
 */
export function exampleOf(schema: any): unknown {
  const v = draft(schema);
  return v !== undefined && valid(schema, v) ? v : undefined;
}

function draft(s: any): unknown {
  if (s === null || typeof s !== 'object') return undefined;
  if ('default' in s) return s.default;
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  const alternatives = s.anyOf ?? s.oneOf;
  if (Array.isArray(alternatives)) {
    for (const a of alternatives) {
      const v = draft(a);
      if (v !== undefined && valid(a, v)) return v;
    }
    return undefined;
  }
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      const props: Record<string, unknown> = s.properties ?? {};
      for (const k of s.required ?? []) {
        const v = draft(props[k]);
        if (v === undefined) return undefined;
        out[k] = v;
      }
      for (const [k, p] of Object.entries(props)) {
        if (Object.keys(out).length >= (s.minProperties ?? 0)) break;
        const v = k in out ? undefined : draft(p);
        if (v !== undefined) out[k] = v;
      }
      return out;
    }
    case 'array': {
      const n = s.minItems ?? 0;
      if (n === 0) return [];
      const item = draft(s.items);
      return n === 1 && item !== undefined ? [item] : undefined;
    }
    case 'string':
      if (s.format === 'uuid') return randomUUID();
      if (s.format === 'date-time') return new Date().toISOString();
      if (s.format === 'uri') return 'https://example.com/';
      if (s.pattern !== undefined || s.format !== undefined) return undefined;
      return 'x'.repeat(Math.max(1, s.minLength ?? 1));
    case 'integer':
    case 'number':
      return s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return false;
    case 'null':
      return null;
  }
  return undefined;
}

/** Agent tokens signed with the service's own key: any principal, side and scope set, many over one connection. */
export class TokenMinter {
  private constructor(
    private readonly config: Config,
    private readonly sql: Sql,
  ) {}

  static async open(config: Config): Promise<TokenMinter> {
    return new TokenMinter(config, openPool(config.databaseUrl, 1));
  }

  async mint(o: { principalId: string; scopes: readonly string[]; sandbox: boolean }): Promise<string> {
    const clock = { nowMs: () => Date.now(), nowIso: () => new Date().toISOString() };
    const key = await ensureActiveKey(this.sql, 'token', clock);
    const { token } = await signAgentToken(
      key,
      {
        principalId: o.principalId,
        agentId: randomUUID(),
        scopes: [...o.scopes],
        sandbox: o.sandbox,
        issuer: this.config.baseUrl,
        ttlSeconds: 3600,
        jti: randomUUID(),
      },
      clock,
    );
    return token;
  }

  async close(): Promise<void> {
    await this.sql.end({ timeout: 1 });
  }
}

export interface Credential {
  token?: string;
  /** A signed-in browser: its cookies, our Origin and the CSRF header. */
  jar?: WebJar;
}

export interface Answer {
  status: number;
  body: any;
  /** The error's code: `code` of the typed object, `error` of the context-file and sync bodies. */
  code: string | undefined;
  text: string;
}

/** One request to a route: path parameters filled in, the body as JSON (or bytes), the credential as given. */
export async function send(
  route: AuthzRoute,
  who: Credential,
  o: {
    params?: Record<string, string>;
    query?: Record<string, string>;
    body?: unknown;
    idempotencyKey?: string;
    origin?: string;
  } = {},
): Promise<Answer> {
  let url = route.url;
  for (const [k, v] of Object.entries(o.params ?? {})) url = url.replace(`{${k}}`, encodeURIComponent(v));
  const q = new URLSearchParams(o.query ?? {}).toString();
  if (q) url += `?${q}`;
  const headers: Record<string, string> = {};
  if (who.token) headers.authorization = `Bearer ${who.token}`;
  if (who.jar) {
    headers.cookie = who.jar.header();
    // What a page of the web app sends, whichever base form the request goes to.
    headers.origin = new URL(who.jar.baseUrl).origin;
    headers['x-csrf-token'] = who.jar.csrf;
  }
  if (o.idempotencyKey !== undefined) headers['idempotency-key'] = o.idempotencyKey;
  let body: string | Blob | undefined;
  if (o.body !== undefined) {
    if (o.body instanceof Uint8Array) {
      body = new Blob([new Uint8Array(o.body)]);
      headers['content-type'] = 'application/octet-stream';
    } else {
      body = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
  }
  const res = await fetch(url, { method: route.method, headers, body });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // raw bytes (a download) or a page: kept as text
  }
  const code = typeof parsed === 'object' && parsed !== null ? (parsed.code ?? parsed.error) : undefined;
  return { status: res.status, body: parsed, code: typeof code === 'string' ? code : undefined, text };
}

/** A cell of a matrix: what it is (for the failure list) and how to check it. */
export interface Cell {
  name: string;
  run(): Promise<string | null>;
}

/** Run cells a few at a time; returns every failure (a cell's own message) instead of stopping at the first. */
export async function runCells(cells: Cell[], concurrency = 16): Promise<string[]> {
  const failures: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cells.length) {
      const cell = cells[next++]!;
      try {
        const problem = await cell.run();
        if (problem !== null) failures.push(`${cell.name}: ${problem}`);
      } catch (err) {
        failures.push(`${cell.name}: threw ${err instanceof Error ? err.message : String(err)}`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return failures;
}

/** null when the answer is the expected status (and code, when given); otherwise what it was. */
export function expectAnswer(a: Answer, status: number, code?: string): string | null {
  if (a.status === status && (code === undefined || a.code === code)) return null;
  return `expected ${status}${code ? ` ${code}` : ''}, got ${a.status} ${a.text.slice(0, 200)}`;
}
