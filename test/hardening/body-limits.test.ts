// Bodies over a limit, from clients that keep sending: Node's fetch posting 8 MiB at once and a raw socket dripping
// a chunked body read the documented refusal (413 typed error, the context-file API's 400, device sync's 413), not
// EPIPE or ECONNRESET, because the gateway reads and throws away the rest of the body before it answers and closes.
// That discarding is bounded, a body just under the limit still works, and the gateway serves normally afterwards.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { isTypedError } from '../support/http.ts';
import { RawConnection, rawRequest } from '../support/raw-http.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

const mib = 1024 * 1024;
const bodyBytesMax = mib;
const discardBytesMax = 16 * mib;
/** Device sync's own limits: a manifest of 8 MiB is over its limit, a blob of 8 MiB is not (12 MiB is). */
const syncBodyBytesMax = mib;
const syncBlobBytesMax = 10 * mib;

let sys: TestSystem;
let agent: Agent;

before(async () => {
  sys = await startSystem({
    ASSAY_BODY_BYTES_MAX: String(bodyBytesMax),
    ASSAY_BODY_DISCARD_BYTES_MAX: String(discardBytesMax),
    ASSAY_SYNC_BODY_BYTES_MAX: String(syncBodyBytesMax),
    ASSAY_SYNC_BLOB_BYTES_MAX: String(syncBlobBytesMax),
  });
  agent = await sys.register();
});
after(async () => {
  await sys?.stop();
});

const balance = async () => (await sys.call('GET', '/v1/balance', { token: agent.token })).body.balance_cents as number;

interface Answer {
  status: number;
  connection: string | null;
  body: any;
}

/**
 * POST (or PUT) `bytes` with Node's fetch, with Content-Length or, `streamed`, chunked in 64 KiB pieces (so the
 * limit is crossed mid-body); any transport error fails the test.
 */
async function send(
  url: string,
  bytes: Uint8Array,
  headers: Record<string, string> = {},
  method = 'POST',
  streamed = false,
): Promise<Answer> {
  let res: Response;
  try {
    const body = streamed
      ? new ReadableStream<Uint8Array>({
          start(c) {
            for (let at = 0; at < bytes.byteLength; at += 64 * 1024) c.enqueue(bytes.subarray(at, at + 64 * 1024));
            c.close();
          },
        })
      : bytes;
    res = await fetch(url, { method, headers, body, duplex: 'half' } as RequestInit);
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    assert.fail(
      `${method} ${url}: the client saw ${cause?.code ?? ''} ${cause?.message ?? String(err)}, not an answer`,
    );
  }
  const text = await res.text();
  return { status: res.status, connection: res.headers.get('connection'), body: JSON.parse(text) };
}

/** A JSON object of exactly `length` bytes: `{"credits":1}` padded with spaces (still valid JSON). */
function jsonOfLength(value: unknown, length: number): Buffer {
  const text = JSON.stringify(value);
  assert.ok(text.length <= length);
  return Buffer.from(text + ' '.repeat(length - text.length));
}

/**
 * Headers, then the body at a pace: `chunks` of `chunkBytes`, one every `everyMs`, chunked unless `raw` (a body
 * whose Content-Length the head declared). Stops early when the gateway closes the connection.
 */
async function drip(
  c: RawConnection,
  head: string,
  o: { chunkBytes: number; chunks: number; everyMs: number; end: boolean; raw?: boolean },
): Promise<number> {
  c.send(head);
  const payload = Buffer.alloc(o.chunkBytes, 0x20);
  const frame = o.raw
    ? payload
    : Buffer.concat([Buffer.from(`${o.chunkBytes.toString(16)}\r\n`), payload, Buffer.from('\r\n')]);
  let sent = 0;
  for (let i = 0; i < o.chunks && !c.isClosed; i++) {
    c.send(frame);
    sent += o.chunkBytes;
    await new Promise((resolve) => setTimeout(resolve, o.everyMs));
  }
  if (o.end && !o.raw && !c.isClosed) c.send('0\r\n\r\n');
  return sent;
}

function chunkedHead(path: string, headers: Record<string, string> = {}): string {
  const lines = Object.entries({ host: 'assay.test', 'transfer-encoding': 'chunked', ...headers }).map(
    ([k, v]) => `${k}: ${v}`,
  );
  return `POST ${path} HTTP/1.1\r\n${lines.join('\r\n')}\r\n\r\n`;
}

describe('a body over the limit, from a client still sending', () => {
  const eightMib = Buffer.alloc(8 * mib, 0x20);
  const twelveMib = Buffer.alloc(12 * mib, 0x20);

  test('[HARDEN-BODY-ANSWER] fetch posting 8 MiB (declared and chunked) reads each face documented refusal, and nothing changes', async () => {
    const before = await balance();
    const agentRoutes: [string, Record<string, string>][] = [
      [
        `${sys.baseUrl}/v1/topups`,
        { authorization: `Bearer ${agent.token}`, 'idempotency-key': 'big-1', 'content-type': 'application/json' },
      ],
      [
        `${sys.baseUrl}/mcp`,
        {
          authorization: `Bearer ${agent.token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
      ],
    ];
    for (const streamed of [false, true]) {
      for (const [url, headers] of agentRoutes) {
        const r = await send(url, eightMib, headers, 'POST', streamed);
        assert.equal(r.status, 413, url);
        assert.ok(isTypedError(r.body, 'validation_failed'), `${url}: ${JSON.stringify(r.body)}`);
        assert.match(r.body.message, new RegExp(`larger than ${bodyBytesMax} bytes`));
        assert.equal(r.connection, 'close', url);
      }
      // A web route (the OAuth token endpoint, a form) words it as RFC 6749 does.
      const token = await send(
        `${sys.config.webUrl}/oauth/token`,
        eightMib,
        { 'content-type': 'application/x-www-form-urlencoded' },
        'POST',
        streamed,
      );
      assert.equal(token.status, 413);
      assert.equal(token.body.error, 'invalid_request');
      assert.match(token.body.error_description, /larger than/);
      assert.equal(token.connection, 'close');
      // The context-file API words it as its own 400, on both base forms.
      for (const url of [`${sys.config.apiUrl}/v1/contexts`, `${sys.config.webUrl}/api/v1/contexts`]) {
        const r = await send(url, eightMib, { 'content-type': 'application/json' }, 'POST', streamed);
        assert.equal(r.status, 400, url);
        assert.deepEqual(Object.keys(r.body).sort(), ['error', 'message']);
        assert.equal(r.body.error, 'bad_request');
        assert.match(r.body.message, /larger than/);
        assert.equal(r.connection, 'close', url);
      }
      // Device sync: a manifest over ASSAY_SYNC_BODY_BYTES_MAX, and a blob over ASSAY_SYNC_BLOB_BYTES_MAX.
      const manifest = await send(
        `${sys.config.webUrl}/api/sync/manifest`,
        eightMib,
        { 'content-type': 'application/json' },
        'POST',
        streamed,
      );
      assert.equal(manifest.status, 413);
      assert.equal(manifest.body.error, 'body_too_large');
      assert.equal(manifest.body.bytes_max, syncBodyBytesMax);
      // A chunked blob declares its size in X-Blob-Size.
      const blobUrl = `${sys.config.webUrl}/api/sync/blobs/sha256:${'0'.repeat(64)}`;
      const blobHeaders = (bytes: Uint8Array) => ({
        'content-type': 'application/octet-stream',
        ...(streamed ? { 'x-blob-size': String(bytes.length) } : {}),
      });
      const blob = await send(blobUrl, twelveMib, blobHeaders(twelveMib), 'PUT', streamed);
      assert.equal(blob.status, 413);
      assert.equal(blob.body.error, 'blob_too_large');
      assert.equal(blob.body.bytes_max, syncBlobBytesMax);
      // A blob within the limit from a caller refused once its token is checked, while the bytes stream in.
      const unauthorized = await send(blobUrl, eightMib, blobHeaders(eightMib), 'PUT', streamed);
      assert.equal(unauthorized.status, 401);
      assert.equal(unauthorized.body.error, 'unauthorized');
      assert.equal(unauthorized.connection, 'close');
    }
    assert.equal(await balance(), before, 'nothing was credited');
  });

  test('[HARDEN-BODY-ANSWER] a raw client dripping a chunked 8 MiB body reads the 413 once it has sent it all', async () => {
    const c = await RawConnection.open(sys.baseUrl);
    const head = chunkedHead('/v1/topups', {
      authorization: `Bearer ${agent.token}`,
      'idempotency-key': 'big-drip',
      'content-type': 'application/json',
    });
    // 128 chunks of 64 KiB, one every 2 ms: the gateway refuses at 1 MiB and reads the other 7 as they come.
    const sent = await drip(c, head, { chunkBytes: 64 * 1024, chunks: 128, everyMs: 2, end: true });
    assert.equal(sent, 8 * mib, 'the gateway kept reading until the client had sent everything');
    const r = await c.response({ timeoutMs: 20_000 });
    assert.equal(r.status, 413);
    assert.equal(r.headers.connection, 'close');
    assert.ok(isTypedError(JSON.parse(r.body.toString()), 'validation_failed'));
    await c.closed;
  });

  test('[HARDEN-BODY-ANSWER] a blob upload refused once its token is checked is read to its end, then answered 401', async () => {
    const c = await RawConnection.open(sys.config.webUrl);
    const head = rawRequest('PUT', `/api/sync/blobs/sha256:${'0'.repeat(64)}`, {
      headers: { authorization: 'Bearer not-a-token', 'content-type': 'application/octet-stream' },
      contentLength: 8 * mib,
    });
    const sent = await drip(c, head, { chunkBytes: 64 * 1024, chunks: 128, everyMs: 2, end: true, raw: true });
    assert.equal(sent, 8 * mib, 'the gateway kept reading until the client had sent everything');
    const r = await c.response({ timeoutMs: 20_000 });
    assert.equal(r.status, 401);
    assert.equal(r.headers.connection, 'close');
    assert.equal(JSON.parse(r.body.toString()).error, 'unauthorized');
    await c.closed;
  });

  test('[HARDEN-BODY-ANSWER] a body exactly at the limit is served', async () => {
    const before = await balance();
    const r = await send(`${sys.baseUrl}/v1/topups`, jsonOfLength({ credits: 1 }, bodyBytesMax), {
      authorization: `Bearer ${agent.token}`,
      'idempotency-key': 'at-limit',
      'content-type': 'application/json',
    });
    assert.equal(r.status, 201, JSON.stringify(r.body));
    assert.equal(await balance(), before + 100);
    const over = await send(`${sys.baseUrl}/v1/topups`, jsonOfLength({ credits: 1 }, bodyBytesMax + 1), {
      authorization: `Bearer ${agent.token}`,
      'idempotency-key': 'over-limit',
      'content-type': 'application/json',
    });
    assert.equal(over.status, 413);
    assert.equal(await balance(), before + 100);
  });
});

describe('the discarding is bounded', () => {
  test('[HARDEN-BODY-BOUND] a body declared larger than ASSAY_BODY_DISCARD_BYTES_MAX is answered at once, unread', async () => {
    const c = await RawConnection.open(sys.baseUrl);
    c.send(
      rawRequest('POST', '/v1/topups', {
        headers: {
          authorization: `Bearer ${agent.token}`,
          'idempotency-key': 'huge',
          'content-type': 'application/json',
        },
        contentLength: discardBytesMax + 1,
        body: '{"credits": 1',
      }),
    );
    // Nothing more is sent: the answer does not wait for the body.
    const r = await c.response({ timeoutMs: 5000 });
    assert.equal(r.status, 413);
    assert.equal(r.headers.connection, 'close');
    await c.closed;
  });

  test('[HARDEN-BODY-BOUND] a client that never stops sending is cut off after ASSAY_BODY_DISCARD_BYTES_MAX', async () => {
    const c = await RawConnection.open(sys.baseUrl);
    const head = chunkedHead('/v1/topups', {
      authorization: `Bearer ${agent.token}`,
      'idempotency-key': 'endless',
      'content-type': 'application/json',
    });
    // Far more than the limit and the bound: an unbounded discard would let the client send all of it.
    const sendMax = 20 * (bodyBytesMax + discardBytesMax);
    const sent = await drip(c, head, {
      chunkBytes: 256 * 1024,
      chunks: sendMax / (256 * 1024),
      everyMs: 1,
      end: false,
    });
    assert.ok(c.isClosed, 'the gateway closed the connection');
    assert.ok(sent < sendMax, `the client sent ${sent} bytes before the gateway closed`);
    // The answer was written before the close; a client that reads while it sends sees it.
    assert.match(c.unread.toString('latin1'), /^HTTP\/1\.1 413 /);
  });

  test('[HARDEN-BODY-BOUND] the gateway is healthy afterwards: no slot held, normal calls served', async () => {
    await eventually('every slot to come back', async () => (sys.running!.gateway!.inflight === 0 ? true : undefined));
    const health = await sys.call('GET', '/healthz');
    assert.equal(health.status, 200);
    const before = await balance();
    const r = await sys.call('POST', '/v1/topups', { token: agent.token, body: { credits: 2 }, key: 'after' });
    assert.equal(r.status, 201);
    assert.equal(await balance(), before + 200);
  });
});
