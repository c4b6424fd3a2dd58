// Device sync on `{web_url}/api/sync/` (docs/sync.md): blobs in and out as streams, the manifest question, revisions
// and the snapshot commit. Authenticated by an OAuth access token of an account with the scope `sync`. Errors are
// `{error, message}` (the context-file API's shape on the same host) with a sync code and, where it helps, one more
// field (`missing`, `findings`, `quota_bytes`, ...). The rules live behind the SyncPort (actors/sync/).
import { Compile } from 'typebox/compile';
import type { Logger } from 'pino';
import type { HttpRequest } from 'uWebSockets.js';
import {
  type Caller,
  type Config,
  jsonValueProblem,
  type SyncBlobUpload,
  syncDigestPattern,
  type SyncErrorCode,
  syncErrors,
  syncLocatorPattern,
  SyncForgetBody,
  SyncManifestBody,
  syncPathPrefix,
  type SyncPort,
  type SyncRefusal,
  syncRevisionsPageDefault,
  syncRevisionsPageMax,
  SyncSnapshotBody,
} from '../../contracts/index.ts';
import Type from 'typebox';
import { type Payload, paramsOf, type RouteRow } from '../door/route.ts';
import type { Exchange, Reply } from '../http/exchange.ts';
import { bearerToken, requestHash } from '../pipeline.ts';
import type { RateTaker } from '../rate-limiter.ts';
import { type SyncRoute, type SyncRouteName, syncRoutePath, syncRouteQuery, syncRoutes } from './routes.ts';
import type { Authenticator } from '../authenticator.ts';
import { parseJson, schemaProblem } from '../http/json-body.ts';

interface Answer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

const fail = (code: SyncErrorCode, message: string, extra: Record<string, unknown> = {}): Answer => ({
  status: syncErrors[code].status,
  body: { error: code, message, ...extra },
  headers: {},
});

const fromRefusal = (r: SyncRefusal): Answer => fail(r.refused, r.message, r.extra);

const manifestCheck = Compile(SyncManifestBody);
const snapshotCheck = Compile(SyncSnapshotBody);
const forgetCheck = Compile(SyncForgetBody);
const keyPattern = /^[\x20-\x7e]{1,200}$/;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

type RouteName = SyncRouteName;
const routeQuery = syncRouteQuery;

export interface SyncFaceDeps {
  config: Config;
  log: Logger;
  auth: Authenticator;
  /** Null on a gateway without the sync store (a test's gateway alone): every route answers 503. */
  port: SyncPort | null;
  /** The shared limiter (class `sync`, per principal): every authenticated request spends one token. */
  limiter: RateTaker;
}

export class SyncFace {
  /** The X-RateLimit-* headers of an admitted request, added to whatever it answers. */
  private readonly rateHeaders = new WeakMap<Exchange, Record<string, string>>();
  constructor(private readonly d: SyncFaceDeps) {}

  /** The routes under {web_url}/api/sync/, as rows of the gateway's router. */
  rows(): RouteRow[] {
    return syncRoutes.map((route) => ({
      method: route.method,
      path: syncRoutePath(route),
      face: 'sync',
      dialect: 'sync',
      auth: ['oauth_token'],
      scope: 'sync',
      rate: { class: 'sync', per: 'principal' },
      schemas: {
        params: paramsOf(route.path),
        query: Type.Object(
          Object.fromEntries(route.query.map((q) => [q.name, q.required ? q.schema : Type.Optional(q.schema)])),
          { additionalProperties: false },
        ),
        body: route.body ?? null,
        responses: Object.fromEntries(
          Object.entries(route.answers).map(([status, a]): [string, Payload] => [status, a.schema]),
        ),
      },
      dispatch: { kind: 'local', serve: (x, req, m) => this.handle(x, req, route, m.params) },
    }));
  }

  /** Serve one request of a route under /api/sync/. Everything needed from uWS is read before the first await. */
  handle(x: Exchange, req: HttpRequest, route: SyncRoute, params: Record<string, string>): void {
    const method = x.method === 'HEAD' ? 'GET' : x.method;
    const name = route.name;
    const r = {
      name,
      method,
      digest: params.digest ?? '',
      query: new URLSearchParams(req.getQuery() ?? ''),
      token: bearerToken(req.getHeader('authorization')),
      authorization: req.getHeader('authorization'),
      contentLength: req.getHeader('content-length'),
      blobSize: req.getHeader('x-blob-size'),
      contentType: req.getHeader('content-type'),
      idempotencyKey: req.getHeader('idempotency-key'),
    };
    if (!x.admit()) return;
    const port = this.d.port;
    if (port === null) {
      this.send(x, fail('unavailable', 'device sync is not configured on this gateway'));
      return;
    }
    // Who is calling, and whether the request is well formed, before a byte of the body is stored.
    const ready = this.admitted(r, x).catch((err: unknown): Answer => {
      this.d.log.error({ err, requestId: x.requestId }, 'sync request failed');
      return fail('unavailable', 'the sync service could not answer; retry');
    });
    if (name === 'blob' && method === 'PUT') {
      // uWS 20.30 drops a request whose Content-Length has 10 digits or more (1 GB and up) before any route sees
      // it, so such a blob comes chunked, with its size in X-Blob-Size.
      const declared = r.contentLength !== '' ? r.contentLength : r.blobSize;
      if (r.contentLength !== '' && r.blobSize !== '' && r.blobSize !== r.contentLength) {
        this.send(x, fail('invalid_request', 'X-Blob-Size and Content-Length differ'), true);
        return;
      }
      this.upload(x, req, port, r.digest, declared, ready);
      return;
    }
    if (name === 'blob') {
      void this.finish(x, ready, (who) => this.download(x, port, who.principalId, r.digest));
      return;
    }
    if (method === 'GET') {
      void this.finish(x, ready, (who) => this.revisions(port, who.principalId, r.query));
      return;
    }
    // Manifest and snapshot bodies can be larger than the listener's limit (a folder of 200,000 files): they are
    // read with their own, into memory (they are parsed as one JSON value anyway).
    const chunks: Buffer[] = [];
    x.streamBody(
      req,
      this.d.config.syncBodyBytesMax,
      async (c) => {
        chunks.push(c as Buffer);
      },
      (ok) => {
        if (!ok) return;
        void this.finish(x, ready, (who) => {
          let text: string;
          try {
            text = utf8.decode(Buffer.concat(chunks));
          } catch {
            return Promise.resolve(fail('invalid_request', 'the body is not UTF-8 text'));
          }
          if (!/^application\/json\b/i.test(r.contentType)) {
            return Promise.resolve(fail('invalid_request', 'send the body as application/json'));
          }
          if (name === 'manifest') return this.manifest(port, who.principalId, text);
          if (name === 'forget') return this.forget(port, who.principalId, r.query.get('locator')!, text);
          return this.commit(port, who.principalId, r.query.get('locator')!, r.idempotencyKey, text);
        });
      },
    );
  }

  /** The caller, once its token and the request's query check out; otherwise the refusal. */
  private async admitted(
    r: {
      name: RouteName;
      token: string | undefined;
      authorization: string;
      digest: string;
      query: URLSearchParams;
      idempotencyKey: string;
    },
    x: Exchange,
  ): Promise<Caller | Answer> {
    if (r.token === undefined) {
      return fail(
        'unauthorized',
        r.authorization === ''
          ? 'send Authorization: Bearer <access token>; `assay login` gets one'
          : 'send Authorization: Bearer <access token>',
      );
    }
    const auth = await this.d.auth.token(r.token);
    if (!auth.ok) {
      return auth.failure.kind === 'unavailable'
        ? fail('unavailable', 'tokens cannot be checked for a moment; retry')
        : fail('unauthorized', 'the access token is not valid, or it expired or was revoked');
    }
    const caller = auth.who.caller;
    if (caller.sandbox)
      return fail('unauthorized', 'device sync needs an account: an OAuth access token, not a sandbox token');
    if (!caller.scopes.includes('sync')) return fail('forbidden', 'this token needs the scope sync');
    // After authentication and scope, before validation (the agent routes' order): a malformed request spends too.
    const verdict = await this.d.limiter.take(caller, 'sync', 'principal');
    this.rateHeaders.set(x, verdict.headers);
    if (!verdict.ok) {
      const a = fail(
        'rate_limited',
        `this principal's sync requests are over its plan's rate; retry in ${verdict.retryAfterS} s`,
      );
      a.headers['retry-after'] = String(verdict.retryAfterS);
      return a;
    }
    if (r.name === 'blob' && !syncDigestPattern.test(r.digest)) {
      return fail('invalid_request', 'the digest in the path must be sha256:<64 lower-case hex>');
    }
    const unknown = [...new Set(r.query.keys())].filter((k) => !routeQuery[r.name].includes(k));
    if (unknown.length > 0) return fail('invalid_request', `unknown query parameter ${unknown.join(', ')}`);
    if (r.name !== 'blob') {
      const locator = r.query.get('locator');
      if (locator === null) return fail('invalid_request', 'the query needs locator=<device>/<folder>');
      if (!syncLocatorPattern.test(locator)) {
        return fail(
          'invalid_request',
          'locator must be <device>/<folder>: letters, digits, dot, dash and underscore, each starting with a letter or digit (64 and 128 characters at most)',
        );
      }
    }
    if (r.name === 'snapshots' && !keyPattern.test(r.idempotencyKey)) {
      return fail(
        'invalid_request',
        'a snapshot commit needs an Idempotency-Key of 1 to 200 printable ASCII characters',
      );
    }
    return caller;
  }

  /** Answer once the caller is admitted and `run` has decided. */
  private async finish(
    x: Exchange,
    ready: Promise<Caller | Answer>,
    run: (who: Caller) => Promise<Answer | null>,
  ): Promise<void> {
    const who = await ready;
    if ('status' in who) {
      this.send(x, who);
      return;
    }
    let a: Answer | null;
    try {
      a = await run(who);
    } catch (err) {
      this.d.log.error({ err, requestId: x.requestId }, 'sync request failed');
      a = fail('unavailable', 'the sync service could not answer; retry');
    }
    // null: the route answered itself (a download stream).
    if (a !== null) this.send(x, a);
  }

  private send(x: Exchange, a: Answer, closeConnection = false): void {
    x.send(
      a.status,
      { 'cache-control': 'no-store', ...this.rateHeaders.get(x), ...a.headers },
      'application/json',
      JSON.stringify(a.body),
      closeConnection,
    );
  }

  /** Refuse before reading the body: the rest of it is read and thrown away first, so the client reads the answer. */
  private refuseBody(x: Exchange, req: HttpRequest, a: Answer): void {
    x.refuseBody(req, this.reply(x, a));
  }

  private reply(x: Exchange, a: Answer): Reply {
    return {
      status: a.status,
      headers: { 'cache-control': 'no-store', ...this.rateHeaders.get(x), ...a.headers },
      contentType: 'application/json',
      body: JSON.stringify(a.body),
    };
  }

  /**
   * PUT a blob: its size is reserved in the owner's quota before a byte is stored (or the upload is refused), the
   * body streams into a temporary file while it is hashed, and it is kept under its digest only when the hashes
   * match; a failed or dropped upload gives its reservation back. A blob the owner holds already is read and thrown
   * away.
   */
  private upload(
    x: Exchange,
    req: HttpRequest,
    port: SyncPort,
    digest: string,
    contentLength: string,
    ready: Promise<Caller | Answer>,
  ): void {
    const bytesMax = this.d.config.syncBlobBytesMax;
    if (!/^\d{1,16}$/.test(contentLength)) {
      this.refuseBody(
        x,
        req,
        fail('invalid_request', 'send the blob with a Content-Length (or chunked, with X-Blob-Size)'),
      );
      return;
    }
    const size = Number(contentLength);
    if (size > bytesMax) {
      this.refuseBody(x, req, fail('blob_too_large', `blobs are at most ${bytesMax} bytes`, { bytes_max: bytesMax }));
      return;
    }
    // What to do with the bytes, decided once the caller is known: refuse, throw away, or store.
    const plan: Promise<
      { answer: Answer } | { who: Caller; upload: { sink: SyncBlobUpload; reservation: string } | null }
    > = ready.then(async (who) => {
      if ('status' in who) return { answer: who };
      const begun = await port.blobBegin(who.principalId, digest, size);
      if ('refused' in begun) return { answer: fromRefusal(begun) };
      if (begun.ok.held) return { who, upload: null };
      const reservation = begun.ok.reservation;
      return { who, upload: { sink: await port.blobUpload(reservation), reservation } };
    });
    const refuseEarly = plan.then((p) => {
      // The rest of the body is read and thrown away, then the answer, and the connection closes.
      if ('answer' in p) x.refuseStreamed(this.reply(x, p.answer));
      return p;
    });
    const complete = async (ok: boolean, err?: unknown) => {
      const p = await refuseEarly.catch(() => null);
      if (p === null) {
        if (!x.closed) this.send(x, fail('unavailable', 'the sync service could not answer; retry'), true);
        return;
      }
      if ('answer' in p) return;
      if (!ok) {
        // A dropped upload gives its reservation back; a failure to do so is the sweep's to mend.
        await p.upload?.sink
          .discard()
          .catch((e: unknown) =>
            this.d.log.warn({ err: e, requestId: x.requestId }, 'discarding a sync upload failed'),
          );
        if (err !== undefined) {
          this.d.log.error({ err, requestId: x.requestId }, 'storing a sync blob failed');
          this.send(x, fail('unavailable', 'the blob could not be stored; retry'), true);
        }
        return;
      }
      try {
        this.send(x, await this.stored(port, p.who.principalId, digest, size, p.upload));
      } catch (e) {
        await p.upload?.sink.discard().catch(() => {});
        this.d.log.error({ err: e, requestId: x.requestId }, 'storing a sync blob failed');
        this.send(x, fail('unavailable', 'the blob could not be stored; retry'));
      }
    };
    if (size === 0) {
      void complete(true);
      return;
    }
    let received = 0;
    x.streamBody(
      req,
      size,
      async (chunk) => {
        const p = await refuseEarly;
        if ('answer' in p) throw new RefusedEarly();
        received += chunk.byteLength;
        if (p.upload) await p.upload.sink.write(chunk);
      },
      (ok, err) => {
        if (ok && received !== size) {
          ok = false;
          err = undefined;
        }
        void complete(ok, err instanceof RefusedEarly ? undefined : err);
      },
    );
  }

  private async stored(
    port: SyncPort,
    principalId: string,
    digest: string,
    size: number,
    upload: { sink: SyncBlobUpload; reservation: string } | null,
  ): Promise<Answer> {
    if (upload === null) return { status: 200, body: { digest, size, stored: false }, headers: {} };
    const actual = await upload.sink.finish();
    if (actual !== digest) {
      await upload.sink.discard();
      return fail(
        'digest_mismatch',
        `the body hashes to ${actual}, not to the digest in the path; nothing was stored`,
        {
          actual_digest: actual,
        },
      );
    }
    await upload.sink.keep(digest);
    const recorded = await port.blobRecord(principalId, digest, size, upload.reservation);
    if ('refused' in recorded) return fromRefusal(recorded);
    return {
      status: 201,
      body: { digest, size, stored: true },
      headers: { location: `${syncPathPrefix}blobs/${digest}` },
    };
  }

  private async download(x: Exchange, port: SyncPort, principalId: string, digest: string): Promise<Answer | null> {
    if (!syncDigestPattern.test(digest))
      return fail('invalid_request', 'the digest must be sha256:<64 lower-case hex>');
    const blob = await port.blobRead(principalId, digest);
    if (blob === null) return fail('not_found', 'you hold no blob with this digest');
    const headers = {
      ...this.rateHeaders.get(x),
      'cache-control': 'private, max-age=31536000, immutable',
      etag: `"${digest}"`,
      'content-digest': `sha-256=:${Buffer.from(digest.slice('sha256:'.length), 'hex').toString('base64')}:`,
      'x-content-type-options': 'nosniff',
      'x-blob-size': String(blob.size),
    };
    if (x.head) {
      blob.stream.destroy();
      x.send(200, headers, 'application/octet-stream', null);
      return null;
    }
    x.startStream(200, { ...headers, 'content-type': 'application/octet-stream' }, '', true);
    try {
      for await (const chunk of blob.stream) {
        if (!(await x.writePaced(chunk as Buffer))) break;
      }
      x.endStream();
    } catch (err) {
      this.d.log.error({ err, digest }, 'reading a sync blob failed');
      x.abortStream();
    } finally {
      blob.stream.destroy();
    }
    return null;
  }

  private async manifest(port: SyncPort, principalId: string, text: string): Promise<Answer> {
    const body = parseJson(text);
    if (body instanceof Error) return fail('invalid_request', body.message);
    if (!manifestCheck.Check(body)) return fail('invalid_request', schemaProblem(manifestCheck, body));
    const r = await port.manifest(principalId, body.digests);
    return { status: 200, body: { missing: r.missing }, headers: {} };
  }

  private async forget(port: SyncPort, principalId: string, locator: string, text: string): Promise<Answer> {
    const body = parseJson(text);
    if (body instanceof Error) return fail('invalid_request', body.message);
    if (!forgetCheck.Check(body)) return fail('invalid_request', schemaProblem(forgetCheck, body));
    const r = await port.forget(principalId, locator, body.keep);
    if ('refused' in r) return fromRefusal(r);
    return { status: 200, body: { locator, ...r.ok }, headers: {} };
  }

  private async revisions(port: SyncPort, principalId: string, query: URLSearchParams): Promise<Answer> {
    const limitRaw = query.get('limit');
    const limit = limitRaw === null ? syncRevisionsPageDefault : Number(limitRaw);
    if (!Number.isInteger(limit) || limit < 1 || limit > syncRevisionsPageMax || !/^\d+$/.test(limitRaw ?? '1')) {
      return fail('invalid_request', `limit must be a whole number from 1 to ${syncRevisionsPageMax}`);
    }
    const files = query.get('files');
    if (files !== null && files !== 'true' && files !== 'false') {
      return fail('invalid_request', 'files must be true or false');
    }
    const locator = query.get('locator')!;
    const r = await port.revisions(principalId, locator, {
      limit,
      revision: query.get('revision'),
      files: files !== 'false',
    });
    if ('refused' in r) return fromRefusal(r);
    return { status: 200, body: { locator, ...r.ok }, headers: {} };
  }

  private async commit(
    port: SyncPort,
    principalId: string,
    locator: string,
    key: string,
    text: string,
  ): Promise<Answer> {
    const body = parseJson(text);
    if (body instanceof Error) return fail('invalid_request', body.message);
    const textProblem = jsonValueProblem(body, 'body');
    if (textProblem) return fail('invalid_request', textProblem);
    if (!snapshotCheck.Check(body)) return fail('invalid_request', schemaProblem(snapshotCheck, body));
    const hash = requestHash('sync.commit', { locator }, body);
    const r = await port.commit(principalId, locator, key, hash, body);
    if ('refused' in r) return fromRefusal(r);
    return {
      status: r.ok.status,
      body: r.ok.body,
      headers: r.ok.replayed ? { 'idempotent-replayed': 'true' } : {},
    };
  }
}

class RefusedEarly extends Error {}
