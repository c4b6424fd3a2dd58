// Delivery of what an order bought, over REST, the raw download and MCP: the pinned edition's exact bytes (their
// sha256 is the content hash the signed report names), its PDF rendered once, a signed receipt per delivery, and
// the documented refusal for each state an order cannot deliver in.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { linkKeyOf, signLink } from '../../actors/delivery/download-link.ts';
import { pdfRendererVersion } from '../../actors/delivery/pdf.ts';
import { activeKey } from '../../storage/index.ts';
import {
  artifactContent,
  independentlyVerifyBundle,
  publish,
  registerSeller,
  reportDigestOf,
  verifiedListing,
} from '../support/catalog.ts';
import { isTypedError } from '../support/http.ts';
import { scriptsArtifact } from '../support/pdf.ts';
import { connectMcp, type McpConnection } from '../support/mcp.ts';
import { type Agent, eventually, startSystem, type TestSystem } from '../support/system.ts';

const run = promisify(execFile);
const artifacts = new URL('../../test-artifacts/', import.meta.url).pathname;
const sha256 = (bytes: Uint8Array) => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

let sys: TestSystem;
let seller: Agent;
before(async () => {
  sys = await startSystem();
  seller = await registerSeller(sys);
});
after(async () => {
  await sys.stop();
});

/** Buy and wait until the order is settled; returns its id and final state. */
async function buy(buyer: Agent, listingId: string, formats: string[], key: string) {
  const bought = await sys.call('POST', '/v1/orders', {
    token: buyer.token,
    body: { listing_id: listingId, formats },
    key,
  });
  assert.equal(bought.status, 201, JSON.stringify(bought.body));
  const orderId: string = bought.body.order_id;
  const state = await eventually(`order ${orderId} to settle`, async () => {
    const items = (await sys.call('GET', '/v1/orders', { token: buyer.token })).body.items;
    const o = items.find((i: any) => i.id === orderId);
    return o && o.state !== 'held' ? o.state : undefined;
  });
  return { orderId, state };
}

const content = (token: string, orderId: string, format: string) =>
  sys.call('GET', `/v1/orders/${orderId}/content?format=${format}`, { token });

async function download(token: string, url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers } });
  return { res, bytes: new Uint8Array(await res.arrayBuffer()) };
}

async function reportKeys() {
  return (await sys.call('GET', '/.well-known/report-keys')).body;
}

test('[DELIVERY-CONTENT] the Markdown delivered is the pinned edition, byte for byte the content hash the report signed', async () => {
  const buyer = await sys.register();
  const { artifactId, listingId } = await verifiedListing(sys, seller.token, 'deliver-md', {
    price: 200,
    good: true,
    formats: ['md', 'pdf'],
  });
  const artifact = (await sys.call('GET', `/v1/artifacts/${artifactId}`, { token: buyer.token })).body;
  const report = (await sys.call('GET', `/v1/reports/${artifact.currentEdition.reportDigest}`, { token: buyer.token }))
    .body;
  const { orderId, state } = await buy(buyer, listingId, ['md', 'pdf'], 'buy-md');
  assert.equal(state, 'released');
  const bundleBefore = (await sys.call('GET', `/v1/orders/${orderId}/compliance-bundle`, { token: buyer.token })).body;

  const md = await content(buyer.token, orderId, 'md');
  assert.equal(md.status, 200, JSON.stringify(md.body));
  const text: string = md.body.content;
  assert.equal(sha256(Buffer.from(text, 'utf8')), md.body.content_hash);
  assert.equal(md.body.content_hash, artifact.currentEdition.contentHash);
  assert.equal(md.body.content_hash, report.subject.contentHash);
  assert.equal(md.body.edition_id, report.subject.editionId);
  assert.equal(md.body.report_digest, report.digest);
  assert.equal(md.body.delivered_digest, md.body.content_hash);
  assert.equal(md.body.media_type, 'text/markdown; charset=utf-8');
  assert.equal(md.body.content_base64, undefined);
  // A signed link to the raw bytes (DELIVERY-SIGNED-LINK): the order, the format, this agent, an expiry, a key.
  const link = new URL(md.body.download_url);
  assert.equal(`${link.origin}${link.pathname}`, `${sys.config.webUrl}/api/orders/${orderId}/content`);
  assert.equal(link.searchParams.get('format'), 'md');
  assert.equal(link.searchParams.get('agent'), buyer.agentId);
  assert.match(link.searchParams.get('signature')!, /^[A-Za-z0-9_-]{43}$/);

  // The raw bytes: the same text, Content-Digest (RFC 9530) and a strong ETag; a matching If-None-Match is 304.
  const raw = await download(buyer.token, md.body.download_url);
  assert.equal(raw.res.status, 200);
  assert.equal(raw.res.headers.get('content-type'), 'text/markdown; charset=utf-8');
  assert.equal(Buffer.from(raw.bytes).toString('utf8'), text);
  const digestB64 = createHash('sha256').update(raw.bytes).digest('base64');
  assert.equal(raw.res.headers.get('content-digest'), `sha-256=:${digestB64}:`);
  assert.equal(`sha256:${Buffer.from(digestB64, 'base64').toString('hex')}`, report.subject.contentHash);
  const etag = raw.res.headers.get('etag')!;
  assert.match(etag, /^"[0-9a-f]{64}"$/, 'a strong entity tag');
  const again = await download(buyer.token, md.body.download_url, { 'if-none-match': etag });
  assert.equal(again.res.status, 304);
  assert.equal(again.bytes.length, 0);
  // Without the token and without a signed link: the typed 401.
  const anonymous = await fetch(`${sys.config.webUrl}/api/orders/${orderId}/content?format=md`);
  assert.equal(anonymous.status, 401);
  assert.ok(isTypedError(await anonymous.json(), 'unauthorized'));

  // A later edition of the same artifact changes the artifact, not what this order bought.
  const next = artifactContent(
    'deliver-md',
    [['c1', 'Alpha beta gamma delta epsilon.']],
    ['Alpha beta gamma delta epsilon.'],
  );
  const published = await sys.call('POST', `/v1/artifacts/${artifactId}/editions`, {
    token: seller.token,
    body: { content: next },
    key: 'deliver-md-2',
  });
  assert.equal(published.status, 201, JSON.stringify(published.body));
  await eventually('the new edition to be judged', async () => {
    const a = (await sys.call('GET', `/v1/artifacts/${artifactId}`, { token: buyer.token })).body;
    return a.currentEdition.id !== artifact.currentEdition.id && a.currentEdition.reportDigest ? true : undefined;
  });
  const later = await content(buyer.token, orderId, 'md');
  assert.equal(later.status, 200);
  assert.equal(later.body.content, text);
  assert.equal(later.body.edition_id, artifact.currentEdition.id);
  // An order bought now gets the new edition.
  const second = await buy(buyer, listingId, ['md'], 'buy-md-2');
  const fresh = await content(buyer.token, second.orderId, 'md');
  assert.equal(fresh.body.content, next);
  assert.notEqual(fresh.body.edition_id, artifact.currentEdition.id);

  // Every delivery that handed bytes over has a signed receipt (the 304 did not): api, download, api.
  const receipts = await sys.call('GET', `/v1/orders/${orderId}/receipts`, { token: buyer.token });
  assert.equal(receipts.status, 200);
  const items: any[] = receipts.body.items;
  assert.deepEqual(
    items.map((r) => [r.body.via, r.body.format]),
    [
      ['api', 'md'],
      ['download', 'md'],
      ['api', 'md'],
    ],
  );
  assert.equal(items[1].id, raw.res.headers.get('assay-receipt-id'));
  assert.equal(items[0].id, later.body.receipt_id);
  const keys = await reportKeys();
  for (const r of items) {
    assert.deepEqual(independentlyVerifyBundle(r, keys), { digestOk: true, signatureOk: true });
    assert.equal(r.body.receipt_version, 'delivery-receipt/1');
    assert.equal(r.body.order_id, orderId);
    assert.equal(r.body.content_hash, report.subject.contentHash);
    assert.equal(r.body.report_digest, report.digest);
    assert.equal(r.body.delivered_digest, report.subject.contentHash);
    assert.equal(r.body.agent_id, buyer.agentId);
  }
  // Receipts page newest first and the cursor walks on.
  const page1 = await sys.call('GET', `/v1/orders/${orderId}/receipts?limit=2`, { token: buyer.token });
  assert.deepEqual(
    page1.body.items.map((r: any) => r.id),
    items.slice(0, 2).map((r) => r.id),
  );
  const page2 = await sys.call('GET', `/v1/orders/${orderId}/receipts?limit=2&cursor=${page1.body.next_cursor}`, {
    token: buyer.token,
  });
  assert.deepEqual(
    page2.body.items.map((r: any) => r.id),
    [items[2].id],
  );
  assert.equal(page2.body.next_cursor, null);
  // The compliance bundle, once issued, never changes: receipts are records of their own.
  const bundleAfter = (await sys.call('GET', `/v1/orders/${orderId}/compliance-bundle`, { token: buyer.token })).body;
  assert.deepEqual(bundleAfter, bundleBefore);
});

test('[DELIVERY-SIGNED-LINK] download_url works without a token until it expires, and no part of it can be changed to fetch something else', async () => {
  const a = await sys.register();
  const b = await sys.register();
  const { listingId } = await verifiedListing(sys, seller.token, 'deliver-link', {
    price: 100,
    good: true,
    formats: ['md', 'pdf'],
  });
  const mine = await buy(a, listingId, ['md', 'pdf'], 'link-a');
  const theirs = await buy(b, listingId, ['md'], 'link-b');
  const md = (await content(a.token, mine.orderId, 'md')).body;
  const url = new URL(md.download_url);
  const expires = Number(url.searchParams.get('expires'));
  const nowS = Math.floor(Date.now() / 1000);
  assert.ok(
    expires > nowS && expires <= nowS + 900 + 5,
    `expires ${expires - nowS} s from now: the default 15 minutes`,
  );

  // No token: a browser or a download tool fetches it as it is.
  const plain = await fetch(md.download_url);
  assert.equal(plain.status, 200);
  const bytes = new Uint8Array(await plain.arrayBuffer());
  assert.equal(sha256(bytes), md.content_hash, 'the bytes the report signed');
  assert.equal(plain.headers.get('content-type'), 'text/markdown; charset=utf-8');
  const receiptId = plain.headers.get('assay-receipt-id');
  const receipts = (await sys.call('GET', `/v1/orders/${mine.orderId}/receipts`, { token: a.token })).body.items;
  const receipt = receipts.find((r: any) => r.id === receiptId);
  assert.deepEqual([receipt.body.via, receipt.body.agent_id], ['download', a.agentId], 'the agent it was handed to');

  // Each part changed alone: refused with the typed 401, before anything about the order is read.
  const altered = (change: (q: URLSearchParams) => void, path = url.pathname) => {
    const q = new URLSearchParams(url.search);
    change(q);
    return `${url.origin}${path}?${q}`;
  };
  const otherPath = url.pathname.replace(mine.orderId, theirs.orderId);
  const flip = (s: string) => (s[0] === 'A' ? 'B' : 'A') + s.slice(1);
  const cases: [string, string][] = [
    ["another principal's order id", altered(() => {}, otherPath)],
    ['the other format this order bought', altered((q) => q.set('format', 'pdf'))],
    ['a later expiry', altered((q) => q.set('expires', String(expires + 3600)))],
    ['an earlier expiry', altered((q) => q.set('expires', String(expires - 1)))],
    ['another agent', altered((q) => q.set('agent', b.agentId))],
    ['another signature', altered((q) => q.set('signature', flip(q.get('signature')!)))],
    ['a key that does not exist', altered((q) => q.set('key', 'report-0000000000000000'))],
    ['no expiry', altered((q) => q.delete('expires'))],
  ];
  for (const [what, target] of cases) {
    const r = await fetch(target);
    assert.equal(r.status, 401, what);
    assert.ok(isTypedError(await r.json(), 'unauthorized'), what);
  }
  // The link stands in for the token: without a signature the token rules apply, and it is no token for anything.
  const unsigned = await fetch(altered((q) => q.delete('signature')));
  assert.equal(unsigned.status, 401);
  const jsonRoute = await fetch(`${sys.baseUrl}/v1/orders/${mine.orderId}/content${url.search}`);
  assert.equal(jsonRoute.status, 401, 'the JSON route keeps requiring the token');
  // Another principal's own link, pointed at this order, is refused; its token reaches only its own orders.
  const bLink = new URL((await content(b.token, theirs.orderId, 'md')).body.download_url);
  const bPointed = await fetch(`${bLink.origin}${bLink.pathname.replace(theirs.orderId, mine.orderId)}${bLink.search}`);
  assert.equal(bPointed.status, 401);
  const bToken = await download(b.token, `${sys.config.webUrl}/api/orders/${mine.orderId}/content?format=md`);
  assert.equal(bToken.res.status, 404);

  // Expiry, with a link signed by the service's own key (as the service signs them): one that expired a second ago
  // is refused, the same link a minute ahead works, so the refusal is the expiry's alone.
  const key = await activeKey(sys.sql, 'report');
  const signed = (expiresS: number) =>
    `${sys.config.webUrl}/api/orders/${mine.orderId}/content?${signLink(
      { orderId: mine.orderId, format: 'md', agentId: a.agentId, expiresS },
      key!.kid,
      linkKeyOf(key!),
    )}`;
  const now = Math.floor(Date.now() / 1000);
  const expired = await fetch(signed(now - 1));
  assert.equal(expired.status, 401);
  assert.match((await expired.json()).message, /expired/);
  const fresh = await fetch(signed(now + 60));
  assert.equal(fresh.status, 200);
  assert.equal(sha256(new Uint8Array(await fresh.arrayBuffer())), md.content_hash);
});

test('[DELIVERY-PDF-ORDER] the PDF an order bought is a real PDF of the judged edition, with its hashes in its metadata', async () => {
  const buyer = await sys.register();
  const claims: [string, string][] = [['c1', 'Alpha beta gamma delta.']];
  const a = await publish(
    sys,
    seller.token,
    { title: 'Delivered as PDF', content: artifactContent('Delivered as PDF', claims, ['Alpha beta gamma delta.']) },
    'a-pdf',
  );
  const reportDigest = await reportDigestOf(sys, seller.token, a.id);
  const l = await sys.call('POST', '/v1/listings', {
    token: seller.token,
    body: { artifact_id: a.id, price_cents: 100, floor: 0.7, formats: ['pdf'] },
    key: 'l-pdf',
  });
  assert.equal(l.status, 201, JSON.stringify(l.body));
  const { orderId } = await buy(buyer, l.body.id, ['pdf'], 'buy-pdf');
  const pdf = await content(buyer.token, orderId, 'pdf');
  assert.equal(pdf.status, 200, JSON.stringify(pdf.body));
  assert.equal(pdf.body.media_type, 'application/pdf');
  assert.equal(pdf.body.content, undefined);
  const bytes = Buffer.from(pdf.body.content_base64, 'base64');
  assert.equal(bytes.subarray(0, 5).toString('latin1'), '%PDF-');
  assert.equal(sha256(bytes), pdf.body.delivered_digest);
  assert.equal(bytes.length, pdf.body.byte_length);
  assert.equal(pdf.body.report_digest, reportDigest);
  assert.match(pdf.body.renderer, /^pdf\//);

  const raw = await download(buyer.token, pdf.body.download_url);
  assert.equal(raw.res.status, 200);
  assert.equal(raw.res.headers.get('content-type'), 'application/pdf');
  assert.deepEqual(Buffer.from(raw.bytes), bytes, 'the download is the same file');
  assert.equal(
    raw.res.headers.get('content-digest'),
    `sha-256=:${createHash('sha256').update(raw.bytes).digest('base64')}:`,
  );

  await mkdir(artifacts, { recursive: true });
  const file = `${artifacts}delivery-order.pdf`;
  await writeFile(file, bytes);
  const text = (await run('pdftotext', ['-layout', file, '-'])).stdout.replace(/\s+/g, ' ');
  assert.ok(text.includes('Delivered as PDF'), 'the title');
  assert.ok(text.includes('Alpha beta gamma delta.'), 'the claim');
  const info = (await run('pdfinfo', ['-custom', file])).stdout;
  assert.match(info, new RegExp(`ContentHash:\\s+${pdf.body.content_hash}`));
  assert.match(info, new RegExp(`ReportDigest:\\s+${reportDigest}`));
});

test('[DELIVERY-PDF-SCRIPTS] an edition in Greek, Russian and Japanese, bought as md and pdf: every word readable in the PDF, none as a code point', async () => {
  const buyer = await sys.register();
  const { markdown, title, words } = scriptsArtifact();
  const a = await publish(sys, seller.token, { title, content: markdown }, 'a-scripts');
  await reportDigestOf(sys, seller.token, a.id);
  const l = await sys.call('POST', '/v1/listings', {
    token: seller.token,
    body: { artifact_id: a.id, price_cents: 100, floor: 0.7, formats: ['md', 'pdf'] },
    key: 'l-scripts',
  });
  assert.equal(l.status, 201, JSON.stringify(l.body));
  const { orderId, state } = await buy(buyer, l.body.id, ['md', 'pdf'], 'buy-scripts');
  assert.equal(state, 'released');

  const md = await content(buyer.token, orderId, 'md');
  assert.equal(md.status, 200, JSON.stringify(md.body));
  assert.equal(md.body.content, markdown, 'the Markdown is the exact text');
  // A render cached by the renderer of the standard fonts (pdf/1.0.0, which wrote all of this as code points) is
  // not served: the PDF is rendered again under the current version.
  const [order] = await sys.sql<{ edition_id: string }[]>`SELECT edition_id FROM orders WHERE id = ${orderId}`;
  const stale = Buffer.from('%PDF-1.3\n% rendered in the standard fonts: <U+041F><U+0440>...\n%%EOF\n');
  await sys.sql`
    INSERT INTO rendered_pdfs (edition_id, renderer_version, bytes, digest)
    VALUES (${order!.edition_id}, 'pdf/1.0.0', ${stale}, ${sha256(stale)})`;
  const pdf = await content(buyer.token, orderId, 'pdf');
  assert.equal(pdf.status, 200, JSON.stringify(pdf.body));
  assert.equal(pdf.body.renderer, pdfRendererVersion);
  const bytes = Buffer.from(pdf.body.content_base64, 'base64');
  assert.equal(sha256(bytes), pdf.body.delivered_digest);
  assert.notEqual(pdf.body.delivered_digest, sha256(stale));
  const rendered = await sys.sql<{ renderer_version: string; renders: number }[]>`
    SELECT renderer_version, renders FROM rendered_pdfs WHERE edition_id = ${order!.edition_id}
    ORDER BY renderer_version`;
  assert.deepEqual(
    rendered.map((r) => [r.renderer_version, r.renders]),
    [
      ['pdf/1.0.0', 1],
      [pdfRendererVersion, 1],
    ],
  );

  await mkdir(artifacts, { recursive: true });
  const file = `${artifacts}delivery-scripts.pdf`;
  await writeFile(file, bytes);
  const text = (await run('pdftotext', ['-raw', '-enc', 'UTF-8', file, '-'])).stdout;
  assert.doesNotMatch(text, /<U\+[0-9A-F]{4,6}>/, 'no character is written as its code point');
  const squeezed = text.replace(/\s+/g, '');
  assert.deepEqual(
    words.filter((w) => !squeezed.includes(w)),
    [],
    'words of the edition missing from its PDF',
  );
  for (const expected of [title, 'Grüße aus Zürich', `${title} · ${pdf.body.edition_id}`]) {
    assert.ok(squeezed.includes(expected.replace(/\s+/g, '')), expected);
  }
  // Page 1 as a picture, to look at after the run.
  await run('pdftoppm', [
    '-png',
    '-r',
    '80',
    '-f',
    '1',
    '-l',
    '1',
    '-singlefile',
    file,
    `${artifacts}delivery-scripts-page1`,
  ]);
});

test('[DELIVERY-REFUSALS] a format not bought, another principal, a held order and a refunded order, over REST and MCP', async () => {
  const buyer = await sys.register();
  const stranger = await sys.register();
  const good = await verifiedListing(sys, seller.token, 'refusals-good', {
    price: 100,
    good: true,
    formats: ['md', 'pdf'],
  });
  const bad = await verifiedListing(sys, seller.token, 'refusals-bad', { price: 100, good: false });
  const mdOnly = await buy(buyer, good.listingId, ['md'], 'refusal-md');
  const refunded = await buy(buyer, bad.listingId, ['md'], 'refusal-bad');
  assert.equal(refunded.state, 'auto_refunded');

  // A held order: its edition cannot be judged while no report key is active.
  const [key] = await sys.sql<{ kid: string }[]>`
    UPDATE signing_keys SET retired_at = now() WHERE purpose = 'report' AND retired_at IS NULL RETURNING kid`;
  let heldOrderId: string;
  try {
    const edition = await sys.call('POST', `/v1/artifacts/${good.artifactId}/editions`, {
      token: seller.token,
      body: { content: artifactContent('held', [['c1', 'Alpha beta gamma delta.']], ['Alpha beta gamma delta.']) },
      key: 'refusals-held-edition',
    });
    assert.equal(edition.status, 201, JSON.stringify(edition.body));
    const bought = await sys.call('POST', '/v1/orders', {
      token: buyer.token,
      body: { listing_id: good.listingId, formats: ['md'] },
      key: 'refusal-held',
    });
    assert.equal(bought.status, 201);
    heldOrderId = bought.body.order_id;

    const expected: [string, string, string, number, string][] = [
      ['format not bought', buyer.token, `${mdOnly.orderId}`, 422, 'validation_failed'],
      ["another principal's order", stranger.token, `${mdOnly.orderId}`, 404, 'not_found'],
      ['an order that does not exist', buyer.token, '7d1c8a52-58c4-4a51-9a3e-2d8f4d0c9b11', 404, 'not_found'],
      ['a held order', buyer.token, heldOrderId, 503, 'unavailable'],
      ['a refunded order', buyer.token, refunded.orderId, 409, 'order_refunded'],
    ];
    const connections = new Map<string, McpConnection>();
    try {
      for (const [what, token, orderId, status, code] of expected) {
        const format = what === 'format not bought' ? 'pdf' : 'md';
        for (const path of [`/v1/orders/${orderId}/content`, `/api/orders/${orderId}/content`]) {
          const r = await sys.call('GET', `${path}?format=${format}`, { token });
          assert.equal(r.status, status, `${what} at ${path}: ${JSON.stringify(r.body)}`);
          assert.ok(isTypedError(r.body, code), `${what} at ${path}: ${JSON.stringify(r.body)}`);
          if (code === 'unavailable') assert.equal(r.headers.get('retry-after'), '2');
        }
        let mcp = connections.get(token);
        if (!mcp) {
          mcp = await connectMcp(sys.baseUrl, token);
          connections.set(token, mcp);
        }
        const result = await mcp.client.callTool({
          name: 'get_order_content',
          arguments: { order_id: orderId, format },
        });
        assert.equal(result.isError, true, what);
        assert.equal((result.structuredContent as any).code, code, what);
        assert.equal(result._meta?.['assay/status'], status, what);
      }
      // Nothing was delivered, so nothing was recorded.
      const [{ n }] = await sys.sql<[{ n: number }]>`SELECT count(*)::int AS n FROM delivery_receipts
        WHERE order_id = ANY(${[mdOnly.orderId, refunded.orderId, heldOrderId]}::uuid[])`;
      assert.equal(n, 0);
      // The receipts of another principal's order are not there either.
      const foreign = await sys.call('GET', `/v1/orders/${mdOnly.orderId}/receipts`, { token: stranger.token });
      assert.equal(foreign.status, 404);
    } finally {
      for (const c of connections.values()) await c.client.close();
    }
  } finally {
    await sys.sql`UPDATE signing_keys SET retired_at = NULL WHERE kid = ${key!.kid}`;
  }
  // Once the held order's edition is judged and the order released, the same call delivers.
  await eventually(
    'the held order to be released',
    async () => {
      const r = await content(buyer.token, heldOrderId, 'md');
      return r.status === 200 ? r : undefined;
    },
    20_000,
  );
});

test('[DELIVERY-MCP] get_order_content returns the Markdown as a text resource and the PDF as a blob, with their hashes', async () => {
  const buyer = await sys.register();
  const { listingId } = await verifiedListing(sys, seller.token, 'deliver-mcp', {
    price: 100,
    good: true,
    formats: ['md', 'pdf'],
  });
  const { orderId } = await buy(buyer, listingId, ['md', 'pdf'], 'buy-mcp');
  const rest = (await content(buyer.token, orderId, 'md')).body;
  const mcp = await connectMcp(sys.baseUrl, buyer.token);
  try {
    const md = await mcp.client.callTool({ name: 'get_order_content', arguments: { order_id: orderId, format: 'md' } });
    assert.notEqual(md.isError, true, JSON.stringify(md));
    const block = (md.content as any[]).find((c) => c.type === 'resource');
    assert.equal(block.resource.mimeType, 'text/markdown; charset=utf-8');
    assert.equal(block.resource.text, rest.content);
    assert.equal(sha256(Buffer.from(block.resource.text, 'utf8')), rest.content_hash);
    assert.equal(block.resource._meta['assay/content_hash'], rest.content_hash);
    // The resource is at a signed link of its own (a later expiry than the REST call's, perhaps).
    const uri = new URL(block.resource.uri);
    assert.equal(`${uri.origin}${uri.pathname}`, rest.download_url.split('?')[0]);
    assert.equal(uri.searchParams.get('format'), 'md');
    const structured = md.structuredContent as any;
    assert.equal(structured.content, undefined, 'the bytes travel once, in the resource block');
    assert.equal(structured.content_hash, rest.content_hash);
    assert.match(structured.receipt_id, /^[0-9a-f-]{36}$/);

    const pdf = await mcp.client.callTool({
      name: 'get_order_content',
      arguments: { order_id: orderId, format: 'pdf' },
    });
    const blob = (pdf.content as any[]).find((c) => c.type === 'resource').resource;
    assert.equal(blob.mimeType, 'application/pdf');
    const bytes = Buffer.from(blob.blob, 'base64');
    assert.equal(bytes.subarray(0, 5).toString('latin1'), '%PDF-');
    assert.equal(sha256(bytes), blob._meta['assay/delivered_digest']);
    assert.equal(blob._meta['assay/content_hash'], rest.content_hash);

    const receipts = await mcp.client.callTool({ name: 'get_order_receipts', arguments: { order_id: orderId } });
    const vias = (receipts.structuredContent as any).items.map((r: any) => `${r.body.via}:${r.body.format}`);
    assert.deepEqual(vias, ['api:pdf', 'api:md', 'api:md']);
  } finally {
    await mcp.client.close();
  }
});

test('[DELIVERY-RENDER-ONCE] delivering the same PDF 1,000 times renders it once and records 1,000 receipts', async () => {
  const buyer = await sys.register();
  const { listingId } = await verifiedListing(sys, seller.token, 'render-once', {
    price: 100,
    good: true,
    formats: ['pdf'],
  });
  const { orderId } = await buy(buyer, listingId, ['pdf'], 'buy-once');
  const digests = new Set<string>();
  let next = 0;
  // 1,000 deliveries, 25 at a time, half as JSON and half as raw downloads.
  await Promise.all(
    Array.from({ length: 25 }, async () => {
      for (let i = next++; i < 1000; i = next++) {
        if (i % 2 === 0) {
          const r = await content(buyer.token, orderId, 'pdf');
          assert.equal(r.status, 200);
          digests.add(r.body.delivered_digest);
        } else {
          const r = await download(buyer.token, `${sys.baseUrl}/api/orders/${orderId}/content?format=pdf`);
          assert.equal(r.res.status, 200);
          digests.add(sha256(r.bytes));
        }
      }
    }),
  );
  assert.equal(digests.size, 1, 'every delivery is the same file');
  const [order] = await sys.sql<{ edition_id: string }[]>`SELECT edition_id FROM orders WHERE id = ${orderId}`;
  const rendered = await sys.sql<{ renders: number }[]>`
    SELECT renders FROM rendered_pdfs WHERE edition_id = ${order!.edition_id}`;
  assert.deepEqual(
    rendered.map((r) => r.renders),
    [1],
  );
  const [{ n }] = await sys.sql<[{ n: number }]>`
    SELECT count(*)::int AS n FROM delivery_receipts WHERE order_id = ${orderId}`;
  assert.equal(n, 1000);
});
