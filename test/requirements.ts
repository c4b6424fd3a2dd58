// Requirements the suite verifies, by id. Test names cite ids in brackets ("[SPINE-AUTH] ..."); the
// requirements test fails when an id here is cited by no test, so nothing listed goes unverified.
export const requirements = {
  'SPINE-ORDER-SCOPE': 'Scope is checked before validation: a token without the scope and an invalid body gets 403.',
  'SPINE-VALIDATION': 'An invalid body, query or path gets 422 validation_failed and changes nothing.',
  'SPINE-IDEM-KEY': 'A mutating call without Idempotency-Key, or with one over 200 characters, gets 422.',
  'SPINE-IDEM-REPLAY': 'Same key and body replays the same status and body; the effect happens once.',
  'SPINE-IDEM-CONFLICT': 'Same key with another body gets 422 idempotency_conflict.',
  'SPINE-IDEM-RETENTION': 'An Idempotency-Key replays for the retention window and is forgotten after it.',
  'SPINE-INVARIANTS': 'A fact that breaks a money invariant (balance mismatch, non-positive credit) is refused.',
  'SPINE-IDEM-CONCURRENT': 'Concurrent requests with one key resolve to one execution and replays.',
  'SPINE-AUTH': 'No token, a tampered token or an expired token gets 401 unauthorized, remediation authenticate.',
  'SPINE-TYPED-ERRORS': 'Every agent route of the table answers the typed error object without a token.',
  'SPINE-TRANSPORT': 'Malformed JSON, a body over the limit, an unknown route and a wrong method get typed errors.',
  'SPINE-OPENAPI': '/openapi.json is valid OpenAPI 3.1 and lists every available operation of the table.',
  'SPINE-ERROR-REGISTRY': 'The error table, the OpenAPI document and the errors page agree: 15 codes, each anchored.',
  'SPINE-SANDBOX': 'POST /sandbox/agents returns an ES256 token, test credits and an active test mandate.',
  'SPINE-SANDBOX-RATE': 'Sandbox registration is rate-limited per client address with 429 rate_limited.',
  'SPINE-LEDGER': 'GET /v1/ledger is newest first, cursor-paginated with bounded limit and stable entry ids.',
  'SPINE-CONCURRENCY': '50 agents x 20 concurrent top-ups with replays: balances exact, projection equals stream.',
  'SPINE-SHARDING': 'Two actor hosts share shards; after kill -9 of one the other takes over; no 201 lost or doubled.',
  'SPINE-NATS-OUTAGE': 'With NATS stopped the gateway answers 503 unavailable promptly, and serves again after.',
  'SPINE-REBUILD': 'Dropping and rebuilding the ledger projection by replay gives identical rows.',
  'SPINE-STARTUP': 'With NATS or PostgreSQL unreachable, start exits at once naming the URL it tried.',
  'SPINE-SHUTDOWN': 'SIGTERM stops accepting, finishes in-flight requests and exits cleanly.',
  'SPINE-LAYERS': 'contracts imports nothing of ours; the gateway never imports actors or storage.',
  'SPINE-LEASES':
    'Shard leases: claimed by CAS, renewed, rebalanced when hosts join and leave, taken over when lapsed.',
  'SPINE-CONFIG-DOCS': "The README's configuration table is the one generated from the config schema.",
  'MCP-ENDPOINT':
    'POST /mcp (and POST /) serve initialize, tools/list and tools/call on the gateway itself; GET /mcp streams; DELETE ends.',
  'MCP-TOOLS':
    'tools/list is exactly the available table rows with a tool name; input schema = path + query + body (+ idempotency_key).',
  'MCP-TABLE': 'Bad tool rows fail the boot-time table check; a row that becomes available becomes a tool by itself.',
  'MCP-RESULTS':
    'Tool results carry structuredContent and a JSON text block; refusals are isError with the typed error.',
  'MCP-PARITY':
    'The same cases through REST and MCP give the same status/code and body, validation and conflicts included.',
  'MCP-IDEM-SHARED': 'A key used over REST replays over MCP and the other way round; the effect happens once.',
  'MCP-AUTH': 'No or a bad token: 401 typed error with WWW-Authenticate resource_metadata; no usable scope: 403.',
  'MCP-RESOURCE-METADATA': '/.well-known/oauth-protected-resource is RFC 9728 metadata naming the base URL.',
  'MCP-ORIGIN':
    'A foreign Origin gets 403 with the typed error; the base URL origin, listed origins and no Origin pass.',
  'MCP-SESSIONS':
    "Without Mcp-Session-Id 400; an ended, unknown or other principal's session 404; a foreign MCP-Protocol-Version 400.",
  'MCP-SESSION-EXPIRY': 'A session idle for ASSAY_MCP_SESSION_IDLE_SECONDS ends (404); requests keep it alive.',
  'MCP-LIMITS': 'Sessions per principal (429), open event streams per gateway (503) and body size (413) are bounded.',
  'MCP-SCALE-OUT': 'A session opened through one gateway process serves calls through another, and ends everywhere.',
  'MCP-VERSIONS': 'Clients of the 2025-06-18 revision and of the newest revision the SDK knows are both served.',
  'MCP-INSPECTOR': 'The MCP Inspector CLI lists the tools and calls one, headless.',
  'MCP-OUTAGE': 'With NATS down the endpoint answers 503 unavailable (typed); sessions survive and serve again after.',
} as const;

export type RequirementId = keyof typeof requirements;
