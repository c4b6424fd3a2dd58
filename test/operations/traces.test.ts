// Traces across the bus (docs/operations.md, Traces): with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a loopback
// OTLP/HTTP receiver, a purchase's spans (the gateway's request, the principal actor's command, the JetStream
// append, the catalog service's quote and its PostgreSQL statements) arrive under one trace id, each child naming
// its parent; and a line logged inside a span carries its trace id.
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, test } from 'node:test';
import { makeLogger } from '../../cli/roles.ts';
import { SpanKind } from '@opentelemetry/api';
import { actorsTelemetry } from '../../actors/index.ts';
import { registerSeller, verifiedListing } from '../support/catalog.ts';
import { freePort } from '../support/env.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';

interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  service: string;
}

let sys: TestSystem;
let receiver: Server;
const spans: ReceivedSpan[] = [];

before(async () => {
  const port = await freePort();
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => {
      body += d;
    });
    req.on('end', () => {
      // OTLP/HTTP with JSON bodies: resourceSpans -> scopeSpans -> spans, ids as hex strings.
      const doc = JSON.parse(body);
      for (const rs of doc.resourceSpans ?? []) {
        const service = rs.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue;
        for (const ss of rs.scopeSpans ?? []) for (const s of ss.spans ?? []) spans.push({ ...s, service });
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
  // The standard variable, read by the process that runs the roles (this one): tracing on for this file only.
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
  sys = await startSystem();
});
after(async () => {
  await sys?.stop();
  receiver?.close();
});

test("[OPS-TRACES] a purchase's gateway, actor, JetStream and PostgreSQL spans reach an OTLP receiver under one trace id", async () => {
  const seller = await registerSeller(sys);
  const { listingId } = await verifiedListing(sys, seller.token, 'traced', { price: 100, good: true });
  const buyer = await sys.register();
  const r = await sys.call('POST', '/v1/orders', {
    token: buyer.token,
    key: 'traced',
    body: { listing_id: listingId, formats: ['md'] },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));

  const trace = await eventually(
    "the purchase's spans",
    async () => {
      const root = spans.find((s) => s.name === 'purchaseArtifact' && !s.parentSpanId);
      if (!root) return undefined;
      const mine = spans.filter((s) => s.traceId === root.traceId);
      const names = mine.map((s) => s.name);
      const complete =
        names.includes('principal purchaseArtifact') &&
        names.some((n) => n.endsWith('_LEDGER append')) &&
        names.some((n) => n.startsWith('SELECT '));
      return complete ? { root, mine } : undefined;
    },
    20_000,
  );
  const byId = new Map(trace.mine.map((s) => [s.spanId, s]));
  const parentOf = (name: (n: string) => boolean) => {
    const s = trace.mine.find((x) => name(x.name))!;
    return byId.get(s.parentSpanId)?.name;
  };
  assert.equal(
    parentOf((n) => n === 'principal purchaseArtifact'),
    'purchaseArtifact',
    'the actor under the gateway',
  );
  assert.equal(
    parentOf((n) => n.endsWith('_LEDGER append')),
    'principal purchaseArtifact',
    'the append under the actor',
  );
  const select = trace.mine.find((s) => s.name.startsWith('SELECT '))!;
  assert.equal(byId.get(select.parentSpanId)?.name, 'catalog catalog.purchase_info', 'the statement under the service');
  assert.equal(
    byId.get(byId.get(select.parentSpanId)!.parentSpanId)?.name,
    'principal purchaseArtifact',
    'the quote asked by the actor',
  );
  assert.ok(trace.root.service.startsWith('assay'), 'spans name the service');
  assert.equal(trace.root.kind, 2, 'the request span is a server span');
});

test('[OPS-TRACES] a line logged inside a span carries its trace id', async () => {
  const lines: string[] = [];
  const log = makeLogger(sys.config, { write: (line: string) => lines.push(line) });
  let traceId = '';
  await actorsTelemetry.inSpan('logging', SpanKind.INTERNAL, {}, async (span) => {
    traceId = span!.spanContext().traceId;
    log.error('inside');
  });
  log.error('outside');
  const [inside, outside] = lines.map((l) => JSON.parse(l));
  assert.equal(inside.trace_id, traceId);
  assert.equal(outside.trace_id, undefined);
});
