// The request path's counters and histograms (cli/bound-metrics.ts) expose exactly what prom-client's own
// would for the same observations: same lines, same buckets, same text, so a dashboard or alert cannot tell them
// apart.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import client from 'prom-client';
import { BoundCounter, BoundHistogram } from '../../cli/bound-metrics.ts';

test('[OPS-METRICS-BOUND] bound counters and histograms expose the text prom-client exposes for the same observations', async () => {
  const bounds = [0.001, 0.01, 0.1, 1];
  const ours = new client.Registry();
  const theirs = new client.Registry();
  const h = new BoundHistogram('t_seconds', 'A histogram.', ['kind', 'outcome'], bounds, ours);
  const ph = new client.Histogram({
    name: 't_seconds',
    help: 'A histogram.',
    labelNames: ['kind', 'outcome'],
    buckets: bounds,
    registers: [theirs],
  });
  const c = new BoundCounter('t_total', 'A counter.', ['kind'], ours);
  const pc = new client.Counter({ name: 't_total', help: 'A counter.', labelNames: ['kind'], registers: [theirs] });
  const bare = new BoundHistogram('t_lag_seconds', 'No labels.', [], bounds, ours);
  const pbare = new client.Histogram({
    name: 't_lag_seconds',
    help: 'No labels.',
    buckets: bounds,
    registers: [theirs],
  });

  // Values on the bounds themselves belong to that bound's bucket (le: less than or equal), one above every bound
  // only to +Inf, zero and negatives to the first.
  const values = [0, -1, 0.001, 0.0011, 0.01, 0.5, 1, 1.5, 42];
  values.forEach((v, i) => {
    const kind = i % 2 ? 'principal' : 'listing';
    h.labels(kind, 'ok').observe(v);
    ph.labels(kind, 'ok').observe(v);
    c.labels(kind).inc();
    pc.labels(kind).inc();
    if (i < 3) {
      c.labels(kind).inc(2);
      pc.labels(kind).inc(2);
    }
  });
  bare.observe(0.01);
  pbare.observe(0.01);
  // The same lines (series appear in the order first observed, which the two need not share).
  const lines = (text: string) => text.split('\n').sort();
  assert.deepEqual(lines(await ours.metrics()), lines(await theirs.metrics()));
  assert.match(await ours.metrics(), /t_seconds_bucket\{le="0\.001",kind="listing",outcome="ok"\} 2/);

  // A histogram without labels has its series before any observation, as prom-client's has.
  const fresh = new client.Registry();
  new BoundHistogram('t_empty_seconds', 'Empty.', [], bounds, fresh);
  assert.match(await fresh.metrics(), /t_empty_seconds_count 0/);
});
