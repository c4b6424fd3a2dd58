// A webhook receiver for tests: a real HTTPS server on 127.0.0.1 with a self-signed certificate made for the run
// (`openssl`), recording every request (path, headers, raw body, arrival time) and answering as each path is
// scripted: a status, a delay, or statuses in turn. It listens on loopback only.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface SelfSigned {
  dir: string;
  certFile: string;
  keyFile: string;
  certPem: string;
}

/** A P-256 certificate for `localhost` and 127.0.0.1, valid for a day, in a new temporary folder. */
export function selfSignedCertificate(): SelfSigned {
  const dir = mkdtempSync(join(tmpdir(), 'assay-webhook-cert-'));
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-days',
      '1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return { dir, certFile, keyFile, certPem: readFileSync(certFile, 'utf8') };
}

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  atMs: number;
}

/** How a path answers: a status after an optional delay. `statuses` are used in turn, the last one repeating. */
export interface PathScript {
  statuses?: number[];
  delayMs?: number;
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, PathScript>();
  private readonly served = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();
  private readonly inFlightMax = new Map<string, number>();

  constructor(private readonly server: Server) {}

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The URL of a path on this receiver, by the name its certificate holds. */
  url(path: string): string {
    return `https://localhost:${this.port}${path}`;
  }

  script(path: string, s: PathScript): void {
    this.scripts.set(path, s);
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  /**
   * The most requests to a path this receiver held at once: received, and neither answered nor given up by their
   * sender (its attempt timed out and it closed the connection, which frees its slot for another delivery).
   */
  mostAtOnce(path: string): number {
    return this.inFlightMax.get(path) ?? 0;
  }

  /** Answers a request; `givenUp` settles if its sender closes the connection before the answer. */
  async handle(path: string, headers: Record<string, string>, body: string, givenUp: Promise<void>): Promise<number> {
    const n = this.served.get(path) ?? 0;
    this.served.set(path, n + 1);
    this.received.push({ path, headers, body, atMs: Date.now() });
    const now = (this.inFlight.get(path) ?? 0) + 1;
    this.inFlight.set(path, now);
    this.inFlightMax.set(path, Math.max(now, this.inFlightMax.get(path) ?? 0));
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      this.inFlight.set(path, (this.inFlight.get(path) ?? 1) - 1);
    };
    void givenUp.then(release);
    try {
      const s = this.scripts.get(path) ?? {};
      if (s.delayMs) await new Promise((r) => setTimeout(r, s.delayMs));
      const statuses = s.statuses ?? [204];
      return statuses[Math.min(n, statuses.length - 1)]!;
    } finally {
      release();
    }
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}

export async function startWebhookReceiver(cert: SelfSigned): Promise<WebhookReceiver> {
  let receiver: WebhookReceiver | null = null;
  const server = createServer({ key: readFileSync(cert.keyFile), cert: cert.certPem }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = Object.fromEntries(
        Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]),
      );
      // The sender gave up before the answer: its attempt timed out (on loaded cores, a slow path's answer can come
      // after it) and it closed the connection.
      const givenUp = new Promise<void>((resolve) => res.once('close', () => resolve()));
      void receiver!.handle(req.url ?? '', headers, Buffer.concat(chunks).toString('utf8'), givenUp).then((status) => {
        if (!res.destroyed) res.writeHead(status).end();
      });
    });
  });
  receiver = new WebhookReceiver(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return receiver;
}
