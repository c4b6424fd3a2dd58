// Outbound HTTPS to a URL a user names (DECISIONS "Outbound fetches share one rule"): webhook deliveries and client
// ID metadata documents. The SSRF defences of issue 15: the URL's host is resolved and every address checked at
// registration and again at each request, and the connection goes to exactly the address that was checked, so a DNS
// answer that changes between check and connect (rebinding) cannot reach an internal service. One timeout covers the
// whole request and the body is read up to a cap. What a refusal tells the URL's owner never carries the resolver's
// answer: only that the address is not public.
import { lookup as dnsLookup } from 'node:dns/promises';
import { readFileSync } from 'node:fs';
import { Agent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { StringDecoder } from 'node:string_decoder';
import { checkServerIdentity, createSecureContext, rootCertificates, type SecureContext } from 'node:tls';
import ipaddr from 'ipaddr.js';
import type { Config } from '../../contracts/index.ts';

export type ResolvedAddress = { address: string; family: 4 | 6 };

export interface OutboundOptions {
  /** Test mode only: allow 127.0.0.0/8 and ::1 (ASSAY_WEBHOOK_ALLOW_LOOPBACK=true). Off by default. */
  allowLoopback: boolean;
  /** Extra trusted CA certificates in PEM (ASSAY_WEBHOOK_CA_FILE), for a test receiver's self-signed certificate. */
  extraCa?: string;
  /** The whole attempt: resolution, connect, response headers and the capped body (5000 in production). */
  timeoutMs: number;
  /** Cap on the response body read; the rest is discarded and the socket destroyed. */
  responseBytesMax: number;
  /** Resolves a host name to all its addresses (default: dns.promises.lookup with all: true). */
  resolve?: (host: string) => Promise<ResolvedAddress[]>;
  /** Opens the connection (default: https.request); injectable so tests can record or forbid connections. */
  request?: typeof httpsRequest;
}

/** The configured rule (the test-mode loopback and CA settings, the timeout) with a body cap of the caller's. */
export function outboundOptionsOf(config: Config, responseBytesMax: number): OutboundOptions {
  return {
    allowLoopback: config.webhookAllowLoopback,
    ...(config.webhookCaFile === '' ? {} : { extraCa: readFileSync(config.webhookCaFile, 'utf8') }),
    timeoutMs: config.webhookTimeoutMs,
    responseBytesMax,
  };
}

type LoopbackOption = Pick<OutboundOptions, 'allowLoopback'>;

// Keep-alive agents, one per (checked address, port, TLS name): reusing a connection skips a TLS handshake per
// attempt, and a socket in an agent was opened to exactly the address that agent is for. Bounded: the oldest agent
// is closed when a new one would pass the cap.
const agentsMax = 256;
const agents = new Map<string, Agent>();
function agentFor(address: string, port: string, name: string): Agent {
  const key = `${address}|${port}|${name}`;
  let agent = agents.get(key);
  if (agent) {
    agents.delete(key);
  } else {
    // No cap on sockets here: many webhooks may share one host, and each is bounded by delivery's per-webhook cap.
    agent = new Agent({ keepAlive: true, keepAliveMsecs: 1000, maxFreeSockets: 16, timeout: 30_000 });
    if (agents.size >= agentsMax) {
      const [oldest, a] = agents.entries().next().value as [string, Agent];
      a.destroy();
      agents.delete(oldest);
    }
  }
  agents.set(key, agent);
  return agent;
}

// Parsing the system roots and the extra CA costs milliseconds of CPU: made once per CA file, not per attempt.
const contexts = new Map<string, SecureContext>();
function contextWithCa(extraCa: string): SecureContext {
  let c = contexts.get(extraCa);
  if (!c) {
    c = createSecureContext({ ca: [...rootCertificates, extraCa] });
    contexts.set(extraCa, c);
  }
  return c;
}

/** The outcome of one request. `ok` is a 2xx; `status` is null when no response arrived. */
export interface Attempt {
  ok: boolean;
  status: number | null;
  durationMs: number;
  error: string | null;
  /** The response body up to the cap (null when none arrived). */
  responseSnippet: string | null;
  /** The body was longer than the cap: `responseSnippet` is its beginning. */
  truncated: boolean;
  /** The response's headers (lower-case names; repeated ones joined with ", "); empty when none arrived. */
  responseHeaders: Record<string, string>;
}

const rangeWords: Record<string, string> = {
  unspecified: 'an unspecified address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT address (100.64.0.0/10)',
  private: 'a private address (RFC 1918)',
  reserved: 'a reserved or documentation address',
  benchmarking: 'a benchmarking address',
  uniqueLocal: 'a unique-local address (fc00::/7)',
  deprecatedSiteLocal: 'a site-local address',
  ipv4Mapped: 'an IPv4-mapped IPv6 address',
  rfc6145: 'an IPv4-translated IPv6 address',
  rfc6052: 'a NAT64 address',
  '6to4': 'a 6to4 address',
  teredo: 'a Teredo address',
};

// The instance metadata services of the big clouds; named so the owner understands why the address is refused.
const metadataAddresses = new Set(['169.254.169.254', 'fd00:ec2::254']);
const globalUnicast6 = ipaddr.parseCIDR('2000::/3');

/** The host of a URL as an address when it is an IP literal (WHATWG URLs bracket IPv6 hosts), else null. */
function ipLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
  return isIP(bare) === 0 ? null : bare;
}

/**
 * The refusals a URL's owner sees (at registration, and in the attempts of a delivery). They say that an address is
 * not public and nothing more: naming the address a host resolved to, or its range, or whether the name exists at
 * all, would let anyone who can register a URL read the service's own DNS, internal names included.
 */
export const addressNotPublic = "the URL's address is not public; webhooks are delivered only to public addresses";
export const hostNotPublic =
  "the URL's host resolves to an address that is not public, or to none; webhooks are delivered only to public addresses";

/**
 * What kind of refused address `address` is, in words (which name the address an IPv6 form carries); null when it
 * may be connected to. For the rule and its tests only: these words are never shown to a client.
 */
export function addressKind(address: string, o: LoopbackOption): string | null {
  if (isIP(address) === 0) return 'not an IP address';
  return refusedAs(ipaddr.parse(address), o);
}

/** What kind of refused address ip is, in words; null when it is allowed. */
function refusedAs(ip: ipaddr.IPv4 | ipaddr.IPv6, o: LoopbackOption): string | null {
  const range: string = ip.range();
  if (range === 'loopback' && o.allowLoopback) return null; // 127.0.0.0/8 and ::1 only: ipaddr's v6 loopback is /128
  if (range === 'unicast') {
    // ipaddr calls everything it has no name for unicast; IANA assigns IPv6 global unicast only from 2000::/3, which
    // also rules out the deprecated IPv4-compatible form ::a.b.c.d.
    if (ip.kind() === 'ipv4' || ip.match(globalUnicast6)) return null;
    return 'outside the IPv6 global unicast range 2000::/3';
  }
  let words = rangeWords[range] ?? `a special-purpose address (${range})`;
  if (metadataAddresses.has(ip.toString())) words += ', the cloud metadata service';
  // Forms that carry an IPv4 address are refused whatever they carry; the words name what it carried.
  const embedded = ip.kind() === 'ipv6' ? embeddedIPv4(ip as ipaddr.IPv6, range) : null;
  if (embedded !== null) {
    const inner = refusedAs(embedded, { allowLoopback: false });
    words += ` of ${embedded.toString()}` + (inner === null ? '' : `, which is ${inner}`);
  }
  return words;
}

/** The IPv4 address an IPv6 form carries where its position is fixed (mapped, translated, NAT64 /96, 6to4). */
function embeddedIPv4(ip: ipaddr.IPv6, range: string): ipaddr.IPv4 | null {
  const p = ip.parts;
  const v4 = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 255, lo >> 8, lo & 255]);
  if (range === 'ipv4Mapped' || range === 'rfc6145' || (range === 'rfc6052' && p[2] === 0)) return v4(p[6]!, p[7]!);
  if (range === '6to4') return v4(p[1]!, p[2]!);
  return null;
}

/** Why a URL is refused before any lookup, in words for the owner; null when it is allowed. */
export function urlProblem(url: string, o: LoopbackOption): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'the URL is not a valid absolute URL';
  }
  if (u.protocol !== 'https:') return `the URL must use https, not ${u.protocol.slice(0, -1)}`;
  if (u.username !== '' || u.password !== '') return 'the URL must not contain a user name or password';
  if (u.hostname === '') return 'the URL must name a host';
  if (u.port === '0') return 'the URL must not use port 0';
  const literal = ipLiteral(u.hostname);
  return literal === null || addressKind(literal, o) === null ? null : addressNotPublic;
}

async function lookupAll(host: string): Promise<ResolvedAddress[]> {
  const found = await dnsLookup(host, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

/** Resolves the URL's host and checks every address (one refused address refuses the URL); returns the one to use. */
export async function resolveTarget(
  url: string,
  o: OutboundOptions,
): Promise<({ ok: true } & ResolvedAddress) | { ok: false; problem: string }> {
  const problem = urlProblem(url, o);
  if (problem !== null) return { ok: false, problem };
  const host = new URL(url).hostname;
  const literal = ipLiteral(host);
  if (literal !== null) return { ok: true, address: literal, family: isIP(literal) === 6 ? 6 : 4 };
  let addresses: ResolvedAddress[];
  try {
    addresses = await (o.resolve ?? lookupAll)(host);
  } catch {
    // A name the resolver does not know gets the same words as one it resolves to an internal address: telling them
    // apart would say which internal names exist.
    return { ok: false, problem: hostNotPublic };
  }
  // Every address is checked, not only the one used: a name with one public and one internal address is refused
  // outright rather than depending on which answer comes first next time.
  if (addresses.length === 0 || addresses.some((a) => addressKind(a.address, o) !== null)) {
    return { ok: false, problem: hostNotPublic };
  }
  const first = addresses[0]!;
  return { ok: true, address: first.address, family: first.family };
}

/** One request: its method, the body (POST) and headers beside Host and Content-Length. */
export interface OutboundRequest {
  method: 'GET' | 'POST';
  body: string;
  headers: Record<string, string>;
}

/** POSTs a JSON body to url and reports the attempt; never throws (a webhook delivery). */
export function postJson(url: string, body: string, headers: Record<string, string>, o: OutboundOptions) {
  return outboundRequest(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } }, o);
}

/** GETs url and reports the answer; never throws (a client ID metadata document). */
export function getOutbound(url: string, headers: Record<string, string>, o: OutboundOptions) {
  return outboundRequest(url, { method: 'GET', body: '', headers }, o);
}

/**
 * Sends one request to url and reports the attempt; never throws. The connection goes to the address resolveTarget
 * checked (no second lookup), SNI and Host are the URL's host and the certificate is verified against it; redirects
 * are not followed (a 3xx fails), and the response body is read up to responseBytesMax.
 */
export async function outboundRequest(url: string, r: OutboundRequest, o: OutboundOptions): Promise<Attempt> {
  // A network wait is measured against the real monotonic clock: it is a measurement, not business time.
  const started = performance.now();
  const elapsedMs = () => Math.round(performance.now() - started);
  return new Promise<Attempt>((settle) => {
    let done = false;
    let cancel = () => {};
    const finish: Finish = (status, error, responseSnippet = null, more = noMore) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      cancel();
      const ok = error === null && status !== null && status >= 200 && status < 300;
      settle({ ok, status, durationMs: elapsedMs(), error, responseSnippet, ...more });
    };
    const timer = setTimeout(() => finish(null, 'timeout'), o.timeoutMs);
    resolveTarget(url, o).then(
      (target) => {
        if (done) return;
        if (!target.ok) return finish(null, target.problem);
        cancel = send(url, r, o, target, finish);
      },
      (e) => finish(null, String(e)), // resolveTarget catches its own failures; this is a backstop for "never throws"
    );
  });
}

type More = Pick<Attempt, 'truncated' | 'responseHeaders'>;
const noMore: More = { truncated: false, responseHeaders: {} };

type Finish = (status: number | null, error: string | null, responseSnippet?: string | null, more?: More) => void;

/** Opens the pinned request and reports through finish; returns the function that tears it down. */
function send(
  url: string,
  r: OutboundRequest,
  o: OutboundOptions,
  target: ResolvedAddress,
  finish: Finish,
): () => void {
  const u = new URL(url);
  const hostname = ipLiteral(u.hostname) ?? u.hostname;
  // Host is already an IP, so net.connect does not look it up; this lookup only makes sure that any path which did
  // would still get the checked address.
  const pinned: LookupFunction = (_name, options, callback) => {
    if (options.all) callback(null, [target]);
    else callback(null, target.address, target.family);
  };
  // Socket errors name the address connected to ("connect ECONNREFUSED 203.0.113.7:443"): the owner reads these
  // words, and the address is the resolver's answer, so it is left out.
  const withoutAddress = (message: string) => message.replaceAll(target.address, 'the address');
  let status: number | null = null;
  try {
    const req = (o.request ?? httpsRequest)({
      host: target.address,
      family: target.family,
      port: u.port === '' ? 443 : Number(u.port),
      path: u.pathname + u.search,
      method: r.method,
      lookup: pinned,
      servername: isIP(hostname) === 0 ? hostname : '', // SNI carries names only (RFC 6066 section 3)
      checkServerIdentity: (_host, cert) => checkServerIdentity(hostname, cert),
      // https.request hands TLS options on to tls.connect, which takes a ready context.
      ...(o.extraCa === undefined ? {} : ({ secureContext: contextWithCa(o.extraCa) } as object)),
      // A pooled connection is reused only by an attempt that checked the very same address, port and name.
      agent: o.request ? false : agentFor(target.address, u.port, hostname),
      headers: {
        ...r.headers,
        host: u.host,
        ...(r.method === 'POST' ? { 'content-length': String(Buffer.byteLength(r.body)) } : {}),
      },
    });
    req.on('error', (e) => finish(status, withoutAddress(e.message)));
    req.on('response', (res) => {
      status = res.statusCode ?? null;
      const responseHeaders: Record<string, string> = {};
      for (const [name, value] of Object.entries(res.headers)) {
        if (value !== undefined) responseHeaders[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      let truncated = false;
      const decoder = new StringDecoder('utf8'); // holds back a character cut by the cap instead of mangling it
      let snippet = '';
      let bytes = 0;
      const complete = () => {
        // The snippet is the receiver's text and will be stored: PostgreSQL text cannot hold NUL, so it is dropped.
        snippet = snippet.replaceAll('\u0000', '');
        const redirected = status !== null && status >= 300 && status < 400;
        finish(
          status,
          redirected ? `the receiver answered a redirect (${status}), which is not followed` : null,
          snippet,
          { truncated, responseHeaders },
        );
      };
      res.on('data', (chunk: Buffer) => {
        if (bytes >= o.responseBytesMax) return;
        const room = o.responseBytesMax - bytes;
        if (chunk.length > room) truncated = true;
        bytes += chunk.length;
        snippet += decoder.write(chunk.length > room ? chunk.subarray(0, room) : chunk);
        if (bytes >= o.responseBytesMax) {
          complete(); // the rest of the body is not wanted; finishing destroys the socket
        }
      });
      res.on('end', () => {
        snippet += decoder.end();
        complete();
      });
      res.on('error', (e) => finish(status, withoutAddress(e.message), snippet));
      res.on('close', () => {
        if (!res.complete) finish(status, 'the response ended before its body was complete', snippet);
      });
    });
    req.end(r.method === 'POST' ? r.body : undefined);
    return () => req.destroy();
  } catch (e) {
    // https.request throws synchronously on headers it cannot send (a newline in a value, for example).
    finish(null, withoutAddress((e as Error).message));
    return () => {};
  }
}
