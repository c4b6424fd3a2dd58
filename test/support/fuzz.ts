// Generated bad input for every documented route (test/hardening/fuzz-routes.test.ts): the routes are read from the
// OpenAPI documents the gateway serves, each gets a fast-check arbitrary of bad requests (wrong types, missing and
// extra fields, odd and huge strings, bad path parameters, bad and missing auth, bad Idempotency-Key, wrong content
// types, malformed JSON), a sender with a deadline, and a check that the answer is one the route documents.
//
// Money must not move: every JSON body sent carries at least one defect its schema certainly refuses (a missing
// required field, an unknown field where none is allowed, a value of a type the field does not take, or a body that
// is not an object at all), so no fuzzed request can succeed on a route that changes state.
import fc from 'fast-check';
import { errorTable, type ErrorCode, syncErrors, transportStatus } from '../../contracts/index.ts';

/** JSON Schema and OpenAPI objects, read loosely. */
type Json = any;

/** How a route words its errors. */
export type Face = 'agent' | 'oauth' | 'context' | 'sync';

export interface FuzzParam {
  name: string;
  required: boolean;
  schema: Json;
}

export interface FuzzRoute {
  /** `<face> <METHOD> <path>`, unique across the documents. */
  key: string;
  face: Face;
  /** Absolute URL the path is appended to. */
  server: string;
  method: string;
  path: string;
  pathParams: FuzzParam[];
  queryParams: FuzzParam[];
  headerParams: FuzzParam[];
  body: { media: string; schema: Json } | null;
  /** The statuses the document lists for the route. */
  statuses: Set<number>;
  /** The route documents a security requirement (a token of some kind). */
  secured: boolean;
  /** The route takes an Idempotency-Key header. */
  keyed: boolean;
}

/** The routes of one served OpenAPI document. `face` says how a path words its errors. */
export function routesOf(doc: Json, face: (path: string) => Face): FuzzRoute[] {
  const out: FuzzRoute[] = [];
  const server = String(doc.servers?.[0]?.url ?? '');
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    const itemServer = item.servers?.[0]?.url ?? server;
    for (const [method, op] of Object.entries<Json>(item)) {
      if (method === 'servers' || method === 'parameters') continue;
      const params: Json[] = op.parameters ?? [];
      const pick = (where: string) =>
        params
          .filter((p) => p.in === where)
          .map((p) => ({ name: String(p.name), required: Boolean(p.required), schema: p.schema ?? {} }));
      const content = op.requestBody?.content as Record<string, Json> | undefined;
      const media = content ? Object.keys(content)[0]! : null;
      const security: Json[] | undefined = op.security ?? doc.security;
      const headerParams = pick('header');
      const f = face(path);
      out.push({
        key: `${f} ${method.toUpperCase()} ${path}`,
        face: f,
        server: itemServer,
        method: method.toUpperCase(),
        path,
        pathParams: pick('path'),
        queryParams: pick('query'),
        headerParams,
        body: media ? { media, schema: content![media].schema ?? {} } : null,
        statuses: new Set(Object.keys(op.responses ?? {}).map(Number)),
        secured: Array.isArray(security) && security.some((s) => Object.keys(s).length > 0),
        keyed: headerParams.some((h) => h.name.toLowerCase() === 'idempotency-key'),
      });
    }
  }
  return out;
}

/** Which credential a request carries. */
export type AuthKind =
  | 'valid'
  | 'none'
  | 'empty'
  | 'garbage'
  | 'basic'
  | 'tampered'
  | 'expired'
  | 'noScope'
  | 'stranger'
  | 'otherFace';

/** The credentials of each face: a valid one, and the well-formed wrong ones. */
export interface Credentials {
  /** A valid token of the face (null: the face has none, as the OAuth endpoints). */
  valid: Record<Face, string | null>;
  /** Signed by the service but expired. */
  expired: string;
  /** Signed, current, without any scope. */
  noScope: string;
  /** Signed, current, every agent scope, for a principal the service has never seen. */
  stranger: string;
  /** A valid credential of another face (an API key on the agent routes, a sandbox token elsewhere). */
  otherFace: Record<Face, string>;
}

/** One generated request, as plain data (fixed examples are written in the same shape). */
export interface FuzzCase {
  /** HEAD for a GET route (served wherever GET is); the route's own method when absent. */
  method?: 'HEAD';
  auth: AuthKind;
  /** Raw path segments by parameter name, sent as they are (percent-escapes included). */
  path: Record<string, string>;
  /** The raw query string, without `?`; '' for none. */
  query: string;
  /** Header name (lower case) to value; a value of null leaves the header out. */
  headers: Record<string, string | null>;
  contentType: string | null;
  body: FuzzBody | null;
}

export type FuzzBody =
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  /** Bytes as hex (bytes that are not UTF-8 included). */
  | { kind: 'bytes'; hex: string };

// ---- Values ---------------------------------------------------------------------------------------------------

const hugeString = 'x'.repeat(100 * 1024);

/** Strings people and parsers trip over: control characters, lone surrogates, NUL, direction marks, 100 KB. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    'a\u0000b',
    '\u0001\u0002\u001f\u007f',
    '\t\r\n',
    '\ud800',
    '\udfff',
    'a\ud800b',
    '\udc00\ud800',
    '\ufeff',
    '\u202eevil',
    '\u2028\u2029',
    'e\u0301\u0301\u0301',
    '😀',
    '\uffff\ufffe',
    '\u{10ffff}',
    'null',
    '0',
    '-1',
    '1e309',
    'NaN',
    '<script>alert(1)</script>',
    "' OR 1=1 --",
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a log4j-style lookup, sent as text.
    '${jndi:ldap://127.0.0.1/x}',
    '../../../../etc/passwd',
    '%00',
    '%zz',
    '\\',
    '"',
    '{}',
    hugeString,
  ),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.integer({ min: 1, max: 30_000 }).map((n) => 'é'.repeat(n)),
);

/** Numbers at the edges of what JSON, JavaScript and PostgreSQL hold. */
const oddNumber = fc.constantFrom(0, -1, 1.5, -0.5, 2 ** 31, 2 ** 53 + 2, -(2 ** 63), 1e308, 5e-324, 123456789012);

/** A JSON value of any kind, odd ones included: what an uncertain mutation puts into a field. */
const oddValue: fc.Arbitrary<unknown> = fc.oneof(
  oddString,
  oddNumber,
  fc.constantFrom(null, true, false, [], {}, [[[[[]]]]]),
  // Past the text rule's 32 levels (deeper still comes as text: malformedBody).
  fc.integer({ min: 33, max: 1000 }).map((depth) => nest(depth)),
  fc.constant(Array.from({ length: 10_000 }, (_, i) => i)),
  fc.constant(Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`k${i}`, i]))),
  fc.jsonValue({ maxDepth: 3 }),
);

function nest(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
}

/** JSON types a schema allows; null when it says nothing about types. */
function allowedTypes(s: Json): Set<string> | null {
  if (s === null || typeof s !== 'object') return null;
  if ('const' in s) return new Set([jsonType(s.const)]);
  if (Array.isArray(s.enum)) return new Set(s.enum.map(jsonType));
  const alts: Json[] | undefined = s.anyOf ?? s.oneOf;
  if (alts) {
    const all = new Set<string>();
    for (const a of alts) {
      const t = allowedTypes(a);
      if (t === null) return null;
      for (const x of t) all.add(x);
    }
    return all;
  }
  if (s.type === undefined) return null;
  const types = new Set<string>(Array.isArray(s.type) ? s.type : [s.type]);
  if (types.has('number')) types.add('integer');
  return types;
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

const valuesByType: Record<string, unknown[]> = {
  string: ['x', '', '1'],
  integer: [7, 0, -1],
  number: [1.5, -0.25],
  boolean: [true, false],
  null: [null],
  array: [[], ['x']],
  object: [{}, { a: 1 }],
};

/** A value of a type the schema certainly refuses, or null when every type is allowed. */
function wrongValue(s: Json): fc.Arbitrary<unknown> | null {
  const allowed = allowedTypes(s);
  if (allowed === null) return null;
  const wrong = Object.entries(valuesByType)
    .filter(([t]) => !allowed.has(t) && !(t === 'integer' && allowed.has('number')))
    .flatMap(([, vs]) => vs);
  return wrong.length > 0 ? fc.constantFrom(...wrong) : null;
}

/** A value the schema would likely accept (it may not: patterns and formats are only approximated). */
export function plausible(s: Json, depth = 0): fc.Arbitrary<unknown> {
  if (s === null || typeof s !== 'object') return fc.jsonValue({ maxDepth: 1 });
  if ('const' in s) return fc.constant(s.const);
  if (Array.isArray(s.enum) && s.enum.length > 0) return fc.constantFrom(...s.enum);
  const alts: Json[] | undefined = s.anyOf ?? s.oneOf;
  if (alts && alts.length > 0) return fc.oneof(...alts.map((a) => plausible(a, depth)));
  const type = Array.isArray(s.type) ? s.type[0] : s.type;
  switch (type) {
    case 'string': {
      if (s.format === 'uuid') return fc.uuid();
      if (s.format === 'date-time') return fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
      if (s.format === 'uri') return fc.webUrl();
      if (typeof s.pattern === 'string') {
        try {
          return fc.stringMatching(new RegExp(s.pattern), { maxLength: 80 });
        } catch {
          // A pattern fast-check cannot generate from: any short string.
        }
      }
      const minLength = Math.min(s.minLength ?? 0, 200);
      return fc.string({ minLength, maxLength: Math.max(minLength, Math.min(s.maxLength ?? 24, 24)) });
    }
    case 'integer': {
      const min = s.minimum ?? -1000;
      const max = Math.max(min, s.maximum ?? min + 2000);
      return fc.integer({ min, max: Math.min(max, Number.MAX_SAFE_INTEGER) });
    }
    case 'number': {
      const min = s.minimum ?? -1000;
      return fc.double({ min, max: Math.max(min, s.maximum ?? min + 2000), noNaN: true, noDefaultInfinity: true });
    }
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      if (depth > 3) return fc.constant([]);
      return fc.array(plausible(s.items ?? {}, depth + 1), {
        minLength: Math.min(s.minItems ?? 0, 3),
        maxLength: Math.max(Math.min(s.minItems ?? 0, 3), Math.min(s.maxItems ?? 3, 3)),
      });
    case 'object': {
      if (depth > 3) return fc.constant({});
      const props: Record<string, Json> = s.properties ?? {};
      const required: string[] = s.required ?? [];
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) model[k] = plausible(v, depth + 1);
      return fc.record(model, { requiredKeys: required.filter((k) => k in model) });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

// ---- Bodies -----------------------------------------------------------------------------------------------------

/** Names of unknown fields: ordinary, empty, prototype keys, odd text, 10 KB. */
const extraName = fc.constantFrom(
  'extra',
  '',
  ' ',
  '__proto__',
  'constructor',
  'prototype',
  '\u0000',
  '\ud800',
  'é',
  'k'.repeat(10_000),
);

type Defect = 'missing' | 'extra' | 'wrongType' | 'notAnObject';

/** Defects the schema certainly refuses, of those this schema allows. */
function certainDefects(s: Json): Defect[] {
  const defects: Defect[] = ['notAnObject'];
  if (s?.type !== 'object') return defects;
  if ((s.required ?? []).length > 0) defects.push('missing');
  if (s.additionalProperties === false) defects.push('extra');
  if (Object.values<Json>(s.properties ?? {}).some((p) => wrongValue(p) !== null)) defects.push('wrongType');
  return defects;
}

/** A JSON body with one certain defect and up to three uncertain mutations (odd values in its fields). */
export function badJsonBody(s: Json): fc.Arbitrary<unknown> {
  const props = Object.keys(s?.properties ?? {});
  const uncertain = fc.array(fc.tuple(props.length > 0 ? fc.constantFrom(...props) : extraName, oddValue), {
    maxLength: 3,
  });
  return fc.tuple(plausible(s), uncertain, fc.constantFrom(...certainDefects(s))).chain(([base, odd, defect]) => {
    const body: Record<string, unknown> =
      base !== null && typeof base === 'object' && !Array.isArray(base) ? { ...(base as object) } : {};
    for (const [k, v] of odd) defineField(body, k, v);
    if (defect === 'missing') {
      return fc.constantFrom(...(s.required as string[])).map((k) => {
        const copy = { ...body };
        delete copy[k];
        return copy;
      });
    }
    if (defect === 'extra') {
      return fc.tuple(extraName, oddValue).map(([k, v]) => {
        const copy = { ...body };
        // An unknown field the schema has no entry for (an odd name may equal a known one: then add another).
        defineField(copy, k in (s.properties ?? {}) ? `${k}_unknown` : k, v);
        return copy;
      });
    }
    if (defect === 'wrongType') {
      const typed = props.filter((p) => wrongValue(s.properties[p]) !== null);
      return fc
        .constantFrom(...typed)
        .chain((p) => wrongValue(s.properties[p])!.map((v) => ({ ...body, [p]: v }) as unknown));
    }
    return fc.constantFrom<unknown>([], [body], 'text', 42, null, true);
  });
}

/** Set a field even when its name is `__proto__` (an own property, as JSON.parse makes it). */
function defineField(o: Record<string, unknown>, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/**
 * Bodies that are not JSON at all, or not UTF-8. An empty body means `{}` to the agent routes, so it is bad input
 * only where `{}` is (a schema with a required field).
 */
function malformedBody(s: Json): fc.Arbitrary<FuzzBody> {
  const empty = (s?.required ?? []).length > 0 ? ['', ' \r\n '] : [];
  return fc.oneof(
    fc
      .constantFrom(
        ...empty,
        '{',
        '{"a":',
        '{"credits": 1,}',
        "{'a': 1}",
        'NaN',
        '[1, 2',
        '\ufeff{}',
        '{"a": 1}{"b": 2}',
        '{"a": 1} trailing',
        '"unterminated',
        '{"a": "\\ud800"',
        '{"a": 01}',
        '{"a": 1e99999}',
        `{"a": ${'9'.repeat(5000)}}`,
        '['.repeat(100_000),
        `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`,
        'null',
        'true',
        '0',
        '"text"',
        '[]',
        '\u0000',
        'a=1&b=2',
      )
      .map((text) => ({ kind: 'text' as const, text })),
    fc
      .constantFrom('ff', 'fffe', 'c0af', 'eda080', '7b2261223a2280ff227d', 'f4908080', 'e282', '00')
      .map((hex) => ({ kind: 'bytes' as const, hex })),
    fc
      .uint8Array({ minLength: 1, maxLength: 200 })
      .map((b) => ({ kind: 'bytes' as const, hex: Buffer.from(b).toString('hex') })),
  );
}

/** A form body: the schema's fields with plausible or odd values, or a form that does not parse. */
function formBody(s: Json): fc.Arbitrary<FuzzBody> {
  const props = Object.keys(s?.properties ?? {});
  const field = fc.tuple(
    props.length > 0 ? fc.constantFrom(...props, 'extra') : extraName,
    fc.oneof(oddString, fc.string()),
  );
  return fc.oneof(
    fc.array(field, { maxLength: 6 }).map((fields) => ({
      kind: 'text' as const,
      text: fields.map(([k, v]) => `${pct(k)}=${pct(v)}`).join('&'),
    })),
    fc
      .constantFrom(
        '%',
        '%zz=1',
        'a=%E0%A4%A',
        '&&&',
        '=',
        '==',
        `a=${'b'.repeat(100_000)}`,
        'a=%ED%A0%80',
        'grant_type',
      )
      .map((text) => ({ kind: 'text' as const, text })),
  );
}

// ---- Requests ---------------------------------------------------------------------------------------------------

/** Percent-encode every byte of the UTF-8 text that is not unreserved (lone surrogates become U+FFFD). */
export function pct(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(b);
    out += /[A-Za-z0-9._~-]/.test(c) ? c : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * What goes into the request head (path, query, headers) stays under uWS's limit for a head that arrives in more
 * than one read (4 KB, docs/operations.md: What uWS never hands over); huge strings go in bodies.
 */
const headValueMax = 2000;
const fitsHead = (encoded: string) => encoded.length <= headValueMax;

/** Path segments a router or a decoder may choke on, sent raw. */
const badSegment: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '%',
    '%zz',
    '%0',
    '%00',
    '%C0%AF',
    '%ED%A0%80',
    '%FF',
    '%E2%82',
    '%2F',
    '%2e%2e',
    '..',
    '.',
    'a%20b',
    '%F0%9F%98%80',
    '-1',
    '0',
    'null',
    'undefined',
    '{id}',
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    'sha256:',
    `sha256:${'0'.repeat(64)}`,
    `sha256:${'G'.repeat(64)}`,
    'x'.repeat(headValueMax),
  ),
  oddString.map(pct).filter(fitsHead),
);

/** Query values that are the wrong type, empty, huge, or badly encoded. */
const badQueryValue: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    'abc',
    '1.5',
    '-1',
    '0',
    '1e999',
    'NaN',
    'true',
    '%',
    '%zz',
    '%00',
    '%ED%A0%80',
    '%FF',
    `${'9'.repeat(400)}`,
  ),
  oddString.map(pct).filter(fitsHead),
);

const badKey: fc.Arbitrary<string | null> = fc.constantFrom(
  null,
  '',
  ' ',
  'k'.repeat(201),
  'k'.repeat(headValueMax),
  'caf\u00e9',
  '\u00ff\u00fe',
  'key with spaces',
  '"quoted"',
);

const badContentType: fc.Arbitrary<string | null> = fc.constantFrom(
  null,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/xml',
  '*/*',
  'application/jsonx',
  'a/b/c',
  'application/json',
);

const badAuth: fc.Arbitrary<AuthKind> = fc.constantFrom(
  'none',
  'empty',
  'garbage',
  'basic',
  'tampered',
  'expired',
  'noScope',
  'stranger',
  'otherFace',
);

type Aspect = 'auth' | 'path' | 'query' | 'key' | 'contentType' | 'malformed' | 'body';

/** The arbitrary of bad requests to one route. */
export function badRequests(route: FuzzRoute): fc.Arbitrary<FuzzCase> {
  const aspects: Aspect[] = ['auth', 'query'];
  if (route.pathParams.length > 0) aspects.push('path');
  if (route.keyed) aspects.push('key');
  if (route.body) aspects.push('contentType', 'malformed', 'body');
  return fc.constantFrom(...aspects).chain((aspect) => {
    const auth = aspect === 'auth' ? badAuth : fc.constant<AuthKind>('valid');
    const path = fc.record(
      Object.fromEntries(
        route.pathParams.map((p) => [
          p.name,
          aspect === 'path' ? badSegment : plausible(p.schema).map((v) => pct(String(v))),
        ]),
      ),
    );
    const query = aspect === 'query' ? badQuery(route) : plausibleQuery(route);
    const headers = fc.record(
      Object.fromEntries(
        route.headerParams.map((h) => [
          h.name.toLowerCase(),
          h.name.toLowerCase() === 'idempotency-key'
            ? aspect === 'key'
              ? badKey
              : fc.uuid().map((u) => `fuzz-${u}`)
            : fc.option(
                fc.oneof(fc.string({ maxLength: 30 }), fc.constantFrom('1', '-1', '99999999999', '2024-11-05')),
                {
                  nil: null,
                },
              ),
        ]),
      ),
    );
    const media = route.body?.media ?? null;
    const contentType = aspect === 'contentType' ? badContentType : fc.constant(media);
    const body =
      route.body === null
        ? fc.constant(null)
        : aspect === 'malformed'
          ? malformedBody(route.body.schema)
          : bodyFor(route);
    const bad = fc.record({ auth, path, query, headers, contentType, body }) as fc.Arbitrary<FuzzCase>;
    if (route.method !== 'GET') return bad;
    // One GET in five goes as HEAD: the same checks, the head of the same answer.
    return fc.tuple(bad, fc.nat({ max: 4 })).map(([c, n]) => (n === 0 ? { ...c, method: 'HEAD' as const } : c));
  });
}

function bodyFor(route: FuzzRoute): fc.Arbitrary<FuzzBody> {
  const { media, schema } = route.body!;
  if (media === 'application/x-www-form-urlencoded') return formBody(schema);
  if (media !== 'application/json') {
    return fc
      .uint8Array({ maxLength: 2000 })
      .map((b) => ({ kind: 'bytes' as const, hex: Buffer.from(b).toString('hex') }));
  }
  return badJsonBody(schema).map((value) => ({ kind: 'json' as const, value }));
}

function plausibleQuery(route: FuzzRoute): fc.Arbitrary<string> {
  const parts = route.queryParams.map((p) =>
    p.required
      ? plausible(p.schema).map((v) => `${pct(p.name)}=${pct(String(v))}`)
      : fc.option(
          plausible(p.schema).map((v) => `${pct(p.name)}=${pct(String(v))}`),
          { nil: '' },
        ),
  );
  return fc.tuple(...parts).map((xs) => xs.filter(Boolean).join('&'));
}

/** A query with one bad thing: a wrong value, a parameter twice, an unknown one, or a required one missing. */
function badQuery(route: FuzzRoute): fc.Arbitrary<string> {
  const names = route.queryParams.map((p) => p.name);
  const known = names.length > 0 ? fc.constantFrom(...names) : fc.constant('limit');
  return fc
    .tuple(plausibleQuery(route), fc.nat({ max: 3 }), known, badQueryValue, oddString)
    .map(([base, how, name, value, oddName]) => {
      const rest = base
        .split('&')
        .filter((kv) => kv !== '' && kv.split('=')[0] !== pct(name))
        .join('&');
      const join = (...xs: string[]) => xs.filter(Boolean).join('&');
      if (how === 0) return join(rest, `${pct(name)}=${value}`);
      if (how === 1) return join(base, `${pct(name)}=${value}`, `${pct(name)}=${value}`);
      if (how === 2) return join(base, `${fitsHead(pct(oddName)) ? pct(oddName) || 'unknown' : 'unknown'}=${value}`);
      return rest;
    });
}

// ---- Sending ----------------------------------------------------------------------------------------------------

export interface FuzzAnswer {
  /** The answer to a HEAD request: a head without content. */
  head: boolean;
  status: number;
  contentType: string;
  text: string;
  body: unknown;
}

/** The request a case describes, as fetch takes it. */
export function requestOf(route: FuzzRoute, c: FuzzCase, creds: Credentials): { url: string; init: RequestInit } {
  let path = route.path;
  for (const [name, value] of Object.entries(c.path)) path = path.replace(`{${name}}`, value);
  const url = `${route.server}${path}${c.query ? `?${c.query}` : ''}`;
  const headers: Record<string, string> = {};
  const authorization = authHeader(route.face, c.auth, creds);
  if (authorization !== null) headers.authorization = authorization;
  for (const [name, value] of Object.entries(c.headers)) if (value !== null) headers[name] = value;
  if (c.contentType !== null) headers['content-type'] = c.contentType;
  // Bodies go as bytes, so fetch adds no content type of its own.
  const body = c.body === null ? undefined : (bodyBytes(c.body) as BodyInit);
  return { url, init: { method: c.method ?? route.method, headers, body, redirect: 'manual' } };
}

function bodyBytes(b: FuzzBody): Uint8Array {
  if (b.kind === 'bytes') return Buffer.from(b.hex, 'hex');
  return Buffer.from(b.kind === 'text' ? b.text : (JSON.stringify(b.value) ?? 'null'), 'utf8');
}

function authHeader(face: Face, kind: AuthKind, creds: Credentials): string | null {
  const valid = creds.valid[face];
  switch (kind) {
    case 'valid':
      return valid === null ? null : `Bearer ${valid}`;
    case 'none':
      return null;
    case 'empty':
      return 'Bearer ';
    case 'garbage':
      return 'Bearer not-a-token';
    case 'basic':
      return 'Basic dXNlcjpwYXNz';
    case 'tampered': {
      const t = valid ?? creds.expired;
      // The last character of the signature (or key) changed: the right shape, a wrong value.
      return `Bearer ${t.slice(0, -2)}${t.at(-2) === 'A' ? 'B' : 'A'}${t.at(-1)}`;
    }
    case 'expired':
      return `Bearer ${creds.expired}`;
    case 'noScope':
      return `Bearer ${creds.noScope}`;
    case 'stranger':
      return `Bearer ${creds.stranger}`;
    case 'otherFace':
      return `Bearer ${creds.otherFace[face]}`;
  }
}

/** Send the case; fails with a clear message when no answer comes within `deadlineMs`. */
export async function sendCase(
  route: FuzzRoute,
  c: FuzzCase,
  creds: Credentials,
  deadlineMs: number,
): Promise<FuzzAnswer> {
  const { url, init } = requestOf(route, c, creds);
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(deadlineMs) });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string; message?: string } };
    const why =
      e.name === 'TimeoutError'
        ? `no answer within ${deadlineMs} ms (a hang)`
        : `${e.cause?.code ?? ''} ${e.cause?.message ?? e.message}`;
    throw new Error(`${describe(route, c, creds)}\n  -> ${why}`);
  }
  const text = init.method === 'HEAD' ? '' : await res.text();
  const contentType = res.headers.get('content-type') ?? '';
  let body: unknown = null;
  if (contentType.includes('json')) {
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
  }
  return { status: res.status, contentType, text, body, head: init.method === 'HEAD' };
}

/** The request in a few lines, long values cut, for failure messages. */
export function describe(route: FuzzRoute, c: FuzzCase, creds: Credentials): string {
  const { url, init } = requestOf(route, c, creds);
  const cut = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}... (${s.length} chars)` : s);
  const headers = Object.entries(init.headers as Record<string, string>)
    .map(([k, v]) => `${k}: ${cut(k === 'authorization' ? `${c.auth} ${v.slice(0, 20)}` : v, 80)}`)
    .join('; ');
  const body = c.body === null ? '(none)' : cut(JSON.stringify(c.body));
  return `${route.key}: ${init.method} ${cut(url)}\n  headers ${headers}\n  body ${body}`;
}

// ---- Checking ---------------------------------------------------------------------------------------------------

/**
 * Statuses the spec lets every route of a face answer, beyond those each route's document lists. The agent routes'
 * 503 is not among them: the fuzzed system is up, so no request may find it unavailable (answerProblem).
 */
const generalStatuses: Record<Face, number[]> = {
  // "Every agent route can answer 400, 401, 403, 404, 409, 413, 422, 429 and 503 with the typed error object."
  agent: [400, 401, 403, 404, 409, 413, 422, 429],
  // The context-file API's error statuses (its 500 is left out: a fuzzed request must never cause one).
  context: [400, 401, 403, 404, 429],
  sync: [],
  oauth: [],
};

/** What is wrong with an answer, or null when it is one the route documents. */
export function answerProblem(
  route: FuzzRoute,
  a: FuzzAnswer,
  docErrorNames: Record<'context' | 'sync', Set<string>>,
): string | null {
  const { status } = a;
  // 503 means the system cannot answer now (a bus outage, a shard between owners, a gateway at capacity): the fuzzed
  // system is up and idle but for the fuzzing, so a 503 here is bad input turned into a failure. 507 is sync's
  // documented quota answer.
  if (status >= 500 && !(status === 507 && route.statuses.has(507))) {
    return `a ${status} (the system is up: bad input must be refused, not found unavailable): ${a.text.slice(0, 300)}`;
  }
  if (!route.statuses.has(status) && !generalStatuses[route.face].includes(status)) {
    return `status ${status} is not documented for ${route.key} (documented: ${[...route.statuses].join(', ')})`;
  }
  if (status < 400) {
    // Only reads (and the OAuth endpoints, whose documented answers include successes) may succeed: every body
    // sent was refusable, so a write that succeeded accepted bad input.
    const read = route.method === 'GET' || route.method === 'HEAD';
    return read || route.face === 'oauth' ? null : `a ${status} success to a request that should have been refused`;
  }
  // A HEAD answer has no content to check the shape of (fetch would not read any).
  if (a.head) return null;
  const b = a.body as Record<string, unknown> | null | undefined;
  switch (route.face) {
    case 'agent': {
      // The MCP transport's negotiation and JSON-RPC syntax refusals keep its JSON-RPC form (docs/mcp.md).
      if (route.path === '/mcp' || route.path === '/') {
        const rpc = b as { jsonrpc?: unknown; error?: { code?: unknown; message?: unknown } } | null | undefined;
        if ([400, 406, 415].includes(status) && rpc?.jsonrpc === '2.0' && typeof rpc.error?.code === 'number')
          return null;
      }
      if (!a.contentType.startsWith('application/json') || !isTypedErrorObject(b)) {
        return `not the typed error object: ${a.contentType} ${a.text.slice(0, 300)}`;
      }
      const code = b!.code as ErrorCode;
      if (!(code in errorTable)) return `unknown error code ${code}`;
      const expected = errorTable[code].status;
      const transport =
        code === 'validation_failed' &&
        (status === transportStatus.malformedJson || status === transportStatus.bodyTooLarge);
      if (status !== expected && !transport)
        return `code ${code} with status ${status} (the registry says ${expected})`;
      return null;
    }
    case 'context': {
      if (!a.contentType.startsWith('application/json') || b === null || typeof b !== 'object') {
        return `not {error, message}: ${a.contentType} ${a.text.slice(0, 300)}`;
      }
      const keys = Object.keys(b).sort().join(',');
      if (keys !== 'error,message' || typeof b.message !== 'string')
        return `not {error, message}: ${a.text.slice(0, 300)}`;
      if (!docErrorNames.context.has(String(b.error)))
        return `error ${String(b.error)} is not in the document's Error schema`;
      return null;
    }
    case 'sync': {
      if (!a.contentType.startsWith('application/json') || b === null || typeof b !== 'object') {
        return `not a sync error: ${a.contentType} ${a.text.slice(0, 300)}`;
      }
      const code = String(b.error) as keyof typeof syncErrors;
      if (typeof b.message !== 'string' || !docErrorNames.sync.has(code) || !(code in syncErrors)) {
        return `not a sync error {error, message}: ${a.text.slice(0, 300)}`;
      }
      if (syncErrors[code].status !== status)
        return `sync error ${code} with status ${status} (registry: ${syncErrors[code].status})`;
      return null;
    }
    case 'oauth': {
      // RFC 6749 bodies {error, error_description}, or an HTML page where a person is shown the error.
      if (a.contentType.startsWith('text/html')) return null;
      if (
        !a.contentType.startsWith('application/json') ||
        b === null ||
        typeof b !== 'object' ||
        typeof b.error !== 'string'
      ) {
        return `not an OAuth error body: ${a.contentType} ${a.text.slice(0, 300)}`;
      }
      if ('error_description' in b && typeof b.error_description !== 'string')
        return 'error_description is not a string';
      return null;
    }
  }
}

function isTypedErrorObject(b: unknown): boolean {
  if (b === null || typeof b !== 'object') return false;
  const e = b as Record<string, unknown>;
  return (
    typeof e.code === 'string' &&
    typeof e.message === 'string' &&
    typeof e.remediation === 'string' &&
    typeof e.retryable === 'boolean' &&
    typeof e.docs_url === 'string' &&
    e.docs_url.endsWith(`#${e.code}`)
  );
}
