// A loopback OpenAI-compatible endpoint for the model judge's tests: `POST /v1/chat/completions` answered in the
// real wire format (id, object, created, model, choices[0].message, choices[0].logprobs.content[] with token,
// logprob, bytes and top_logprobs, usage), so the driver is tested through the real `openai` client, not a mock of
// it. Scriptable per test: the verdict policy, answers without log-probabilities, 429 with Retry-After, 5xx, a stall
// past the client's timeout, content that is not the JSON asked for, a body that is not JSON, a dropped connection,
// latency; it counts requests and the most it had in flight. It listens on 127.0.0.1 only.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Verdict = 'supported' | 'unsupported' | 'contradicted';

/** What the endpoint does with one request. */
export type Behaviour =
  /** Answer with the policy's verdict (or the one given), as JSON, with log-probabilities unless turned off. */
  | { kind: 'answer'; verdict?: Verdict; logprobs?: boolean }
  /** Answer 200 with this content, tokenised by characters groups, with log-probabilities. */
  | { kind: 'content'; content: string }
  /** An HTTP error with a JSON error body, e.g. 429 with { 'retry-after': '3' }. */
  | { kind: 'status'; status: number; headers?: Record<string, string> }
  /** Never answer; the connection stays open until the client gives up. */
  | { kind: 'stall' }
  /** 200 with an HTML page (a proxy's error page). */
  | { kind: 'non-json' }
  /** 200 with `application/json` but a cut-off body. */
  | { kind: 'broken-json' }
  /** Close the connection without an answer. */
  | { kind: 'drop' };

/** The probability of each verdict's first token at the verdict position; need not sum to 1. */
export type VerdictOdds = Record<Verdict, number>;

export interface PolicyAnswer {
  verdict: Verdict;
  odds?: VerdictOdds;
}

export type Policy = (prompt: string) => PolicyAnswer;

export interface OpenAIServerOptions {
  /** The model id every answer names; deliberately not the alias the client asks for. */
  answeredModel?: string;
  /** Added before every answer. */
  latencyMs?: number;
  /** Whether answers carry log-probabilities (when the request asks for them). */
  logprobs?: boolean;
  policy?: Policy;
}

export const answeredModelDefault = 'assay-test-judge-2026-11-01';

/**
 * Reads markers in the prompt (claim and passage together; `status:<code>` is read before it, see markerBehaviour): `verdict:supported|unsupported|contradicted` forces a
 * verdict; a claim with `needs:<word>` is supported when the prompt also holds `has:<word>` (the passage, or the chunk
 * of it, carries the evidence) and unsupported otherwise; `p:<0..1>` sets the probability of the verdict given
 * (the rest is split 2:1 between the two others, the larger share to `unsupported` unless it is the verdict);
 * `odds:<s>,<u>,<c>` sets all three. No marker: supported with 0.9.
 */
export const markerPolicy: Policy = (prompt) => {
  let verdict: Verdict = 'supported';
  const forced = /verdict:(supported|unsupported|contradicted)\b/.exec(prompt);
  const needs = /needs:([A-Za-z0-9_-]+)/.exec(prompt);
  if (forced) verdict = forced[1] as Verdict;
  else if (needs) verdict = prompt.includes(`has:${needs[1]}`) ? 'supported' : 'unsupported';
  const explicit = /\bodds:([\d.]+),([\d.]+),([\d.]+)/.exec(prompt);
  if (explicit) {
    const [s, u, c] = explicit.slice(1).map(Number) as [number, number, number];
    return { verdict, odds: { supported: s, unsupported: u, contradicted: c } };
  }
  const p = Number(/\bp:(0(?:\.\d+)?|1(?:\.0+)?)\b/.exec(prompt)?.[1] ?? 0.9);
  const others = (['unsupported', 'contradicted', 'supported'] as const).filter((v) => v !== verdict);
  const odds = { [verdict]: p, [others[0]!]: ((1 - p) * 2) / 3, [others[1]!]: (1 - p) / 3 } as VerdictOdds;
  return { verdict, odds };
};

/** `status:<code>` in the prompt: every request for that claim gets that HTTP status. */
function markerBehaviour(prompt: string): Behaviour | null {
  const status = /\bstatus:(\d{3})\b/.exec(prompt);
  return status ? { kind: 'status', status: Number(status[1]) } : null;
}

/** How the test tokenizer splits each verdict word: first token, then the rest. */
const verdictTokens: Record<Verdict, [string, string]> = {
  supported: ['support', 'ed'],
  unsupported: ['un', 'supported'],
  contradicted: ['contr', 'adicted'],
};

/** Probability the test tokenizer gives a token that is no verdict ("yes") at the verdict position. */
const junkShare = 0.02;

export interface RecordedRequest {
  model: string;
  prompt: string;
  body: Record<string, unknown>;
}

export class OpenAIServer {
  /** The model id answers name; a test may change it to play an alias that moved to new weights. */
  answeredModel: string;
  latencyMs: number;
  logprobs: boolean;
  policy: Policy;
  /** Every request received, in order of arrival. */
  readonly received: RecordedRequest[] = [];
  inFlight = 0;
  maxInFlight = 0;
  /** Behaviours for the next requests, one each, before the default answer. */
  readonly #queue: Behaviour[] = [];
  /** When set, every request behaves so (after the queue is used up). */
  always: Behaviour | null = null;
  readonly #server: Server;
  #nextId = 0;

  constructor(server: Server, options: OpenAIServerOptions) {
    this.#server = server;
    this.answeredModel = options.answeredModel ?? answeredModelDefault;
    this.latencyMs = options.latencyMs ?? 0;
    this.logprobs = options.logprobs ?? true;
    this.policy = options.policy ?? markerPolicy;
  }

  /** The base URL to give the client: http://127.0.0.1:<port>/v1. */
  get url(): string {
    const { port } = this.#server.address() as AddressInfo;
    return `http://127.0.0.1:${port}/v1`;
  }

  get requests(): number {
    return this.received.length;
  }

  /** Queue behaviours for the next requests, in order. */
  script(...behaviours: Behaviour[]): void {
    this.#queue.push(...behaviours);
  }

  resetCounts(): void {
    this.received.length = 0;
    this.maxInFlight = this.inFlight;
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || req.url !== '/v1/chat/completions') {
      sendJson(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error' } });
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      sendJson(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request_error' } });
      return;
    }
    const messages = (body.messages ?? []) as { role: string; content: string }[];
    const prompt = messages.map((m) => m.content).join('\n');
    this.received.push({ model: String(body.model), prompt, body });
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    res.on('close', () => this.inFlight--);
    const behaviour = this.#queue.shift() ?? this.always ?? markerBehaviour(prompt) ?? { kind: 'answer' };
    if (behaviour.kind === 'stall') return; // the client's timeout (or close()) ends it
    if (this.latencyMs > 0) await new Promise((r) => setTimeout(r, this.latencyMs));
    if (res.destroyed) return;
    switch (behaviour.kind) {
      case 'status':
        sendJson(
          res,
          behaviour.status,
          { error: { message: `scripted ${behaviour.status}`, type: 'server_error', code: null } },
          behaviour.headers,
        );
        return;
      case 'non-json':
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>502 Bad Gateway</body></html>');
        return;
      case 'broken-json':
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"id":"chatcmpl-1","object":"chat.comp');
        return;
      case 'drop':
        res.socket?.destroy();
        return;
      case 'content':
        sendJson(res, 200, this.#completion(prompt, body, behaviour.content, charTokens(behaviour.content), 'plain'));
        return;
      case 'answer': {
        const decided = this.policy(prompt);
        const verdict = behaviour.verdict ?? decided.verdict;
        const odds = decided.odds ?? { supported: 0, unsupported: 0, contradicted: 0, [verdict]: 1 };
        const withLogprobs = (behaviour.logprobs ?? this.logprobs) && body.logprobs === true;
        const [first, rest] = verdictTokens[verdict];
        const tokens = ['{"', 'verdict', '":"', first, rest, '"}'];
        sendJson(
          res,
          200,
          this.#completion(prompt, body, tokens.join(''), tokens, withLogprobs ? { at: 3, odds } : null),
        );
        return;
      }
    }
  }

  #completion(
    prompt: string,
    body: Record<string, unknown>,
    content: string,
    tokens: string[],
    /** Where the verdict alternatives go; 'plain' for log-probabilities without them; null for none. */
    logprobs: { at: number; odds: VerdictOdds } | 'plain' | null,
  ): unknown {
    const top = Math.min(20, Math.max(0, Number(body.top_logprobs ?? 0)));
    const entry = (token: string, logprob: number) => ({ token, logprob, bytes: [...Buffer.from(token, 'utf8')] });
    const logprobContent = tokens.map((token, i) => {
      if (logprobs !== null && logprobs !== 'plain' && i === logprobs.at) {
        const alternatives = (Object.keys(verdictTokens) as Verdict[])
          .map((v) => entry(verdictTokens[v][0], Math.log(Math.max(1e-9, logprobs.odds[v] * (1 - junkShare)))))
          .concat(entry('yes', Math.log(junkShare)))
          .sort((a, b) => b.logprob - a.logprob);
        const chosen = alternatives.find((a) => a.token === token) ?? entry(token, Math.log(0.5));
        return { ...chosen, top_logprobs: alternatives.slice(0, top) };
      }
      const sure = entry(token, -0.0001);
      return { ...sure, top_logprobs: [sure].slice(0, top) };
    });
    this.#nextId++;
    return {
      id: `chatcmpl-test${this.#nextId}`,
      object: 'chat.completion',
      created: 1_795_000_000,
      model: this.answeredModel,
      system_fingerprint: 'fp_assay_test',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content, refusal: null, annotations: [] },
          logprobs: logprobs === null || body.logprobs !== true ? null : { content: logprobContent, refusal: null },
          finish_reason: 'stop',
        },
      ],
      // Prompt tokens are estimated at 4 characters per token, as for English text with a BPE tokenizer.
      usage: {
        prompt_tokens: Math.ceil(prompt.length / 4),
        completion_tokens: tokens.length,
        total_tokens: Math.ceil(prompt.length / 4) + tokens.length,
      },
    };
  }
}

/** Splits text into tokens of up to four characters, as a stand-in tokenizer for scripted content. */
function charTokens(text: string): string[] {
  return text.match(/[\s\S]{1,4}/g) ?? [];
}

function sendJson(res: ServerResponse, status: number, value: unknown, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

export async function startOpenAIServer(options: OpenAIServerOptions = {}): Promise<OpenAIServer> {
  let api: OpenAIServer | null = null;
  const server = createServer((req, res) => {
    api!.handle(req, res).catch((err: Error) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: err.message, type: 'server_error' } });
    });
  });
  api = new OpenAIServer(server, options);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  return api;
}
