// Requirements the suite verifies, by id, each with where it comes from: a section of the product's interface spec
// (`spec: <section>`) or of this repository's design docs (`docs/<file>.md: <heading>`). Test names cite ids in
// brackets ("[SPINE-AUTH] ..."); the requirements test fails when an id here is cited by no test, when a test cites
// an id not listed, or when a source names a doc heading that does not exist.
export const requirements = {
  'SPINE-ORDER-SCOPE': {
    source: 'spec: What the service does (6)',
    behaviour: 'Scope is checked before validation: a token without the scope and an invalid body gets 403.',
  },
  'SPINE-VALIDATION': {
    source: 'spec: What the service does (6)',
    behaviour: 'An invalid body, query or path gets 422 validation_failed and changes nothing.',
  },
  'SPINE-IDEM-KEY': {
    source: 'spec: Endpoints',
    behaviour: 'A mutating call without Idempotency-Key, or with one over 200 characters, gets 422.',
  },
  'SPINE-IDEM-REPLAY': {
    source: 'spec: Endpoints',
    behaviour: 'Same key and body replays the same status and body; the effect happens once.',
  },
  'SPINE-IDEM-CONFLICT': {
    source: 'spec: Endpoints',
    behaviour: 'Same key with another body gets 422 idempotency_conflict.',
  },
  'SPINE-IDEM-RETENTION': {
    source: 'docs/architecture.md: Idempotency',
    behaviour: 'An Idempotency-Key replays for the retention window and is forgotten after it.',
  },
  'SPINE-IDEM-INDEX': {
    source: 'docs/architecture.md: Idempotency',
    behaviour:
      'Past the keys an actor keeps in memory, old keys replay or conflict from the index, and a miss the index cannot vouch for is refused as retryable.',
  },
  'BUY-IDEM-COLD': {
    source: 'docs/architecture.md: Idempotency',
    behaviour:
      'With a principal past its in-memory keys, an old purchase key replays its order through PostgreSQL, a changed body conflicts, and a new key buys once.',
  },
  'SPINE-INVARIANTS': {
    source: 'docs/money.md: Money rules',
    behaviour: 'A fact that breaks a money invariant (balance mismatch, non-positive credit) is refused.',
  },
  'SPINE-SETTLED-AT-PURCHASE': {
    source: 'docs/purchases.md: Settlement',
    behaviour:
      'A held fact that carries its settlement folds the hold and the settlement; a wrong balance after either is refused.',
  },
  'SPINE-STATE-SHARED-EMPTY': {
    source: "docs/purchases.md: Throughput, and where a purchase's time goes",
    behaviour:
      "A principal's state starts on shared empty maps; its first write makes its own, and no write reaches another principal.",
  },
  'SPINE-CHECK-BEFORE-APPEND': {
    source: 'docs/money.md: Money rules',
    behaviour:
      'A decided fact that would break an invariant is refused before it is appended: nothing reaches the stream and the actor keeps serving.',
  },
  'SPINE-PROJECTION-PARK': {
    source: 'docs/operations.md: Parked facts',
    behaviour:
      'Text a store cannot hold is projected made storable; a fact the projection cannot write is parked with its error and alerted, and the facts after it are projected.',
  },
  'SPINE-PROJECTION-ONE-PASS': {
    source: 'docs/architecture.md: Storage',
    behaviour:
      'Projections of one stream share one consumer and one transaction per batch; a fact one of them refuses is parked for it alone, and one reset by a rebuild catches up while the others go on, then rejoins the shared pass.',
  },
  'SPINE-IN-PROCESS': {
    source: 'docs/architecture.md: Where we deviated from the design',
    behaviour:
      "In one process, a request for an actor whose shard this process serves is answered without crossing nats-server, with the bus's answer; one for another host's shard goes over NATS.",
  },
  'SPINE-NO-LISTENER-LEAK': {
    source: 'docs/architecture.md: Services and background jobs (workers role)',
    behaviour: 'Long-running jobs leave no listener behind on their stop signal; any process warning fails the suite.',
  },
  'SPINE-HANDLERS': {
    source: 'docs/architecture.md: One operation table',
    behaviour:
      'Every available operation has a handler where it is dispatched and no handler serves another; a broken registry refuses to start.',
  },
  'SPINE-NATS-PATCHES': {
    source: 'docs/architecture.md: Performance notes',
    behaviour:
      'The nats.js version the speed patches were written for is pinned, both patches are in place, and NATS failures are classified by error class and code.',
  },
  'SPINE-BAD-INPUT': {
    source: 'spec: Errors',
    behaviour:
      'Numbers beyond any price, trust subjects that are not UUIDs and cursors a list did not hand out are 422, never 503.',
  },
  'BUY-REPORT-WAIT': {
    source: 'spec: States and transitions (Order)',
    behaviour:
      'An order whose report does not arrive within the wait bound is refunded, with the reason on the order, its event and its bundle, and no trust sample.',
  },
  'BUY-SETTLE-LATE': {
    source: 'spec: States and transitions (Order)',
    behaviour:
      'An order bought before its edition has a report stays held, and the sweeper settles it once the report lands.',
  },
  'SPINE-IDEM-CONCURRENT': {
    source: 'spec: Endpoints',
    behaviour: 'Concurrent requests with one key resolve to one execution and replays.',
  },
  'SPINE-AUTH': {
    source: 'spec: Authentication (5)',
    behaviour: 'No token, a tampered token or an expired token gets 401 unauthorized, remediation authenticate.',
  },
  'SPINE-TYPED-ERRORS': {
    source: 'spec: Errors',
    behaviour: 'Every agent route of the table answers the typed error object without a token.',
  },
  'SPINE-TRANSPORT': {
    source: 'spec: Endpoints',
    behaviour: 'Malformed JSON, a body over the limit, an unknown route and a wrong method get typed errors.',
  },
  'SPINE-OPENAPI': {
    source: 'spec: What the service does (11)',
    behaviour: '/openapi.json is valid OpenAPI 3.1 and lists every available operation of the table.',
  },
  'SPINE-ERROR-REGISTRY': {
    source: 'spec: Errors',
    behaviour:
      "The error table, the OpenAPI document and the errors page agree: the spec's 15 codes plus order_refunded, each anchored.",
  },
  'SPINE-SANDBOX': {
    source: 'spec: Other routes on {base_url}',
    behaviour: 'POST /sandbox/agents returns an ES256 token, test credits and an active test mandate.',
  },
  'SPINE-SANDBOX-RATE': {
    source: 'spec: Errors',
    behaviour: 'Sandbox registration is rate-limited per client address with 429 rate_limited.',
  },
  'SPINE-LEDGER': {
    source: 'spec: GET /v1/ledger and GET /v1/payouts',
    behaviour: 'GET /v1/ledger is newest first, cursor-paginated with bounded limit and stable entry ids.',
  },
  'SPINE-CONCURRENCY': {
    source: 'docs/money.md: Money rules',
    behaviour: '50 agents x 20 concurrent top-ups with replays: balances exact, projection equals stream.',
  },
  'SPINE-SHARDING': {
    source: 'docs/architecture.md: Actors',
    behaviour: 'Two actor hosts share shards; after kill -9 of one the other takes over; no 201 lost or doubled.',
  },
  'SPINE-NATS-OUTAGE': {
    source: 'spec: Errors',
    behaviour: 'With NATS stopped the gateway answers 503 unavailable promptly, and serves again after.',
  },
  'SPINE-REBUILD': {
    source: 'docs/operations.md: Rebuilding projections',
    behaviour: 'Dropping and rebuilding the ledger projection by replay gives identical rows.',
  },
  'SPINE-MIGRATE-LEDGER': {
    source: 'docs/purchases.md: The ledger of a purchase',
    behaviour:
      'Migration 010 moves the ledger entries of purchases into their order rows and the ledger and its pages read back the same entries.',
  },
  'SPINE-STARTUP': {
    source: 'docs/architecture.md: Storage',
    behaviour: 'With NATS or PostgreSQL unreachable, start exits at once naming the URL it tried.',
  },
  'SPINE-SHUTDOWN': {
    source: 'docs/operations.md: Graceful stop',
    behaviour: 'SIGTERM stops accepting, finishes in-flight requests and exits cleanly.',
  },
  'SPINE-LAYERS': {
    source: 'docs/architecture.md: Layers',
    behaviour: 'contracts imports nothing of ours; the gateway never imports actors or storage.',
  },
  'SPINE-TELEMETRY-ON-START': {
    source: 'docs/operations.md: Metrics',
    behaviour:
      'contracts loads neither prom-client nor the OpenTelemetry SDK; the registry loads when roles start, the SDK only with an OTLP endpoint.',
  },
  'SPINE-ONE-DOOR': {
    source: 'docs/architecture.md: The front door',
    behaviour:
      "Every face's routes (operations and MCP, web routes, the context-file API on both bases, the OKF export, device sync) are rows of one shape, each with its authentication, schemas for params, query, body and answers, compiled into one router per listener; no request reaches a face by its path before that router.",
  },
  'SPINE-DOOR-DIALECTS': {
    source: 'docs/architecture.md: The front door',
    behaviour:
      "A path or method no row serves, and a request the HTTP layer refuses, are answered in the dialect of the path space they fall in: the typed error object on the agent API, RFC 6749 under /oauth, HTML on the pages, {error, message} on the context-file API (after authentication), device sync's codes.",
  },
  'SPINE-NO-CYCLES': {
    source: 'docs/architecture.md: Layers',
    behaviour: 'No two modules of the source tree import each other, directly or through others (type imports count).',
  },
  'SPINE-CANONICAL': {
    source: 'docs/verification.md: Reports',
    behaviour:
      'Request hashes and signed documents use RFC 8785 canonical JSON; non-JSON values are refused loudly, naming their path.',
  },
  'SPINE-LEASES': {
    source: 'docs/architecture.md: Actors',
    behaviour:
      "Shard leases: claimed by CAS, kept by their holder's heartbeat, rebalanced when hosts join and leave, taken over when lapsed.",
  },
  'SPINE-LEASES-HEARTBEAT': {
    source: 'docs/architecture.md: Actors',
    behaviour:
      "Leases live on their holder's heartbeat: not rewritten while held; a holder whose heartbeat fails stops serving before a takeover; a quiet watch takes over nothing; a lease written by another is given up.",
  },
  'SPINE-LEASES-ORPHAN': {
    source: 'docs/architecture.md: Actors',
    behaviour:
      'A lease that names its host but is not served by it (a lost deletion, a share that shrank) is deleted by that host once it holds its fair share, so another host claims it.',
  },
  'SPINE-LEASES-WATCH': {
    source: 'docs/architecture.md: Actors',
    behaviour:
      'The lease pools of one process share one watch of the lease bucket; a pool that joins late is first given the newest entry of each key.',
  },
  'SPINE-CONFIG-DOCS': {
    source: 'docs/architecture.md: One operation table',
    behaviour: "The README's configuration table is the one generated from the config schema.",
  },
  'SPINE-HTTP-HEAD': {
    source: 'docs/operations.md: HEAD',
    behaviour:
      'HEAD on any route answers the status and headers of its GET (same checks and refusals) without content; answers without content (HEAD, 304) leave the connection serving the next request.',
  },
  'SPINE-HTTP-METHODS': {
    source: 'docs/operations.md: Methods',
    behaviour:
      'OPTIONS, TRACE, CONNECT and other unserved methods get the typed 404 (with Allow on a known path); a method the HTTP parser does not know closes the connection at once and the server keeps serving.',
  },
  'SPINE-HTTP-LIMITS': {
    source: 'docs/operations.md: What uWS never hands over',
    behaviour:
      'The limits of the HTTP layer hold as documented: 48 header lines are served and more get no answer, without disturbing other connections.',
  },
  'SPINE-HTTP-ROUTER': {
    source: "docs/architecture.md: The gateway's HTTP layer",
    behaviour:
      'The router matches exact and parameterised paths (trailing slash ignored), maps HEAD to GET, lists Allow for a wrong method, and percent-decodes parameters, flagging malformed ones.',
  },
  'SPINE-HTTP-ADMISSION': {
    source: 'docs/operations.md: Limits',
    behaviour:
      'An abandoned upload gives its in-flight slot back: after more abandoned uploads than ASSAY_INFLIGHT_MAX normal calls succeed, and a graceful stop is not held up by them.',
  },
  'SPINE-HTTP-BODY-TIMEOUT': {
    source: 'docs/operations.md: Limits',
    behaviour:
      'A body that does not arrive within ASSAY_BODY_READ_TIMEOUT_MS gets 400 validation_failed at about that time, the connection is closed, nothing changes, and its slot comes back.',
  },
  'SPINE-TEXT': {
    source: 'spec: Errors',
    behaviour:
      'NUL or a lone surrogate in any string (body values and property names, query, path, Idempotency-Key, MCP arguments, sandbox registration) gets 422 validation_failed naming where, and changes nothing.',
  },
  'SPINE-DEPTH': {
    source: 'spec: Errors',
    behaviour:
      'A request value nested deeper than 32 levels (REST or MCP) gets 422 validation_failed before schema validation, and changes nothing.',
  },
  'SPINE-NO-INTERNALS': {
    source: 'spec: Resources and their fields (Error object)',
    behaviour:
      'A 503 unavailable carries a stable message; what the NATS library said and the subject go to the log with the request id.',
  },
  'SPINE-HEALTH': {
    source: 'spec: Other routes on {base_url}',
    behaviour:
      '/healthz shows the live alerts of the health bucket: degraded while one is raised, ok again when it is deleted, always HTTP 200.',
  },
  'CAT-REPORT-OFFLINE': {
    source: 'spec: Authentication (6)',
    behaviour: 'A report verifies offline (node:crypto alone), digest = sha256(RFC 8785); any change fails it.',
  },
  'CAT-KEY-ROTATION': {
    source: 'spec: Authentication (6)',
    behaviour: 'After a report key rotation, reports signed by the old and the new key both verify.',
  },
  'CAT-REPORT-ROUTE': {
    source: 'spec: GET /v1/reports/{digest}',
    behaviour: 'GET /v1/reports/{digest}: malformed digest 422, unknown 404.',
  },
  'CAT-VERIFY-CLI': {
    source: 'spec: Routes on {web_url}',
    behaviour: '`assay verify-report` checks a report with only the public keys and says what failed.',
  },
  'CAT-SEARCH-FILTERS': {
    source: 'spec: GET /v1/search',
    behaviour: 'Search filters floor, max_price, topic and type select exactly the matching corpus artifacts.',
  },
  'CAT-SEARCH-OFFERS': {
    source: 'spec: GET /v1/search',
    behaviour:
      'Every search item carries inline trust and one offer per live listing, with its price_cents, billing and formats.',
  },
  'CAT-SEARCH-OFFER-TERMS': {
    source: 'spec: GET /v1/search',
    behaviour:
      "A search offer's price_cents, billing and formats are its offer document's, and a reprice reaches search without another call.",
  },
  'CAT-SEARCH-CURSOR': {
    source: 'spec: GET /v1/search',
    behaviour: 'A cursor walk visits every match exactly once while artifacts are added.',
  },
  'CAT-SEARCH-DEADLINE': {
    source: 'docs/search.md: One million again, with the fix',
    behaviour:
      'A search statement still running when the gateway stops waiting (the request timeout) is cancelled in PostgreSQL, and the pool serves on.',
  },
  'CAT-SEARCH-RANK': {
    source: 'docs/search.md: Ranking rules',
    behaviour:
      'Topic results follow the ranking rules: phrase in the heading before scattered words, then report and trust; REST and MCP agree.',
  },
  'CAT-SEARCH-TYPOS': {
    source: 'docs/search.md: Typo tolerance',
    behaviour: 'A query word within its typo allowance of a catalog word matches it, below every exact match.',
  },
  'CAT-SANDBOX-LINE': {
    source: 'spec: Authentication (3)',
    behaviour: 'Sandbox tokens see only sandbox artifacts, reports and offers; live tokens never see them.',
  },
  'CAT-OFFER-ETAG': {
    source: 'spec: Routes on {web_url}',
    behaviour: 'Offers carry a strong ETag; a matching If-None-Match gives 304.',
  },
  'CAT-OFFER-SCHEMA': {
    source: 'spec: Resources and their fields (Other records)',
    behaviour: 'Served offers validate against /schemas/offer-v1.json with an independent validator.',
  },
  'CAT-TRUST': {
    source: 'spec: GET /v1/trust/{subject}',
    behaviour: 'Trust matches hand-computed values: no samples, all pass, old and new samples mixed.',
  },
  'CAT-SELLER-OPS': {
    source: 'docs/verification.md: The artifact format',
    behaviour: 'Sellers publish artifacts and editions and create, reprice and unlist listings, idempotently.',
  },
  'CAT-VALIDATION': {
    source: 'spec: Errors',
    behaviour: 'Bad input on every catalog route gets a typed error and changes nothing.',
  },
  'CAT-ERRATA': {
    source: 'spec: GET /v1/errata',
    behaviour: 'Errata list by artifact and by purchases; the operator opens and closes them.',
  },
  'CAT-JUDGE': {
    source: 'docs/verification.md: The judge',
    behaviour: 'The judge is deterministic and versioned; numbers and negations contradict.',
  },
  'JUDGE-2-NUMBERS': {
    source: 'docs/verification.md: Built-in judge 2.0.0',
    behaviour:
      'Numbers compare by value and unit (two = 2, 2 minutes = 120 seconds, 512 KB = 524288 bytes, twenty percent = 20%); another amount or unit of the same dimension contradicts; a number the passage lacks caps.',
  },
  'JUDGE-2-NEGATION': {
    source: 'docs/verification.md: Built-in judge 2.0.0',
    behaviour: 'A negation counts in the clause the claim matches, not anywhere in the sentence.',
  },
  'JUDGE-2-QUANTIFIERS': {
    source: 'docs/verification.md: Built-in judge 2.0.0',
    behaviour:
      'A claim widening a quantifier (some -> all) is not verified; narrowing a universal (every -> some), or several against one, contradicts.',
  },
  'JUDGE-2-COMPARISONS': {
    source: 'docs/verification.md: Built-in judge 2.0.0',
    behaviour:
      'A reversed comparison (more/less, slower/faster) or swapped roles around the relation contradict; a passive keeps its roles.',
  },
  'JUDGE-2-ANTONYMS': {
    source: 'docs/verification.md: Built-in judge 2.0.0',
    behaviour: 'A WordNet antonym of the passage word (mutable/immutable, manually/automatically) contradicts.',
  },
  'JUDGE-2-PARAPHRASE': {
    source: 'docs/verification.md: Built-in judge 2.0.0',
    behaviour: 'A faithful paraphrase (WordNet synonyms, lemmas, derived forms, the passive) is verified.',
  },
  'JUDGE-2-UNSTATED': {
    source: 'docs/verification.md: Built-in judge 2.0.0',
    behaviour: 'A claim adding a name, a number or a qualifier the passage does not give is not verified.',
  },
  'JUDGE-REPRODUCIBLE': {
    source: 'docs/verification.md: The judge',
    behaviour: 'Versions 1.0.0, 1.1.0 and 1.2.0 judge exactly as before 2.0.0, with the same rules hashes.',
  },
  'JUDGE-DETERMINISTIC': {
    source: 'docs/verification.md: The judge',
    behaviour: 'The same claim and passage give the same judgement, in this process and in a fresh one.',
  },
  'JUDGE-PORT': {
    source: 'docs/verification.md: The judge',
    behaviour:
      'The built-in judge implements the judge port (driver builtin, all four versions, entailments from rules, no usage); ASSAY_JUDGE=openai says the driver is not built yet.',
  },
  'JUDGE-EVAL-CLI': {
    source: 'docs/verification.md: Evaluating a judge',
    behaviour:
      'assay judge eval judges a JSON-lines file with no service running, prints a line per claim and a summary (balanced accuracy, sensitivity, specificity, by kind); a bad line exits 2 naming its number.',
  },
  'JUDGE-ACCURACY': {
    source: 'docs/verification.md: Measured accuracy',
    behaviour:
      'On the shipped labelled set the built-in judge 2.0.0 keeps 70% balanced accuracy and 85% specificity, and 3.0.0 95% specificity.',
  },
  'JUDGE-3-EVIDENCE': {
    source: 'docs/verification.md: Built-in judge 3.0.0',
    behaviour:
      'Judge 3.0.0 verifies a claim only on positive evidence: a content word the passage lacks, a claim clause no passage clause states, or a subject or object the passage states of something else caps it below verified.',
  },
  'JUDGE-3-IRREGULAR': {
    source: 'docs/verification.md: Built-in judge 3.0.0',
    behaviour:
      "Judge 3.0.0 reduces irregular forms through WordNet's exception lists (held: hold); 2.0.0 keeps judging as released.",
  },
  'JUDGE-REFERENCE': {
    source: 'docs/verification.md: Judge quality',
    behaviour:
      "The reference set (150 cases or more, six domains never tuned on, its sha256 checked) gives the built-in judge 3.0.0 at least 90% specificity and 65% balanced accuracy through assay judge eval, computed by the test from the per-case lines and the file's labels; the summary line and every published figure agree with that computation.",
  },
  'JUDGE-QUALITY-REPORT': {
    source: 'docs/verification.md: Judge quality',
    behaviour:
      "A report (pipeline assay-verify/1.1.0) signs its judge version's measured quality on the reference set, served by GET /v1/reports/{digest}; changing the figures breaks the signature.",
  },
  'JUDGE-QUALITY-SEARCH': {
    source: 'docs/verification.md: Judge quality',
    behaviour:
      "A search item's trust names the judge of the current report and its measured quality, over REST and MCP.",
  },
  'JUDGE-QUALITY-MANDATE': {
    source: 'docs/purchases.md: Mandates',
    behaviour:
      "A mandate's min_judge_specificity refuses, with judge_version_rejected in the error table's order and changing nothing, an edition whose judge measured less (or has no published figures), over REST and MCP.",
  },
  'JUDGE-ERROR-WAITS': {
    source: 'docs/verification.md: The pipeline',
    behaviour:
      'A claim the judge gives no verdict for (judge_error) leaves the edition pending and its orders held until the judge answers, instead of a report that counts it as 0.',
  },
  'JUDGE-ONNX-LOAD': {
    source: 'docs/verification.md: A local model judge',
    behaviour:
      'ASSAY_JUDGE=onnx loads a cross-encoder and its tokenizer from ASSAY_JUDGE_MODEL_DIR (flat or Hugging Face layout) with onnxruntime-node, names the model by its weights, and answers each claim verified, contradicted or unsupported from its classes.',
  },
  'JUDGE-ONNX-CHUNKS': {
    source: 'docs/verification.md: A local model judge',
    behaviour:
      'The local model judge chunks long passages as the model judge does, runs the pairs in batches of ASSAY_JUDGE_BATCH with the same judgements at any batch size, shortens a chunk to fit the model, and leaves the edition waiting for a claim too long to judge.',
  },
  'JUDGE-ONNX-CACHE': {
    source: 'docs/verification.md: A local model judge',
    behaviour:
      'A pair the local model judged is answered from the verdict cache; verdicts of other weights or another tokenizer setting are not used.',
  },
  'JUDGE-ONNX-CONFIG': {
    source: 'docs/verification.md: A local model judge',
    behaviour:
      'The local model judge refuses to start without a model directory, a model onnxruntime loads, tokenizer.json, an entailment class in config.json, or a model answering one score per class, naming what is wrong.',
  },
  'JUDGE-ONNX-SYSTEM': {
    source: 'docs/verification.md: A local model judge',
    behaviour:
      'With ASSAY_JUDGE=onnx an edition is judged through the worker by a generated tiny model, its report (driver onnx, version 3.1.0, no published quality) signed and verified offline; assay judge eval uses the same judge.',
  },
  'JUDGE-LABELLED-SET': {
    source: 'docs/verification.md: Labelling convention',
    behaviour:
      'The shipped labelled set has 200 cases or more, about as many true as false, every kind and several domains.',
  },
  'CAT-FORMAT': {
    source: 'docs/verification.md: The artifact format',
    behaviour: 'The documented artifact format example parses and judges as documented.',
  },
  'BUY-RULES': {
    source: 'spec: POST /v1/orders',
    behaviour: 'Each purchase refusal answers its exact status and code, in the documented order, and changes nothing.',
  },
  'BUY-JUDGE-ERRATA': {
    source: 'spec: POST /v1/orders',
    behaviour: 'A mandate rejecting open judge errata refuses artifacts judged by an affected version.',
  },
  'BUY-QUOTE-FRESH': {
    source: 'spec: POST /v1/orders',
    behaviour:
      "A purchase sees a listing's reprice or unlisting at once, though the actor host caches quotes for a minute.",
  },
  'BUY-REFUND': {
    source: 'spec: States and transitions (Order)',
    behaviour: 'A report missing its floor: held -> auto_refunded, balance restored, both events pollable.',
  },
  'EVENTS-STORE': {
    source: 'docs/purchases.md: The events store',
    behaviour:
      'GET /v1/events pages the events store oldest first, filtered by type; order events carry subscription_id (null outside a subscription).',
  },
  'EVENTS-TYPE-INDEX': {
    source: 'docs/purchases.md: The events store',
    behaviour:
      'A page of events of one type other than order.state_changed reads the type index, even under a generic plan; order events, most of every store, are left out of that index.',
  },
  'EVENTS-OLD-CURSOR': {
    source: 'docs/purchases.md: The events store',
    behaviour: 'An events cursor handed out before the store (a LEDGER sequence) resumes at the same event as before.',
  },
  'EVENTS-REBUILD': {
    source: 'docs/operations.md: Rebuilding projections',
    behaviour: 'Rebuilding the events store by replay gives the same event ids, sequences, data and order.',
  },
  'BUY-RELEASE': {
    source: 'spec: States and transitions (Order)',
    behaviour: 'A report meeting its floor: released, payout accrued, compliance bundle verifies independently.',
  },
  'BUY-ONE-COMMIT': {
    source: 'docs/purchases.md: Settlement',
    behaviour:
      'A purchase whose report is known is held and settled by one LEDGER append; the ledger pages through its two entries, at one sequence, one at a time.',
  },
  'BUY-DOUBLE-SPEND': {
    source: 'docs/money.md: Money rules',
    behaviour: 'Credits for exactly 3 purchases, 50 concurrent purchases: exactly 3 succeed.',
  },
  'BUY-IDEMPOTENT': {
    source: 'spec: Endpoints',
    behaviour: 'A purchase replays under its key and conflicts under another body.',
  },
  'BUY-ORDERS': {
    source: 'spec: GET /v1/orders',
    behaviour: "GET /v1/orders lists the caller's orders newest first; another principal's order is invisible.",
  },
  'BUY-ORDER-ONE': {
    source: 'docs/purchases.md: Orders, bundles, payouts, events',
    behaviour:
      "GET /v1/orders/{order_id} and its MCP twin get_order answer one of the caller's orders, the same record as its list item, right after the purchase; another principal's order and an unknown id are the same 404 not_found.",
  },
  'BUY-CONSERVATION': {
    source: 'docs/money.md: Money rules',
    behaviour: 'Under concurrent load, key retries and a killed actor host, money is conserved and nothing doubles.',
  },
  'MCP-ENDPOINT': {
    source: 'spec: Other routes on {base_url}',
    behaviour:
      'POST /mcp (and POST /) serve initialize, tools/list and tools/call on the gateway itself; GET /mcp streams; DELETE ends.',
  },
  'MCP-TOOLS': {
    source: 'spec: Agent routes on {base_url}',
    behaviour:
      'tools/list is exactly the available table rows with a tool name; input schema = path + query + body (+ idempotency_key).',
  },
  'MCP-TABLE': {
    source: 'docs/mcp.md: Tools from the table',
    behaviour: 'Bad tool rows fail the boot-time table check; a row that becomes available becomes a tool by itself.',
  },
  'MCP-RESULTS': {
    source: 'docs/mcp.md: Error mapping',
    behaviour: 'Tool results carry structuredContent and a JSON text block; refusals are isError with the typed error.',
  },
  'MCP-PARITY': {
    source: 'spec: What the service does (6)',
    behaviour:
      'The same cases through REST and MCP give the same status/code and body, validation and conflicts included.',
  },
  'MCP-IDEM-SHARED': {
    source: 'docs/mcp.md: One pipeline, shared idempotency',
    behaviour: 'A key used over REST replays over MCP and the other way round; the effect happens once.',
  },
  'MCP-AUTH': {
    source: 'spec: Authentication (5)',
    behaviour: 'No or a bad token: 401 typed error with WWW-Authenticate resource_metadata; no usable scope: 403.',
  },
  'MCP-RESOURCE-METADATA': {
    source: 'spec: Other routes on {base_url}',
    behaviour: '/.well-known/oauth-protected-resource is RFC 9728 metadata naming the base URL.',
  },
  'MCP-ORIGIN': {
    source: 'docs/mcp.md: Origin policy',
    behaviour:
      'A foreign Origin gets 403 with the typed error; the base URL origin, listed origins and no Origin pass.',
  },
  'MCP-SESSIONS': {
    source: 'docs/mcp.md: Sessions',
    behaviour:
      "Without Mcp-Session-Id 400; an ended, unknown or other principal's session 404; a foreign MCP-Protocol-Version 400.",
  },
  'MCP-SESSION-EXPIRY': {
    source: 'docs/mcp.md: Sessions',
    behaviour: 'A session idle for ASSAY_MCP_SESSION_IDLE_SECONDS ends (404); requests keep it alive.',
  },
  'MCP-LIMITS': {
    source: 'docs/mcp.md: Sessions',
    behaviour: 'Sessions per principal (429), open event streams per gateway (503) and body size (413) are bounded.',
  },
  'MCP-SCALE-OUT': {
    source: 'docs/mcp.md: Sessions',
    behaviour: 'A session opened through one gateway process serves calls through another, and ends everywhere.',
  },
  'MCP-VERSIONS': {
    source: 'docs/mcp.md: Protocol revisions',
    behaviour: 'Clients of the 2025-06-18 revision and of the newest revision the SDK knows are both served.',
  },
  'MCP-INSPECTOR': {
    source: 'docs/mcp.md: Endpoint',
    behaviour: 'The MCP Inspector CLI lists the tools and calls one, headless.',
  },
  'MCP-OUTAGE': {
    source: 'spec: Errors',
    behaviour: 'With NATS down the endpoint answers 503 unavailable (typed); sessions survive and serve again after.',
  },
  'JUDGE-MODEL-PROMPT': {
    source: 'docs/verification.md: The prompt',
    behaviour:
      'The model judge asks with prompt 2.2.0 (temperature 0, log-probabilities); a run names the answered model id, the version and the sha256 of the exact prompt text the docs quote.',
  },
  'SEC-JUDGE-FENCE': {
    source: 'docs/verification.md: The prompt',
    behaviour:
      'Prompt 2.2.0 quotes the passage and the claim between fence lines derived from their hash and absent from both, so no text (old delimiters, guessed or computed fences, fake END lines, placeholders) can end its quote; a model obeying text outside the quotes still finds such claims unsupported; 2.1.0 editions are judged with 2.2.0, no 2.1.0 verdict is reused, and migration 032 opens an erratum per model that judged with 2.1.0.',
  },
  'JUDGE-MODEL-ENTAILMENT': {
    source: 'docs/verification.md: Answers and entailment',
    behaviour:
      'Entailment is P(supported) normalised over the three verdicts at the token where the verdict starts, or 1/0 from the verdict without log-probabilities; the run says logprobs, verdict or mixed.',
  },
  'JUDGE-MODEL-MALFORMED': {
    source: 'docs/verification.md: Answers and entailment',
    behaviour:
      'An answer that is not the JSON asked for is asked again once, then the claim is judge_error (0), never verified.',
  },
  'JUDGE-MODEL-STATES': {
    source: 'docs/verification.md: States',
    behaviour:
      "States follow the built-in judge's thresholds on the entailment; a contradicted verdict is contradicted with entailment at most 0.1.",
  },
  'JUDGE-MODEL-CHUNKS': {
    source: 'docs/verification.md: Chunking',
    behaviour:
      'Long passages are cut on sentence boundaries into overlapping chunks; a claim takes its best chunk, so support in the last chunk alone is support.',
  },
  'JUDGE-MODEL-RETRY': {
    source: 'docs/verification.md: Retries, timeouts and the circuit breaker',
    behaviour:
      '429, 5xx, network errors, timeouts and non-completion bodies are retried with jittered backoff honouring Retry-After within a cap; out of attempts the whole run is JudgeUnavailable.',
  },
  'JUDGE-MODEL-BREAKER': {
    source: 'docs/verification.md: Retries, timeouts and the circuit breaker',
    behaviour:
      'After N consecutive failures the circuit opens: runs are refused at once with no request until a half-open probe succeeds.',
  },
  'JUDGE-MODEL-CACHE': {
    source: 'docs/verification.md: The verdict cache',
    behaviour:
      'Verdicts are cached by requested and answered model, prompt hash, chunk hash and claim: an unchanged claim costs no request, and a report never mixes two models.',
  },
  'JUDGE-MODEL-CONCURRENCY': {
    source: 'docs/verification.md: Concurrency and throughput',
    behaviour:
      "A report's claims are judged in parallel under one per-process bound: the default concurrency is reached and never passed (throughput is the benchmark's: npm run bench:judge-model).",
  },
  'JUDGE-MODEL-CONFIG': {
    source: 'docs/verification.md: Configuration and a local model',
    behaviour:
      'The model judge is built from ASSAY_JUDGE_* (key or key file) and refuses to start without a URL or a model.',
  },
  'JUDGE-MODEL-REPORT': {
    source: 'docs/verification.md: The pipeline',
    behaviour:
      'A report judged by the model names the model id the endpoint answered with, prompt 2.2.0 and its hash, its driver and entailment source, and verifies offline.',
  },
  'JUDGE-MODEL-VERSIONS': {
    source: 'docs/verification.md: Judge versions and errata across drivers',
    behaviour:
      "A mandate's min_judge_version compares the one version sequence of every driver, and errata apply to the model they name only.",
  },
  'JUDGE-MODEL-PENDING': {
    source: 'docs/verification.md: The pipeline',
    behaviour:
      'With the judge endpoint down an edition stays pending and its orders held; when it is back the report arrives from the same judge and settles them.',
  },
  'DELIVERY-CONTENT': {
    source: 'docs/purchases.md: Delivery',
    behaviour:
      "A released order delivers its pinned edition's Markdown: sha256 equals the content hash the report signed, over JSON and the raw download (Content-Digest, strong ETag, 304); a later edition changes nothing; each delivery has a signed receipt and the bundle stays the same.",
  },
  'DELIVERY-SIGNED-LINK': {
    source: 'docs/purchases.md: Signed links',
    behaviour:
      "A delivery's download_url is a signed link: without a token it serves the bytes whose hash the report signed; another order id, format, expiry, agent, signature or key is refused 401; another principal's link cannot be turned to this order; an expired link is refused; the JSON route still needs the token.",
  },
  'DELIVERY-PDF-ORDER': {
    source: 'docs/purchases.md: PDF',
    behaviour:
      'The PDF an order delivers is a real PDF (pdftotext finds the title and the claim) whose metadata carries the content hash and report digest; JSON and download give the same file.',
  },
  'DELIVERY-REFUSALS': {
    source: 'docs/purchases.md: Delivery',
    behaviour:
      'A format not bought (422), another principal (404), a held order (503, Retry-After) and a refunded order (409 order_refunded) get their typed answer over REST, the download and MCP, and record no receipt.',
  },
  'DELIVERY-MCP': {
    source: 'docs/purchases.md: Delivery',
    behaviour:
      'get_order_content returns Markdown as a text resource and PDF as a blob resource with their hashes; get_order_receipts lists the receipts.',
  },
  'DELIVERY-RENDER-ONCE': {
    source: 'docs/purchases.md: PDF',
    behaviour:
      'Delivering one PDF 1,000 times (concurrently, JSON and download) renders it once and records 1,000 receipts.',
  },
  'SPINE-BUS-PARTS': {
    source: 'docs/architecture.md: Services and background jobs (workers role)',
    behaviour:
      'A reply larger than max_payload crosses the bus in parts and arrives whole; refusals and missing responders end a parts request at once; an oversized single reply is refused at once.',
  },
  'DELIVERY-PDF': {
    source: 'docs/purchases.md: Delivery',
    behaviour:
      'An edition renders to a PDF whose pages show its title, edition id, content hash and report digest, its front matter as a table, and each claim with its id, text and citation and each source with its sections; every claim the verifier reads is on the pages.',
  },
  'DELIVERY-PDF-META': {
    source: 'docs/purchases.md: Delivery',
    behaviour:
      "The PDF's Info dictionary carries Title, Author and Creator Assay, Subject, Keywords, and custom ContentHash, ReportDigest (none before the report), EditionId and RendererVersion; its dates are the edition's.",
  },
  'DELIVERY-PDF-DETERMINISTIC': {
    source: 'docs/purchases.md: Delivery',
    behaviour: 'The same input renders to byte-identical PDFs, whatever else renders meanwhile.',
  },
  'DELIVERY-PDF-UNICODE': {
    source: 'docs/purchases.md: Delivery',
    behaviour:
      'Every character is drawn, left out when it is an invisible format character, or written as <U+XXXX>: never dropped and never an error.',
  },
  'DELIVERY-PDF-SCRIPTS': {
    source: 'docs/purchases.md: Delivery',
    behaviour:
      'Latin, Greek, Cyrillic and Japanese are drawn in embedded, subset fonts shipped with the project, in the title, body, tables, code and running footer; Japanese breaks between characters and wide characters keep code columns; right-to-left and shaped scripts and emoji are written as code points that page 1 names one by one; an order bought over the API delivers such a PDF, rendered again though the standard-font renderer had cached one.',
  },
  'DELIVERY-PDF-BOUNDS': {
    source: 'docs/purchases.md: Delivery',
    behaviour:
      'A 200-claim artifact renders on several pages well under a second; the largest edition written to be slow renders in bounded time; longer input is refused.',
  },
  'OAUTH-CODE-FLOW': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'Discovery, registration with an initial access token, code + PKCE approved after sign-in in Chromium, tokens on REST and MCP, refresh rotation and reuse detection (RFC 8414, 7591, OAuth 2.1 4.1, 7636, 9207, 9068).',
  },
  'OAUTH-EXCHANGE': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'Token exchange narrows scopes or moves the audience to the MCP endpoint with an act claim, and never widens either (RFC 8693, 8707).',
  },
  'OAUTH-DEVICE': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'The device grant answers authorization_pending and slow_down, then tokens once after approval on the verification page (RFC 8628 3.1-3.5).',
  },
  'OAUTH-ACCOUNT-PAGE': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'The account page lists grants and live tokens; revoking a grant there stops its access and refresh tokens.',
  },
  'OAUTH-REFUSE-AUTHORIZE': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'PKCE missing or plain, a bad response type, scope or resource are redirected with the error and state; an unknown client or redirect URI is shown on a page, never redirected (OAuth 2.1 4.1.2.1).',
  },
  'OAUTH-REFUSE-CODE': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'A wrong verifier, a second use of a code (revoking what the first issued), an expired code and a denial issue nothing (OAuth 2.1 4.1.3).',
  },
  'OAUTH-REFUSE-TOKEN': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'The token endpoint refuses an unknown client, an unknown grant type, missing parameters and non-form bodies with RFC 6749 5.2 errors.',
  },
  'OAUTH-REFUSE-REGISTER': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'Registration without or with a wrong or revoked initial access token, or with bad metadata, registers nothing (RFC 7591 3.2.2).',
  },
  'OAUTH-REFUSE-DECISION': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'A consent decision without its screen token, from another origin, with a forged CSRF token or by another person approves nothing.',
  },
  'OAUTH-SIGNIN': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'Sign-in answers the same for an unknown email and a wrong password, and attempts past the limit wait (429) even with the right password.',
  },
  'OAUTH-LIVE-PRINCIPAL': {
    source: 'docs/oauth.md: Tokens on the agent API',
    behaviour:
      'OAuth tokens stand on the live side of the sandbox line both ways; a live purchase answers mandate_revoked until the person sets a mandate on the account page, then insufficient_credits, and holds nothing.',
  },
  'OAUTH-CONCURRENT-ROTATION': {
    source: 'docs/oauth.md: Flows',
    behaviour:
      'More refresh rotations in flight than the oauth service has database connections, past a key reload, all complete; one refresh token presented twice at once yields one successor and revokes the family (OAuth 2.1 4.3.1).',
  },
  'OAUTH-REVOCATION-BOUND': {
    source: 'docs/oauth.md: Requirements',
    behaviour:
      'A token or grant revoked at one gateway is refused by another gateway process within 1 s, and by a gateway started later.',
  },
  'OAUTH-CIMD-METADATA': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour: 'The authorization server metadata advertises client_id_metadata_document_supported: true.',
  },
  'OAUTH-CIMD-MCP': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour:
      "The MCP SDK client, whose client_id is its metadata document's https URL, goes from /mcp's 401 and resource_metadata through consent in Chromium (which names the client, shows the document's host and says it is not registered by the account) to tokens and a tool call.",
  },
  'OAUTH-CIMD-REDIRECT': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour: 'A redirect URI the metadata document does not list is refused on a page and never redirected to.',
  },
  'OAUTH-CIMD-CLIENT-ID': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour: 'A metadata document whose client_id is not the URL it was fetched from is refused.',
  },
  'OAUTH-CIMD-HTTPS': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour: 'A client_id URL that is not https is refused without a fetch.',
  },
  'OAUTH-CIMD-DOCUMENT': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour:
      'A document over 5 kB, not JSON, asking for a client secret or not found is refused on a page with the reason.',
  },
  'OAUTH-CIMD-CACHE': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour: 'A fetched document is kept as its Cache-Control says (max-age) and fetched again after no-store.',
  },
  'OAUTH-CIMD-STORED-ON-CONSENT': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour:
      'Naming a metadata document writes no client row until a signed-in person is shown the consent screen, and then one row.',
  },
  'OAUTH-CIMD-URL': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour: 'A client_id URL is https with a path, without a fragment, user information or dot segments.',
  },
  'OAUTH-CIMD-DOCUMENT-RULES': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour:
      'A document names its own URL, lists redirect URIs, uses token_endpoint_auth_method none without a secret, and asks only for the code and refresh grants.',
  },
  'OAUTH-CIMD-CACHE-BOUNDS': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour:
      'Cache-Control max-age is honoured up to a day; no-store and no-cache are not kept; none keeps 5 minutes.',
  },
  'OAUTH-WHO-AUTHORIZES': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour:
      'Another account cannot authorize a registered client (a page, no redirect); any account may authorize a metadata-document client.',
  },
  'OAUTH-CLI-ID': {
    source: 'docs/oauth.md: Clients of three kinds',
    behaviour: 'The CLI and the server name the same first-party client id.',
  },
  'OAUTH-CLI-FIRST-PARTY': {
    source: 'docs/sync.md: The command-line client',
    behaviour:
      '`assay login` with no initial access token prints a device code at once, completes once the code is approved in Chromium, and the page links back to the account; the tokens hold scope sync for the first-party client.',
  },
  'FLEET-FLOOR': {
    source: 'docs/purchases.md: Buying: `POST /v1/orders`',
    behaviour:
      "A mandate's min_floor refuses a listing whose floor, or whose edition's report, is below it with floor_not_met before escrow, changing nothing; its place in the precedence is the error table's.",
  },
  'FLEET-RATE': {
    source: 'docs/fleet.md: Rate limits',
    behaviour:
      'A burst beyond an agent bucket gets 429 rate_limited with Retry-After over REST and MCP and changes nothing; two gateway processes spend from one bucket; every counted answer carries X-RateLimit-Limit, -Remaining and -Reset.',
  },
  'FLEET-PLAN': {
    source: 'docs/fleet.md: Plans',
    behaviour:
      '`assay plan set` puts an existing principal on a plan (a plan_set fact) and its buckets follow; `plan show` tells the plan and whether it is the default; an unknown principal or plan is refused.',
  },
  'FLEET-QUOTA': {
    source: 'docs/fleet.md: Quotas',
    behaviour:
      "Concurrent purchases never pass the plan's daily spend quota by a cent; past it, 429 quota_exhausted with the reset time and Retry-After, nothing held; the next UTC day starts from zero.",
  },
  'FLEET-APPROVAL': {
    source: 'docs/fleet.md: Human approval',
    behaviour:
      "Above the mandate's approval threshold a purchase is not charged but answered 403 pending_approval with the request's id; approving buys it once with the original request however many approvals race, runs the purchase rules again (a refusal leaves it pending), declining buys nothing, a second decision does nothing, an undecided request expires; the agent learns each outcome from approval.* events and by replaying its request.",
  },
  'FLEET-APPROVAL-PAGE': {
    source: 'docs/fleet.md: Human approval',
    behaviour:
      'On the account page (headless Chromium) a person sets the approval threshold, sees the purchases waiting for them, and declines or approves each; a refused approval says why and the request stays pending.',
  },
  'FLEET-APPROVAL-CREDITS': {
    source: 'docs/fleet.md: Human approval',
    behaviour:
      'Approving on the account page with too few credits answers a page with the price, what is available and an Add credits link, not the refusal text with a request id; nothing is bought and the request waits on.',
  },
  'FLEET-SANDBOX-PLAN': {
    source: 'docs/fleet.md: Plans',
    behaviour:
      'A sandbox principal no operator put on a plan is on ASSAY_SANDBOX_PLAN (default sandbox), a live one on ASSAY_DEFAULT_PLAN (Free); the sandbox plan cannot be set on a live principal.',
  },
  'FLEET-SANDBOX-FLEET': {
    source: 'docs/fleet.md: Plans',
    behaviour: 'Ten sandbox agents each sending 20 purchases and 20 top-ups at once in their first minute meet no 429.',
  },
  'FLEET-RATE-EXACT': {
    source: 'docs/fleet.md: Rate limits',
    behaviour:
      "X-RateLimit-Remaining shows exactly one fewer on each call a gateway answers, from the bucket's size less one, on every plan.",
  },
  'CONTEXT-RATE-HEADERS': {
    source: 'docs/contexts.md: Rate limits',
    behaviour:
      "Every context-file API answer carries X-RateLimit-*, 401s included: a request no credential identifies spends its client address's hourly allowance and meets 429 past it; a principal's allowance is its own.",
  },
  'OAUTH-IAT-ONCE': {
    source: 'docs/oauth.md: Flows',
    behaviour:
      'An initial access token registers one client: a second registration with it gets 401 invalid_token and registers nothing; refused metadata spends nothing.',
  },
  'OAUTH-IAT-RACE': {
    source: 'docs/oauth.md: Flows',
    behaviour: 'Registrations racing with one initial access token register exactly one client.',
  },
  'OAUTH-IAT-PAGE': {
    source: 'docs/oauth.md: Flows',
    behaviour:
      'In Chromium, issuing a token redirects to a page that shows it once with a working copy button under the Content-Security-Policy; a reload shows it no more and issues nothing.',
  },
  'MONEY-NO-PROCESSOR': {
    source: 'docs/money.md: Live money: the payment processor',
    behaviour:
      'Without a payment processor a live top-up answers 403 payments_not_configured, not retryable, with no Retry-After, and credits nothing; the account page offers no card.',
  },
  'DOCS-README-LISTS': {
    source: 'docs/architecture.md: One operation table',
    behaviour:
      "README's development block has a line for every bench script of package.json, and its documentation list links every page of docs/.",
  },
  'DOCS-README-BUILT': {
    source: 'docs/architecture.md: One operation table',
    behaviour:
      "README's What is built table names every route the operation table and device sync serve in a built row, and no served route in a row that says not yet.",
  },
  'CONTEXT-CRUD': {
    source: 'docs/contexts.md: Routes',
    behaviour:
      'Context files are created, read, updated and deleted on both base forms ({web_url}/api/v1, {api_url}/v1); slugs derive from the name and are unique per owner; a read right after a write sees it.',
  },
  'CONTEXT-LISTS': {
    source: 'docs/contexts.md: Lists',
    behaviour:
      '{web_url}/api/v1 lists as {data, meta: {total, page, limit}} (20 a page), {api_url}/v1 as {contexts, pagination: {total, limit, offset, hasMore}} (50 a page), newest first, content summarised.',
  },
  'CONTEXT-EVENTS': {
    source: 'docs/contexts.md: Events',
    behaviour:
      'Each change of a context file is exactly one context.* event (created, updated, published, unpublished, deleted) with data {context: {id, name, slug, updated_at}}, polled by its owner only.',
  },
  'CONTEXT-AUTH': {
    source: 'docs/contexts.md: Authentication',
    behaviour:
      "API keys, OAuth access tokens (read:context, write:context) and the session cookie with CSRF each authenticate; a revoked key or invalid token is 401 {error, message}; a missing scope 403; another owner's private file 404 on read, update and delete; a public file is readable by any account.",
  },
  'CONTEXT-BAD-INPUT': {
    source: 'docs/contexts.md: Errors',
    behaviour: 'Wrong types, sizes, fields, text and bodies are 400 {error, message} and change nothing.',
  },
  'CONTEXT-OKF': {
    source: 'docs/contexts.md: The OKF export',
    behaviour:
      'GET {web_url}/export/okf, without authentication, holds exactly the public files of every account (never a private, unpublished or deleted one, nor an owner), each line valid against the OKF schema with a matching sha256; its ETag stays while nothing public changes and moves with every publish, update, unpublish and delete; If-None-Match answers 304 and HEAD the head.',
  },
  'CONTEXT-OKF-STREAM': {
    source: 'docs/contexts.md: The OKF export',
    behaviour:
      "The export streams at the reader's pace: a paused reader pauses the page reads, one that leaves frees its slot, a gateway streams a bounded number at once (503 past it), a failure mid-stream closes the connection without the end line; 100,000 files stream through a real client while the serving process's peak RSS grows by far less than the export.",
  },
  'CONTEXT-RATE': {
    source: 'docs/contexts.md: Rate limits',
    behaviour:
      "Every answer carries X-RateLimit-Limit, -Remaining and -Reset for the principal's hourly allowance; the 101st request in an hour on Free is 429 with Retry-After; an operator's plan change applies at once.",
  },
  'CONTEXT-RATE-SHARED': {
    source: 'docs/contexts.md: Rate limits',
    behaviour:
      "Two gateway processes spend one principal's hourly allowance together: alternating Free requests between them admit 100 in all (not 100 each), X-RateLimit-Remaining never rises on either, and after a change to Pro both admit again within a second.",
  },
  'CONTEXT-RATE-OFF': {
    source: 'docs/contexts.md: Rate limits',
    behaviour:
      'A gateway with ASSAY_CONTEXT_RATE_LIMIT=off (for measuring the limiter) admits context-file requests without X-RateLimit headers, spends nothing of the allowance, and warns at start.',
  },
  'CONTEXT-KEYS-PAGE': {
    source: 'docs/contexts.md: Authentication',
    behaviour:
      'On the account page (headless Chromium) a person issues an API key by name and sees it once; it works on {api_url}/v1; the page lists it by name, last four characters, issue and last use, never the key; revoking it there makes it 401 {error, message} at once. The page and the API route manage the same keys; a foreign form, a bad name or another person’s key id change nothing.',
  },
  'CONTEXT-OPENAPI': {
    source: 'docs/contexts.md: Routes',
    behaviour:
      "{web_url}/api/v1/openapi.json and {api_url}/v1/openapi.json serve, without a credential, an OpenAPI 3.1 document of every route with the base form's own list envelope and paging, which is what its lists answer.",
  },
  'CONTEXT-PUBLISH': {
    source: 'docs/contexts.md: From context file to marketplace',
    behaviour:
      "An owner publishes a context file as a catalog artifact whose first edition is the file's text, verified like any other; each later change of the text is the next edition (other changes make none); publishing again answers the same artifact; others' files are 404.",
  },
  'SKILL-VERSIONS': {
    source: 'docs/contexts.md: Skills',
    behaviour:
      "A skill is created as version 1, listed in both envelopes without its template, changed into the next version while earlier versions stay readable and executable, and deleted; another owner's id is 404.",
  },
  'SKILL-EXECUTE': {
    source: 'docs/contexts.md: Skills',
    behaviour:
      "Executing substitutes the variables once, refuses missing and extra variables by name, brings the skill's context files in order with the caller's rights as they are at run time (own files as just written, others' only while public), and answers what ran.",
  },
  'SKILL-MODEL': {
    source: 'docs/contexts.md: Skills',
    behaviour:
      'The model executor sends the rendered messages to the configured OpenAI-compatible endpoint and answers its reply and model; an endpoint failure or a stall past ASSAY_SKILL_TIMEOUT_MS is 500 with the reason; an execution spends one request and needs write:context.',
  },
  'SKILL-BAD-INPUT': {
    source: 'docs/contexts.md: Skills',
    behaviour:
      'Bad skill bodies (types, sizes, fields, unknown executors, bad or repeated context ids) are 400 and create nothing.',
  },
  'WEBHOOK-SSRF': {
    source: 'docs/webhooks.md: The URL rule',
    behaviour:
      'A webhook URL must be https with a host and no user name or password; its host is resolved at registration and at every delivery, and it is refused when any address is loopback, private, link-local (the cloud metadata addresses), CGNAT, multicast, unspecified, broadcast, reserved or documentation, IPv6 unique-local or site-local, an IPv4-mapped, NAT64, 6to4 or Teredo form, or otherwise not public unicast; test mode allows 127.0.0.0/8 and ::1 and nothing else.',
  },
  'SEC-WEBHOOK-URL-OPAQUE': {
    source: 'docs/webhooks.md: The URL rule',
    behaviour:
      "A refused webhook URL (at registration on both base forms, and in a delivery attempt's recorded error) says only that the address is not public: never the address its host resolved to, nor its range, nor whether the name resolved at all; a failed connection's error leaves the address out.",
  },
  'WEBHOOK-SEND': {
    source: 'docs/webhooks.md: Delivery',
    behaviour:
      "A delivery POSTs to the address that was checked (one lookup, SNI and Host the URL's host, certificate verified against that name), follows no redirect, counts only a 2xx as delivered, ends the whole attempt at the timeout and reads at most the response cap, and never throws.",
  },
  'WEBHOOK-REGISTER': {
    source: 'docs/webhooks.md: Registrations',
    behaviour:
      "POST /webhooks refuses non-https URLs, private, metadata and mapped addresses and unknown event names with 400, registering nothing; the secret is shown at creation only and a rotation keeps the old one signing for 24 hours; another principal's webhook is 404 on every route.",
  },
  'WEBHOOK-DELIVERY': {
    source: 'docs/webhooks.md: Delivery',
    behaviour:
      'Each event of a subscribed type made after registration is delivered once as {id, type, created_at, sent_at, data}, signed with X-Webhook-Signature (hex HMAC-SHA256 of the body) and the Standard Webhooks headers; a tampered body fails the check; attempts are visible to the owner.',
  },
  'SEC-WEBHOOK-REPLAY': {
    source: 'docs/webhooks.md: Replays',
    behaviour:
      "A delivery's body carries sent_at (the second webhook-timestamp names) under X-Webhook-Signature, so a receiver checking only that header accepts a delivery when it arrives, refuses the same capture after 5 minutes, and cannot be fooled by a moved sent_at; the Standard Webhooks headers are unchanged and verify.",
  },
  'WEBHOOK-RETRY': {
    source: 'docs/webhooks.md: Delivery',
    behaviour:
      'A failed attempt is retried with waits that grow, up to 5 retries, and nothing is sent after a 2xx; a receiver slower than the timeout fails the attempt.',
  },
  'WEBHOOK-DISABLE': {
    source: 'docs/webhooks.md: Disabling',
    behaviour:
      'After the configured number of consecutive events fail every one of their 1 + 5 attempts the webhook is disabled, its owner gets a webhook.disabled event, nothing is sent while disabled, and re-enabling delivers the next events.',
  },
  'WEBHOOK-REDELIVER': {
    source: 'docs/webhooks.md: Redelivery',
    behaviour:
      "POST /v1/events/{id}/redeliver re-arms one event for the caller's active webhooks, which receive it again with the same id; a replayed Idempotency-Key answers again without re-arming; another principal's event is 404.",
  },
  'WEBHOOK-KILL': {
    source: 'docs/webhooks.md: Delivery',
    behaviour:
      'A worker killed with SIGKILL between attempts loses nothing: after a restart the retries resume from their due times, and nothing is sent after the 2xx.',
  },
  'WEBHOOK-LOAD': {
    source: 'docs/webhooks.md: Delivery',
    behaviour:
      '10,000 events to 20 receivers, four of them slow, all reach their receiver, none again after its 2xx was recorded (a repeat only follows a failed attempt), and the fast receivers are done before the slow ones.',
  },
  'MCP-EVENTS-RESOURCE': {
    source: 'docs/mcp.md: Events as a resource',
    behaviour:
      "assay://events is listed, read as GET /v1/events shows the caller's events (never another principal's), and subscribed to: new events of the principal send notifications/resources/updated on the session's event stream, whichever gateway holds it; none after unsubscribe.",
  },
  'FIRST-HOUR-LANDING': {
    source: 'docs/oauth.md: Pages before signing in',
    behaviour:
      'A browser navigating to / (Accept: text/html) gets the landing page: what Assay is, sign up and sign in, the sandbox in one line of curl that works as written, the MCP endpoint, the docs and the API reference, Vary: Accept; a GET without HTML in Accept, a GET asking for text/event-stream and any POST keep the MCP endpoint’s typed 401; /docs, /docs/api and the guides are served, an unknown guide is 404.',
  },
  'FIRST-HOUR-TEST-MODE': {
    source: 'docs/oauth.md: Test mode',
    behaviour:
      'The account page’s first lines say how to start and link the guides and the API reference; it issues sandbox agent tokens (shown once) that act for one sandbox principal tied to the account and share its one grant of test credits; a test purchase shows under test orders (title, state, agent name) and its events under test events, marked Test, while the live side has no order and its credits are untouched; another person sees none of it.',
  },
  'FIRST-HOUR-NAMES': {
    source: 'docs/oauth.md: The account page',
    behaviour:
      'A waiting purchase on the account page shows the artifact’s title, the listing’s price and floor, whether its report meets the floor (with the score) and the agent’s (OAuth client’s) name, not the listing or agent id; a decision in Recent decisions names the same.',
  },
  'FIRST-HOUR-WEBHOOKS': {
    source: 'docs/webhooks.md: On the account page',
    behaviour:
      'On the account page a person adds a webhook (a refused URL is named and the form keeps what was typed; the secret is shown once), sends it a test event (post, redirect, get) that arrives as webhook.test signed with that secret in both schemes, sees the delivery (event, outcome, attempt, response code, time), rotates the secret (both sign the next test event), pauses it (no test button, a forged test post is refused with words), and deletes it; another person’s posts for it are 404.',
  },
  'FIRST-HOUR': {
    source: 'docs/oauth.md: Test mode',
    behaviour:
      'In one Chromium session: the landing page at /, sign-up, a sandbox agent token from the account page, a search and purchase by that token that settles (shown under test orders), a webhook added on the page and its test event received, signed, by a loopback HTTPS receiver and listed under its deliveries.',
  },
  'WEBHOOK-PAGE': {
    source: 'docs/webhooks.md: Disabling',
    behaviour:
      'The account page (headless Chromium) lists the person’s webhooks with name, URL, events, state and registration time; a webhook disabled by failed deliveries shows its reason, and a notice near the top says one was disabled; Re-enable makes it active and Pause makes it inactive, as the API then shows; a foreign form or another person’s webhook id changes nothing.',
  },
  'SUBS-CYCLES': {
    source: 'docs/subscriptions.md: Cycles',
    behaviour:
      'A subscription to a living listing bills in cycles, the first at subscribe time: each an order with subscriptionId, settled like any order; the balance moves by exactly the released cycles; subscribing again to an active one answers it.',
  },
  'SUBS-PAUSE': {
    source: 'docs/subscriptions.md: Cycles',
    behaviour:
      'A refused cycle bills nothing and is recorded with its error code; three in a row pause the subscription; subscribing again resumes it (same id) and a successful cycle resets the count.',
  },
  'SUBS-CANCEL': {
    source: 'docs/subscriptions.md: The record and who sees it',
    behaviour:
      'The buyer or the seller may cancel (terminal; twice answers the same record); anyone else gets 404; no cycle runs after a cancel.',
  },
  'SUBS-LISTING-CHANGES': {
    source: 'docs/subscriptions.md: Listing changes',
    behaviour:
      'Unlisting a living listing cancels its subscriptions; a reprice applies from the next cycle, and a price above the mandate cap fails that cycle.',
  },
  'SUBS-REFUSALS': {
    source: 'docs/subscriptions.md: Subscribing',
    behaviour:
      'A listing that is not living (422), not live, unknown or across the sandbox line (404), a first cycle the rules refuse, bad bodies and extra properties: typed errors that change nothing.',
  },
  'SUBS-MCP': {
    source: 'docs/subscriptions.md: Subscribing',
    behaviour: 'subscribe_listing, get_subscriptions and cancel_subscription give the outcomes of their REST twins.',
  },
  'SUBS-TWO-SCHEDULERS': {
    source: 'docs/subscriptions.md: The scheduler',
    behaviour: 'Two worker processes running the scheduler never run a cycle twice.',
  },
  'SUBS-REBUILD': {
    source: 'docs/subscriptions.md: The scheduler',
    behaviour:
      'The subscriptions table is a projection of LEDGER facts: assay rebuild-projections rebuilds it identically.',
  },
  'SUBS-KILL': {
    source: 'docs/subscriptions.md: The scheduler',
    behaviour:
      'A scheduler killed with SIGKILL between a cycle’s claim and its purchase: after a restart every cycle is billed exactly once.',
  },
  'VERS-CHANGELOG': {
    source: 'spec: Versioning (5)',
    behaviour:
      'The changelog (the versions of the spec and ours, newest first) and the deprecation policy are served from docs/ as Markdown and linked from /openapi.json.',
  },
  'VERS-DEPRECATION': {
    source: 'docs/deprecation.md: How a deprecation is announced',
    behaviour:
      'Every response of a deprecated operation, REST and MCP, carries its Deprecation, Sunset and Link values and others carry none; /openapi.json marks it deprecated; the table refuses a notice period under 180 days.',
  },
  'VERS-SUNSET': {
    source: 'docs/deprecation.md: At sunset',
    behaviour:
      'From its Sunset date a deprecated operation answers 404 not_found naming its replacement, REST and MCP.',
  },
  'SYNC-BLOB-DIGEST': {
    source: 'docs/sync.md: Routes',
    behaviour:
      'A blob is stored under its digest once (a second upload by its owner is a cheap 200); a body that does not hash to the digest in the path is refused with digest_mismatch and nothing is kept.',
  },
  'SYNC-OWNERS': {
    source: 'docs/sync.md: Locators and owners',
    behaviour:
      "Another owner's digests are reported missing, its blobs cannot be downloaded or committed without uploading the bytes, and its locators are 404.",
  },
  'SYNC-COMMIT-IDEM': {
    source: 'spec: Limits',
    behaviour:
      'A snapshot commit needs an Idempotency-Key of 1 to 200 characters, replays with it, conflicts with another body under it, and is refused while a referenced blob is not uploaded; unchanged files make no new revision.',
  },
  'SYNC-SCAN': {
    source: 'docs/sync.md: Injection scan',
    behaviour:
      'Each finding type is detected on a fixture that has it: absolute paths, traversal and escaping symlinks refuse the commit; model instructions, bidi overrides, tag characters and zero-width runs flag the revision.',
  },
  'SYNC-LIMITS': {
    source: 'docs/sync.md: Quota and limits',
    behaviour: 'A blob over ASSAY_SYNC_BLOB_BYTES_MAX gets 413, one past the quota 507; neither stores anything.',
  },
  'SYNC-AUTH': {
    source: 'docs/sync.md: Routes',
    behaviour:
      'The sync routes need an OAuth access token of an account with the scope sync: 401 without, 403 without the scope.',
  },
  'SYNC-BAD-INPUT': {
    source: 'docs/sync.md: Errors',
    behaviour: 'Bad locators, digests, bodies and query parameters get 400 invalid_request and change nothing.',
  },
  'SYNC-RATE': {
    source: 'docs/sync.md: Rate limits',
    behaviour:
      "Every authenticated sync request spends a token of the principal's plan's sync bucket: answers carry X-RateLimit-Limit, -Remaining and -Reset; past the bucket 429 rate_limited with Retry-After, an upload refused so stores nothing; a plan change applies.",
  },
  'SYNC-OPENAPI': {
    source: 'docs/sync.md: Routes',
    behaviour:
      'The web OpenAPI document ({web_url}/api/v1/openapi.json) lists every sync route, generated from the route table, each with the web origin as its server, the scope sync and its errors; each listed route answers 401 without a token.',
  },
  'SYNC-FORGET': {
    source: 'docs/sync.md: Retention',
    behaviour:
      "POST /api/sync/forget keeps a folder's newest revisions and deletes the older ones, removes the owner's holdings no remaining revision uses (usage goes down), deletes the files of blobs no owner holds and keeps those another owner holds; `assay forget <locator> --keep N` does it from the CLI.",
  },
  'SYNC-CLI-FLOW': {
    source: 'docs/sync.md: The command-line client',
    behaviour:
      '`assay login` (device grant approved on the verification page), sync of a few hundred files with ignored paths, a second sync uploading only two edited files, revisions, restore byte for byte, logout.',
  },
  'SYNC-CLI-RESUME': {
    source: 'docs/sync.md: Resuming',
    behaviour: 'A sync killed midway and run again finishes without uploading any blob a second time.',
  },
  'SYNC-CLI-PROGRESS': {
    source: 'docs/sync.md: The command-line client',
    behaviour: 'Progress is one redrawn bar on a terminal (tmux) and plain lines otherwise; --json prints none.',
  },
  'SYNC-CLI-SUMMARY': {
    source: 'docs/sync.md: The command-line client',
    behaviour:
      'The line a sync prints counts files and bytes as a person reads them: "uploaded 1 file, 6 B", not "1 files, 0.0 kB".',
  },
  'SYNC-CLI-ERRORS': {
    source: 'docs/sync.md: Exit codes',
    behaviour:
      'An unreachable server, a missing login, unsafe paths and flagged content each get a message naming the next step and their exit code.',
  },
  'CLI-HELP': {
    source: 'docs/sync.md: The command-line client',
    behaviour:
      '`assay --help` (and -h, help, no command) prints the usage listing every command on stdout and exits 0; an unknown command exits 2 with a message on stderr.',
  },
  'CLI-HELP-COMMANDS': {
    source: 'docs/sync.md: The command-line client',
    behaviour:
      "`assay <command> --help` prints that command's usage on stdout and exits 0 for every command, wherever --help stands among its arguments.",
  },
  'CLI-LOAD': {
    source: 'docs/sync.md: The command-line client',
    behaviour:
      'Help, sync and verify-report load no module of gateway/, actors/ or storage/ (a loader hook records every module the process loads).',
  },
  'CLI-WORDING': {
    source: 'docs/sync.md: The command-line client',
    behaviour: 'Sizes are worded in B, kB, MB and GB with sensible precision, and counts agree with their nouns.',
  },
  'SEC-SYNC-COMMIT-LINKS': {
    source: 'docs/sync.md: Injection scan',
    behaviour:
      "A snapshot with an entry under one of its own symlinks, or a symlink whose target leaves the folder once resolved through the snapshot's other links (a loop included), is refused with 422 unsafe_paths listing each, and nothing is stored.",
  },
  'SEC-SYNC-RESTORE-CONFINED': {
    source: 'docs/sync.md: Restore',
    behaviour:
      '`assay restore` of a hostile revision (served by a server that skips the scan) writes nothing outside its directory: it refuses entries through links and links that leave the folder, and creates every path component by component without following a link.',
  },
  'SEC-SYNC-RESTORE-MODES': {
    source: 'docs/sync.md: Restore',
    behaviour:
      '`assay restore` never sets the setuid, setgid or sticky bit: a mode is restored as its permission bits.',
  },
  'SEC-SYNC-QUOTA-RESERVED': {
    source: 'docs/sync.md: Quota and limits',
    behaviour:
      "An upload reserves its size when it begins: concurrent uploads past the quota keep exactly what fits, the refused one's file is never left on disk, a dropped upload gives its reservation back, and usage counts exactly the blobs held.",
  },
  'SEC-SYNC-ORPHAN-SWEEP': {
    source: 'docs/operations.md: Device sync sweep',
    behaviour:
      'The sweep releases reservations whose upload stopped and deletes blob files no owner holds and no upload reserved, and temporary files, older than the grace period; held, reserved and young files stay.',
  },
  'MONEY-TOPUP': {
    source: 'docs/money.md: Live top-ups (`POST /v1/topups` with a live token)',
    behaviour:
      "A live top-up charges the saved card off-session and answers pending; the processor's signed webhook credits it once however often it arrives; a replay of the request makes no second PaymentIntent.",
  },
  'MONEY-REFUSALS': {
    source: 'docs/money.md: Live top-ups (`POST /v1/topups` with a live token)',
    behaviour:
      'No saved card, a declined card and a card that needs its holder get typed errors and credit nothing; without a processor a live top-up answers 503 saying so.',
  },
  'MONEY-WEBHOOK-FORGED': {
    source: 'docs/money.md: The processor webhook (`POST /api/stripe/webhook`)',
    behaviour:
      'A missing or foreign signature, a stale timestamp or a body changed after signing is 400 and credits nothing; unknown event types are acknowledged and ignored.',
  },
  'MONEY-WEBHOOK-SHAPE': {
    source: 'docs/money.md: The processor webhook (`POST /api/stripe/webhook`)',
    behaviour:
      'A signed event of a type Assay acts on whose fields are not in the shape it reads is refused with 503 (the processor redelivers it) and credits nothing; the same event in its shape credits once.',
  },
  'MONEY-CONCURRENT': {
    source: 'docs/money.md: Live top-ups (`POST /v1/topups` with a live token)',
    behaviour:
      "50 live principals top up concurrently while the processor's webhooks arrive shuffled and duplicated: every balance equals its succeeded payments.",
  },
  'MONEY-PAYOUTS': {
    source: 'docs/money.md: Seller payouts',
    behaviour:
      'Payout runs transfer each released live accrual once to an enabled seller, never a refunded order, through a lost answer, a crash after the transfer was recorded, and reruns.',
  },
  'MONEY-EXPORT': {
    source: "docs/money.md: The person's data: `/api/` routes of the web app",
    behaviour:
      "The account export holds the signed-in person's data and nobody else's, and no secret; /api/health answers; the compliance route serves only the buyer's own orders.",
  },
  'MONEY-CHARGEBACK-REFUND': {
    source: 'docs/money.md: Refunds and disputes',
    behaviour:
      "A processor refund of a card top-up debits what it refunded (partial refunds by amount_refunded's increments), once however often and in whatever order its events come; the balance may go negative, and a negative balance refuses purchases with insufficient_credits until a top-up pays it back.",
  },
  'MONEY-CHARGEBACK-DISPUTE': {
    source: 'docs/money.md: Refunds and disputes',
    behaviour:
      'A dispute withholds its amount (topup.disputed), a won one returns it and a lost one keeps it (topup.dispute_closed); replayed events and a close that arrives before the dispute was seen open move the money once.',
  },
  'MONEY-CHARGEBACK-ORDER': {
    source: 'docs/money.md: Refunds and disputes',
    behaviour:
      "Every order and repetition of a dispute's events, and of a charge's refund totals, ends in the same money, taken once and never beyond the charge; the fold refuses a purchase from a negative balance and a chargeback beyond its charge.",
  },
  'MONEY-CHARGEBACK-PAYOUT-HOLD': {
    source: 'docs/money.md: Payouts held',
    behaviour:
      "A seller's accruals paid by a buyer with a dispute open or a chargeback owed wait, with those after them; those before are paid; they are paid once the buyer owes nothing.",
  },
  'MONEY-CHARGEBACK-SELLER-NEGATIVE': {
    source: 'docs/money.md: Payouts held',
    behaviour:
      'A seller whose own balance is negative is paid nothing: starting a transfer answers insufficient_credits and the run lists the seller as held, until a top-up pays it back.',
  },
  'MONEY-CHARGEBACK-AUDIT': {
    source: 'docs/operations.md: Audit',
    behaviour:
      'After refunds, disputes won, lost and out of order and held payouts, assay audit is clean: credits in = available + held + spent + withheld + reversed, chargeback entries and standing rows match their facts, and no transfer pays an accrual held by the rule.',
  },
  'OPS-METRICS': {
    source: 'docs/operations.md: Metrics',
    behaviour:
      'A real Prometheus scraping the admin listener sees requests by operation and face, escrow, projection positions, shards and settlements move with the driven load.',
  },
  'OPS-METRICS-FORMAT': {
    source: 'docs/operations.md: Metrics',
    behaviour:
      'The exposition passes promtool check metrics, every family is documented, and the series do not grow when ten times the agents (200) buy.',
  },
  'OPS-METRICS-BOUND': {
    source: 'docs/operations.md: What metrics cost',
    behaviour:
      "The request path's counters and histograms, counted without hashing labels, expose exactly the text prom-client's own expose for the same observations.",
  },
  'OPS-STATUS': {
    source: 'docs/operations.md: Status',
    behaviour:
      "After an actor host is killed, assay status and the survivor's metrics show the survivor holding every shard and the takeovers counted.",
  },
  'OPS-DASHBOARD': {
    source: 'docs/operations.md: Dashboard',
    behaviour:
      'The shipped Grafana dashboard covers traffic, errors, latency, shards, mailboxes, projection and settlement lag and escrow, with PromQL that promtool parses and only metrics Assay exports.',
  },
  'OPS-TRACES': {
    source: 'docs/operations.md: Traces',
    behaviour:
      "A purchase's gateway, actor, JetStream and PostgreSQL spans reach an OTLP/HTTP receiver under one trace id with the right parents, and log lines inside a span carry its trace id.",
  },
  'DEPLOY-COMPOSE': {
    source: 'docs/deploy.md: Docker Compose',
    behaviour:
      'deploy/compose.yaml runs 3 clustered JetStream NATS nodes with volumes, PostgreSQL with a volume, 2 gateways behind the only published 8080, 3 actor hosts and workers, each with a health check, real CLI roles, known and valid configuration and R3.',
  },
  'DEPLOY-K8S': {
    source: 'docs/deploy.md: Kubernetes',
    behaviour:
      'deploy/k8s runs NATS as a 3-node JetStream StatefulSet with volume claims, and gateways, actor hosts and workers as Deployments with probes on real paths and ports, resources, a termination grace above ASSAY_SHUTDOWN_GRACE_MS and PodDisruptionBudgets selecting their pods.',
  },
  'DEPLOY-BALANCER': {
    source: 'docs/deploy.md: The load balancer',
    behaviour:
      "The compose balancer's configuration names both gateways on their ports with health checks on /healthz, and HAProxy accepts it (haproxy -c).",
  },
  'DEPLOY-HAPROXY-PASSES': {
    source: 'docs/deploy.md: The load balancer',
    behaviour:
      'deploy/haproxy.cfg run by the real HAProxy before a real gateway: its health checks of the gateway pass (HTTP/1.1 with a Host, which uWS answers), and GET, a POST with a body, 47 header lines, OPTIONS and HTTP/2 reach the gateway on both frontends.',
  },
  'DEPLOY-HAPROXY-REFUSES': {
    source: 'docs/operations.md: What uWS never hands over',
    behaviour:
      'The shipped HAProxy front answers at once, on both frontends, what uWS would close at once, leave unanswered for about 10 s or read wrongly: a method other than GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS (405 with Allow), 48 or more header lines (400), two different Content-Length headers (400), HTTP/1.0 (426), a target that is not a path, no Host or two, and control characters in a header value (400).',
  },
  'DEPLOY-HAPROXY-FORWARDED': {
    source: 'docs/deploy.md: The load balancer',
    behaviour:
      "Behind the shipped HAProxy, an X-Forwarded-For sent by the client never becomes its address: the gateway's per-address limits count the address HAProxy saw and appended.",
  },
  'DEPLOY-MIGRATE': {
    source: 'docs/deploy.md: Upgrades',
    behaviour:
      'assay migrate, the upgrade step of compose and the Kubernetes Job, creates the database and applies every migration once; run again, it changes nothing.',
  },
  'DEPLOY-IMAGE': {
    source: 'docs/deploy.md: The image',
    behaviour: 'The image copies every directory the CLI loads at run time and starts the real CLI.',
  },
  'DEPLOY-TEST-SERVERS': {
    source: 'docs/deploy.md: Test servers',
    behaviour:
      'npm test uses the configured NATS and PostgreSQL when they answer, without loading testcontainers; starts pinned containers for those that do not; and fails at once, saying so, when there is no container runtime either.',
  },
  'HARDEN-BODY-ANSWER': {
    source: 'docs/operations.md: Refused bodies',
    behaviour:
      'A client still sending a body over a limit (fetch posting 8 MiB, a raw socket dripping a chunked body) reads the documented refusal with Connection: close on agent, MCP, web, context-file and sync routes, not EPIPE or ECONNRESET; a body at the limit is served; nothing changes.',
  },
  'HARDEN-BODY-BOUND': {
    source: 'docs/operations.md: Refused bodies',
    behaviour:
      'Discarding a refused body is bounded: a body declared past ASSAY_BODY_DISCARD_BYTES_MAX is answered at once, an endless one is cut off, and the gateway holds no slot and serves normally afterwards.',
  },
  'HARDEN-AUDIT': {
    source: 'docs/operations.md: Audit',
    behaviour:
      'After top-ups and released and refunded purchases assay audit exits 0 with the totals; a balance, an order state or an accrual changed in PostgreSQL is reported as exactly that row with what differs, and the exit is 2.',
  },
  'HARDEN-AUDIT-RUNNING': {
    source: 'docs/operations.md: Audit',
    behaviour:
      'The audit is clean while purchases and settlements are appended during it: it audits up to the sequence it fixed at its start.',
  },
  'HARDEN-AUDIT-DUPLICATE': {
    source: 'docs/operations.md: Audit',
    behaviour: 'A fact appended with the id of an earlier one is reported as a duplicated fact id and event id.',
  },
  'HARDEN-AUDIT-CONSERVATION': {
    source: 'docs/operations.md: Audit',
    behaviour:
      "A fact that makes money out of nothing (a balance after it larger than the balance before plus what it moves) is reported twice: as that fact's balance, and as the principal's credits in no longer equal to available + held + spent.",
  },
  'HARDEN-AUDIT-LIVE': {
    source: 'docs/operations.md: Audit',
    behaviour:
      'After live top-ups and payout runs through a crash, the audit finds each transfer the sum of its accruals, paid once, and every row matching its fact.',
  },
  'HARDEN-AUTHZ-SCOPE': {
    source: 'docs/architecture.md: Authorization',
    behaviour:
      'For every route the served OpenAPI documents give a scope, tokens of every scope set get 403 forbidden exactly when the scope the document requires is missing, and otherwise a documented status (a mutating agent call reaching validation, which changes nothing).',
  },
  'HARDEN-AUTHZ-SANDBOX-LINE': {
    source: 'docs/architecture.md: Authorization',
    behaviour:
      "Tokens of each side against every resource kind of the other side get 404 not_found on the agent routes and 401 on the account faces, no list or search of one side names the other side's ids, mint-token refuses a token of the other side of a principal's, and nothing changes.",
  },
  'HARDEN-AUTHZ-OWNERSHIP': {
    source: 'docs/architecture.md: Authorization',
    behaviour:
      "On every route that takes an id, another principal gets 404 for the owner's private resources and for every change, reads what anyone on its side may read, the owner reads its own, and nothing changes.",
  },
  'HARDEN-FUZZ': {
    source: 'docs/operations.md: Generated bad input',
    behaviour:
      "Generated bad requests on every route of the served OpenAPI documents get a documented status in the route's error shape, never a 5xx (the system is up: not even 503 unavailable), never a hang, no logged failure; afterwards every balance, order, event and stored row is unchanged.",
  },
  'HARDEN-NATS-CLUSTER': {
    source: 'docs/operations.md: Durability and replicas',
    behaviour:
      "On a 3-node JetStream cluster with R3, SIGKILL of the LEDGER leader mid-load and of the node holding the projectors' consumers: every purchase answer is 201 or 503 unavailable, purchases serve again within the stated bound, the restarted node rejoins current, the projections resume, and no purchase answered 201 is lost or applied twice.",
  },
  'PROJ-STALL-VISIBLE': {
    source: 'docs/operations.md: Stalled projections',
    behaviour:
      'While a projection is stalled (its stream ahead of it and nothing applied for longer than the stall bound), /healthz shows a projection_stalled alert, assay status marks it STALLED, and the metrics show it stalled with its lag growing; all three clear once it moves again.',
  },
  'PROJ-STALL-RECOVER': {
    source: 'docs/operations.md: Stalled projections',
    behaviour:
      "When the NATS node holding a projector's consumer dies while the stream grows, the projector drops the consumer that delivers nothing and re-creates it without waiting on the dead node, the projections catch up within the stated bound, and no fact is skipped or applied twice.",
  },
  'HARDEN-REBALANCE': {
    source: 'docs/operations.md: Rebalancing',
    behaviour:
      "With purchases running, a joining actor host takes its share, a SIGTERMed host hands its shards over by release within the lease TTL (no lease lapses), a SIGKILLed host's shards move within the lease bound; only 201 or 503 unavailable, and no purchase lost or applied twice.",
  },
  'SEC-HEADER-INJECTION': {
    source: 'docs/threat-model.md: Headers and redirects',
    behaviour:
      'A sign-in `next` holding CR, LF or another origin adds no header and plants no cookie: the redirect is re-serialised and stays on the site (raw HTTP and Chromium).',
  },
  'SEC-HEADER-WRITER': {
    source: 'docs/threat-model.md: Headers and redirects',
    behaviour:
      'The one header writer refuses a header whose name is not a token or whose name or value holds a control character: the response is answered 500 whole and nothing is injected.',
  },
  'SEC-TOKEN-KIND': {
    source: 'docs/threat-model.md: Tokens',
    behaviour:
      'An OAuth access token is told by its signed claims, not its prefix: once revoked it is refused with or without `asyo_` on /v1, MCP, the context-file API and sync; RFC 7009 revokes the bare form; a prefixed token naming no grant is refused.',
  },
  'SEC-EXCHANGE-REVOKE': {
    source: 'docs/threat-model.md: Tokens',
    behaviour:
      'Revoking an access token revokes the tokens exchanged from it and theirs; another grant is untouched, and a revoked child cannot be exchanged.',
  },
  'SEC-BAD-INPUT-DEPTH': {
    source: 'docs/threat-model.md: Bad input',
    behaviour:
      'Bodies nested 40,000 deep get the face’s bad-input error (registration, agent REST, MCP, the context-file API), never 503, and nothing is created.',
  },
  'SEC-BAD-INPUT-KEYS': {
    source: 'docs/threat-model.md: Bad input',
    behaviour:
      'Names that reach a prototype (constructor, toString, __proto__) are ordinary unknown names: unsupported_grant_type, form fields, notice codes, cookies and MCP arguments.',
  },
  'SEC-LOOPBACK-REDIRECT': {
    source: 'docs/threat-model.md: OAuth redirect URIs',
    behaviour: 'An http redirect URI must be on a literal loopback address; `localhost` is refused at registration.',
  },
  'SEC-CLIENT-ADDRESS': {
    source: 'docs/threat-model.md: Client addresses and rate limits',
    behaviour: 'Behind N trusted proxies the client address is the Nth X-Forwarded-For entry from the right.',
  },
  'SEC-PER-ADDRESS-LIMITS': {
    source: 'docs/threat-model.md: Client addresses and rate limits',
    behaviour:
      'Behind a proxy, sign-in limits hold whatever a client writes in X-Forwarded-For; sign-ups are bounded for all addresses together; device codes are bounded per address and per client, and refusals store nothing.',
  },
  'SEC-CONTENT-LENGTH': {
    source: 'docs/threat-model.md: The HTTP layer',
    behaviour:
      'A request with two different Content-Length values gets 400 and its connection closed, and changes nothing; the same value twice is served.',
  },
  'OAUTH-SIGNUP-ONCE': {
    source: 'docs/oauth.md: Accounts and sessions',
    behaviour:
      'The same sign-up form sent again signs in to the account it made (another form or password is told the email is taken, one account); password work past its own deadline hands the form back with the same submission, and the account is made.',
  },
  'OAUTH-PASSWORD-HASH': {
    source: 'docs/oauth.md: Accounts and sessions',
    behaviour:
      'Passwords are hashed with scrypt, by default at log2 N 17, r 8, p 1 with a 16-byte salt and a 32-byte key, stored as scrypt$<logN>$8$1$<salt>$<key>; a hash keeps its own cost and verifies after the configured cost changes; a sign-up stores the configured cost.',
  },
  'SPINE-DOOR-PORT': {
    source: 'docs/deploy.md: What runs',
    behaviour:
      'A gateway listens on its ports exclusively: a second process told a port in use fails to start with an error naming the port, and every connection keeps reaching the first.',
  },
  'X402-402': {
    source: 'docs/x402.md: The resource',
    behaviour:
      "An unpaid request of a listing's x402 resource answers 402 with PAYMENT-REQUIRED: exact scheme, the configured network, asset and payTo, the price at the configured rate, the token's EIP-712 domain, and a description naming the artifact, content hash, report (readable with no account, verifying offline), verdict and refund rule.",
  },
  'X402-BUY': {
    source: 'docs/x402.md: Paying',
    behaviour:
      'A real x402 client pays and receives the content whose sha256 is the content hash, PAYMENT-RESPONSE, the order id, a signed receipt and an x402 bundle that verify offline; the order is an ordinary order of the payer principal.',
  },
  'X402-REPLAY': {
    source: 'docs/x402.md: Replays and retries',
    behaviour:
      'A replayed payment signature answers its order again and settles, credits and buys nothing; two copies sent at once buy once.',
  },
  'X402-RESUME': {
    source: 'docs/x402.md: Replays and retries',
    behaviour: 'A payment settled but not bought is finished by its retry: credited once, bought once.',
  },
  'X402-PENDING': {
    source: 'docs/x402.md: Paying',
    behaviour:
      'A payment for an edition whose report is pending holds its order (503 with PAYMENT-RESPONSE and the order id), the same signature again charges nothing, and an order refunded for want of a report answers order_refunded.',
  },
  'X402-FLOOR': {
    source: "docs/x402.md: Refunds and the payer's balance",
    behaviour:
      "A paid order whose report misses the floor answers 409 order_refunded with PAYMENT-RESPONSE, and the price is on the payer principal's credit balance.",
  },
  'X402-REFUSED': {
    source: 'docs/x402.md: Paying',
    behaviour:
      'An underpayment, an overpayment, a wrong network, an expired authorization, a malformed payment, a purchase the rules refuse and an unreachable facilitator each get their documented answer and change nothing.',
  },
  'X402-DISCOVERY': {
    source: 'docs/x402.md: Discovery',
    behaviour: 'Live listings are x402 discovery items found by the search rules, each with its requirements.',
  },
  'X402-MCP': {
    source: 'docs/x402.md: MCP',
    behaviour:
      'The MCP tool answers PaymentRequired as an error result as the x402 MCP transport does, and buys with the payment in _meta["x402/payment"], answering the settlement in _meta["x402/payment-response"].',
  },
  'X402-AUDIT': {
    source: 'docs/x402.md: Money and the audit',
    behaviour: 'After x402 purchases, refunds and refusals, assay audit holds.',
  },
  'X402-OFF': {
    source: 'docs/x402.md: Configuration',
    behaviour: 'With no facilitator configured the x402 routes answer 404 and nothing is advertised.',
  },
  'X402-CONFIG': {
    source: 'docs/x402.md: Configuration',
    behaviour:
      'The settings refuse a facilitator without a pay-to address, and a network or asset that is not an EVM one.',
  },
} as const satisfies Record<string, { source: string; behaviour: string }>;

export type RequirementId = keyof typeof requirements;
