// Source text for the sandbox corpus: short passages on real technical topics, grouped by topic, source and
// section. The generator cites them as sources and derives claims from their sentences (kept, altered or borrowed
// from another topic), so the verifier has real text to judge.

export interface SourceText {
  id: string;
  title: string;
  sections: Record<string, string[]>;
}

export interface TopicText {
  topic: string;
  title: string;
  aspects: string[];
  sources: SourceText[];
}

export const corpusTopics: TopicText[] = [
  {
    topic: 'postgresql',
    title: 'PostgreSQL',
    aspects: ['indexing', 'vacuum and bloat', 'connection pooling', 'query planning'],
    sources: [
      {
        id: 'pg-docs-indexes',
        title: 'PostgreSQL documentation: Indexes',
        sections: {
          'B-tree': [
            'B-tree indexes can handle equality and range queries on data that can be sorted into some ordering.',
            'The query planner will consider using a B-tree index whenever an indexed column is involved in a comparison.',
            'B-tree indexes can also be used to retrieve data in sorted order without a separate sort step.',
          ],
          GIN: [
            'GIN indexes are inverted indexes which are appropriate for data values that contain multiple component values, such as arrays.',
            'A GIN index stores a set of key and posting list pairs, where a posting list is a set of row IDs in which the key occurs.',
            'GIN indexes are the preferred index type for full text search on tsvector columns.',
          ],
        },
      },
      {
        id: 'pg-docs-vacuum',
        title: 'PostgreSQL documentation: Routine vacuuming',
        sections: {
          'Recovering disk space': [
            'An UPDATE or DELETE of a row does not immediately remove the old version of the row.',
            'Standard VACUUM removes dead row versions in tables and indexes and marks the space available for future reuse.',
            'VACUUM FULL rewrites the entire table into a new disk file with no extra space, which requires an exclusive lock.',
          ],
          'Transaction ID wraparound': [
            'PostgreSQL transaction IDs are 32 bits wide, so a cluster wraps around after about 4 billion transactions.',
            'To avoid wraparound failures every table must be vacuumed at least once every 2 billion transactions.',
            'Autovacuum launches an aggressive vacuum when a table is older than autovacuum_freeze_max_age transactions.',
          ],
        },
      },
    ],
  },
  {
    topic: 'nats',
    title: 'NATS and JetStream',
    aspects: ['streams', 'consumers', 'key-value buckets', 'delivery guarantees'],
    sources: [
      {
        id: 'nats-docs-jetstream',
        title: 'NATS documentation: JetStream',
        sections: {
          Streams: [
            'Streams are message stores that define how messages are stored and what the limits of retention are.',
            'A stream can capture messages published to one or more subjects, including wildcard subjects.',
            'Streams can be replicated to 1, 3 or 5 servers in a cluster for durability.',
          ],
          Consumers: [
            'A consumer is a stateful view of a stream that tracks which messages were delivered and acknowledged.',
            'Pull consumers let clients request batches of messages when they are ready to process them.',
            'An ordered consumer delivers messages in stream order without acknowledgements and recreates itself on gaps.',
          ],
        },
      },
      {
        id: 'nats-docs-dedupe',
        title: 'NATS documentation: Message deduplication',
        sections: {
          'Duplicate window': [
            'JetStream deduplicates messages that carry the same Nats-Msg-Id header within the duplicate window.',
            'The default duplicate window of a stream is 2 minutes.',
            'A publish that is detected as a duplicate is acknowledged with the sequence of the original message.',
          ],
          'Expected sequences': [
            'A publisher can require the last sequence of a subject with the Nats-Expected-Last-Subject-Sequence header.',
            'If the expectation does not hold the server rejects the message with a wrong last sequence error.',
            'Expected sequences allow optimistic concurrency control on a per-subject basis.',
          ],
        },
      },
    ],
  },
  {
    topic: 'http',
    title: 'HTTP semantics',
    aspects: ['caching', 'conditional requests', 'status codes', 'idempotency'],
    sources: [
      {
        id: 'rfc9110',
        title: 'RFC 9110: HTTP Semantics',
        sections: {
          'Conditional requests': [
            'An entity tag is an opaque validator for differentiating between multiple representations of the same resource.',
            'A recipient must use the weak comparison function when comparing entity tags for If-None-Match.',
            'A server responds with 304 Not Modified when the condition of an If-None-Match GET request is false.',
          ],
          'Idempotent methods': [
            'A request method is idempotent if multiple identical requests have the same effect on the server as a single one.',
            'PUT, DELETE and the safe methods are idempotent, while POST is not idempotent.',
            'Idempotent requests can be repeated automatically if a communication failure occurs before a response is read.',
          ],
        },
      },
      {
        id: 'rfc6585',
        title: 'RFC 6585: Additional HTTP Status Codes',
        sections: {
          '429 Too Many Requests': [
            'The 429 status code indicates that the user has sent too many requests in a given amount of time.',
            'The response representations should include details explaining the condition.',
            'The response may include a Retry-After header indicating how long to wait before making a new request.',
          ],
          '428 Precondition Required': [
            'The 428 status code indicates that the origin server requires the request to be conditional.',
            'Its typical use is to avoid the lost update problem when clients modify state concurrently.',
            'Responses using this status code should explain how to resubmit the request successfully.',
          ],
        },
      },
    ],
  },
  {
    topic: 'cryptography',
    title: 'Signatures and hashing',
    aspects: ['ECDSA', 'canonical JSON', 'key rotation', 'content addressing'],
    sources: [
      {
        id: 'rfc7518',
        title: 'RFC 7518: JSON Web Algorithms',
        sections: {
          ES256: [
            'ES256 is ECDSA using the P-256 curve and the SHA-256 hash algorithm.',
            'The ECDSA signature is the concatenation of the two 32 byte integers R and S.',
            'The resulting JWS signature for ES256 is 64 bytes long before base64url encoding.',
          ],
          'Key identifiers': [
            'The kid header parameter is a hint indicating which key was used to secure the JWS.',
            'A JWK Set is a JSON object that represents a set of public keys under a keys member.',
            'Publishing retired keys in the key set lets verifiers check signatures made before a key rotation.',
          ],
        },
      },
      {
        id: 'rfc8785',
        title: 'RFC 8785: JSON Canonicalization Scheme',
        sections: {
          'Sorting of object properties': [
            'Object properties are sorted by their names encoded as UTF-16 code units.',
            'The canonical form contains no whitespace between tokens.',
            'Numbers are serialized according to the ECMAScript number serialization rules.',
          ],
          Applications: [
            'A canonical form makes it possible to hash JSON data and get the same digest on every platform.',
            'Canonicalization is a prerequisite for signing JSON documents without wrapping them in an envelope.',
            'Two JSON texts with the same data produce byte for byte identical canonical forms.',
          ],
        },
      },
    ],
  },
  {
    topic: 'rust',
    title: 'Rust async programming',
    aspects: ['runtimes', 'futures', 'cancellation', 'pinning'],
    sources: [
      {
        id: 'tokio-docs',
        title: 'Tokio documentation: the runtime',
        sections: {
          Scheduler: [
            'The multi-threaded Tokio runtime uses a work-stealing scheduler.',
            'Each worker thread keeps a local run queue and steals tasks from other workers when it is idle.',
            'Blocking operations should run on the blocking thread pool through spawn_blocking.',
          ],
          Tasks: [
            'A Tokio task is a lightweight, non-blocking unit of execution.',
            'Spawning a task returns a JoinHandle that can be awaited for the task output.',
            'Dropping a JoinHandle detaches the task, which keeps running in the background.',
          ],
        },
      },
      {
        id: 'async-book',
        title: 'Asynchronous Programming in Rust',
        sections: {
          Futures: [
            'A future is a value that may not have finished computing yet.',
            'Futures in Rust are lazy and do nothing unless they are polled.',
            'The poll method returns Poll::Ready with the output or Poll::Pending when the future is not ready.',
          ],
          Pinning: [
            'Pinning guarantees that a value will not be moved in memory.',
            'Self-referential futures generated by async blocks must be pinned before they are polled.',
            'The Unpin marker trait means a type can be moved freely even when it is pinned.',
          ],
        },
      },
    ],
  },
  {
    topic: 'kubernetes',
    title: 'Kubernetes operations',
    aspects: ['pod lifecycle', 'probes', 'rolling updates', 'resource limits'],
    sources: [
      {
        id: 'k8s-docs-pods',
        title: 'Kubernetes documentation: Pod lifecycle',
        sections: {
          Termination: [
            'When a pod is deleted the kubelet sends SIGTERM to the main process of each container.',
            'The default termination grace period is 30 seconds.',
            'If a container is still running when the grace period expires the kubelet sends SIGKILL.',
          ],
          Probes: [
            'A readiness probe decides whether a container is ready to receive traffic from services.',
            'A liveness probe decides whether a container should be restarted.',
            'A startup probe disables the other probes until the application has started.',
          ],
        },
      },
      {
        id: 'k8s-docs-deployments',
        title: 'Kubernetes documentation: Deployments',
        sections: {
          'Rolling update': [
            'A rolling update replaces pods of the old replica set with pods of the new one gradually.',
            'The maxUnavailable setting bounds how many pods can be unavailable during the update.',
            'The maxSurge setting bounds how many pods can be created above the desired number.',
          ],
          Rollback: [
            'Every change to the pod template of a deployment creates a new revision.',
            'A deployment can be rolled back to a previous revision with kubectl rollout undo.',
            'The revisionHistoryLimit field sets how many old replica sets are kept for rollback.',
          ],
        },
      },
    ],
  },
  {
    topic: 'ml-evaluation',
    title: 'Evaluating language models',
    aspects: ['benchmarks', 'contamination', 'human review', 'entailment'],
    sources: [
      {
        id: 'eval-survey',
        title: 'A survey of language model evaluation',
        sections: {
          Benchmarks: [
            'Static benchmarks measure model accuracy on a fixed set of questions with known answers.',
            'Benchmark contamination happens when test questions appear in the training data.',
            'Contaminated benchmarks overestimate how well a model generalizes to new questions.',
          ],
          'Human evaluation': [
            'Human evaluation remains the reference for open-ended generation quality.',
            'Inter-annotator agreement should be reported alongside human evaluation scores.',
            'Pairwise comparisons are often more reliable than absolute ratings from annotators.',
          ],
        },
      },
      {
        id: 'nli-primer',
        title: 'Natural language inference primer',
        sections: {
          Entailment: [
            'A premise entails a hypothesis when a human reading the premise would infer that the hypothesis is true.',
            'Natural language inference datasets label pairs as entailment, contradiction or neutral.',
            'Entailment models are used to check whether generated claims are supported by cited sources.',
          ],
          Negation: [
            'Negation words are a frequent source of errors for lexical overlap methods.',
            'A claim and its negation share almost all of their words but have opposite meanings.',
            'Numeric mismatches between a claim and its source usually indicate a contradiction.',
          ],
        },
      },
    ],
  },
  {
    topic: 'payments',
    title: 'Payments and ledgers',
    aspects: ['double-entry', 'escrow', 'idempotency keys', 'reconciliation'],
    sources: [
      {
        id: 'ledger-design',
        title: 'Designing a double-entry ledger',
        sections: {
          'Double entry': [
            'In double-entry bookkeeping every transaction debits one account and credits another by the same amount.',
            'The sum of all debits equals the sum of all credits at every point in time.',
            'Money amounts should be stored as integers in the smallest currency unit to avoid rounding errors.',
          ],
          'Two-phase transfers': [
            'A pending transfer reserves funds without moving them.',
            'A pending transfer is later posted to complete it or voided to release the reserved funds.',
            'A pending transfer must resolve exactly once, either posted or voided.',
          ],
        },
      },
      {
        id: 'stripe-idempotency',
        title: 'Stripe API reference: Idempotent requests',
        sections: {
          Keys: [
            'An idempotency key is a unique value generated by the client to recognize retries of the same request.',
            'Subsequent requests with the same key return the same result, including 500 errors.',
            'Keys are eligible to be removed from the system after they are at least 24 hours old.',
          ],
          Mismatch: [
            'The idempotency layer compares incoming parameters to those of the original request.',
            'A request that reuses a key with different parameters is rejected with an error.',
            'Idempotency keys can be up to 255 characters long.',
          ],
        },
      },
    ],
  },
  {
    topic: 'web-security',
    title: 'Web security',
    aspects: ['OAuth', 'PKCE', 'DNS rebinding', 'token handling'],
    sources: [
      {
        id: 'rfc7636',
        title: 'RFC 7636: Proof Key for Code Exchange',
        sections: {
          Protocol: [
            'The client creates a code verifier, a high-entropy cryptographic random string.',
            'The S256 code challenge is the base64url encoding of the SHA-256 hash of the code verifier.',
            'The authorization server compares the code verifier with the challenge before issuing tokens.',
          ],
          'Security considerations': [
            'PKCE protects the authorization code from interception by a malicious application.',
            'Clients should use the S256 method rather than the plain method.',
            'The code verifier must have at least 256 bits of entropy.',
          ],
        },
      },
      {
        id: 'dns-rebinding',
        title: 'DNS rebinding attacks explained',
        sections: {
          Attack: [
            'In a DNS rebinding attack a malicious page makes a hostname resolve to an internal address.',
            'The browser then sends requests to the internal service as if they came from the same origin.',
            'Services listening on localhost without authentication are common targets.',
          ],
          Defence: [
            'Servers can defend against DNS rebinding by validating the Host and Origin headers.',
            'Requiring authentication on every request also limits what a rebinding attack can do.',
            'Binding a development server to a loopback address alone does not prevent rebinding.',
          ],
        },
      },
    ],
  },
  {
    topic: 'observability',
    title: 'Observability',
    aspects: ['structured logging', 'latency percentiles', 'tracing', 'load testing'],
    sources: [
      {
        id: 'latency-notes',
        title: 'Notes on measuring latency',
        sections: {
          Percentiles: [
            'Averages hide the latency outliers that users actually notice.',
            'The 99th percentile is the latency that 99 percent of requests stay below.',
            'Percentiles from different servers cannot be averaged to get a global percentile.',
          ],
          'Coordinated omission': [
            'Coordinated omission happens when a load generator waits for slow responses before sending new requests.',
            'A closed-loop load generator understates tail latency under saturation.',
            'Open-loop load generators send requests at a fixed rate regardless of response times.',
          ],
        },
      },
      {
        id: 'logging-guide',
        title: 'A guide to structured logging',
        sections: {
          'Structured logs': [
            'Structured logs are emitted as key and value pairs instead of free text.',
            'Every log line of a request should carry the request identifier.',
            'JSON is the most common encoding for structured logs.',
          ],
          Levels: [
            'Debug logs are disabled in production because of their volume.',
            'Error logs should describe what failed and what the system did about it.',
            'Logging on the hot path should avoid formatting work when the level is disabled.',
          ],
        },
      },
    ],
  },
];
