// The admin listener every process opens (docs/operations.md, Metrics): `GET /metrics` in the Prometheus text
// format, on ASSAY_METRICS_HOST:ASSAY_METRICS_PORT, never on the public gateway port (metrics show escrow totals).
import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../contracts/index.ts';
import type { ProcessMetrics } from './telemetry.ts';

/** Resolves with the listener, or null when the port is 0 (off) or taken (logged: metrics are not worth a crash). */
export async function startMetricsListener(
  config: Config,
  log: Logger,
  metrics: Pick<ProcessMetrics, 'metricsText' | 'metricsContentType'>,
): Promise<Server | null> {
  if (config.metricsPort === 0) return null;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served here\n');
      return;
    }
    metrics.metricsText().then(
      (text) => res.writeHead(200, { 'content-type': metrics.metricsContentType }).end(text),
      (err: unknown) => {
        log.error({ err }, 'metrics scrape failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('the metrics could not be read\n');
      },
    );
  });
  return new Promise((resolve) => {
    server.once('error', (err) => {
      log.error(
        { err, port: config.metricsPort },
        'the metrics listener could not start; this process runs without it',
      );
      resolve(null);
    });
    server.listen(config.metricsPort, config.metricsHost, () => {
      log.info({ host: config.metricsHost, port: config.metricsPort }, 'metrics at /metrics');
      resolve(server);
    });
  });
}
