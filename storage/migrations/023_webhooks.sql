-- Webhooks (docs/webhooks.md). `webhooks` is the routing table of delivery, written by the events projection from
-- the owners' facts in stream order, so an event is matched against the registrations as they stood when it was
-- made. Each (webhook, event) pair to deliver is a row of `webhook_deliveries`, inserted in the transaction that
-- writes the event; delivery workers claim due rows, and every attempt is a row of `webhook_attempts`.
CREATE TABLE webhooks (
  id uuid PRIMARY KEY,
  owner_principal_id uuid NOT NULL,
  name text NOT NULL,
  url text NOT NULL,
  events text[] NOT NULL,
  is_active boolean NOT NULL,
  secret text NOT NULL,
  previous_secret text,
  previous_secret_until timestamptz,
  -- The LEDGER sequence of the fact that created it: events made before it are not its to deliver.
  created_seq bigint NOT NULL,
  last_seq bigint NOT NULL
);
CREATE INDEX webhooks_owner ON webhooks (owner_principal_id) WHERE is_active;

CREATE TABLE webhook_deliveries (
  webhook_id uuid NOT NULL,
  event_id text NOT NULL,
  principal_id uuid NOT NULL,
  -- pending (due at due_at), delivered (a 2xx), failed (retries spent), cancelled (the webhook went away).
  state text NOT NULL,
  -- Attempts in this round (a redelivery starts a new round at 0).
  attempts integer NOT NULL DEFAULT 0,
  due_at timestamptz NOT NULL,
  -- A worker's claim on an attempt in flight; past it, the attempt is taken to have died with its worker.
  claimed_until timestamptz,
  last_status integer,
  last_error text,
  created_at timestamptz NOT NULL DEFAULT now(),
  finished_at timestamptz,
  PRIMARY KEY (webhook_id, event_id)
);
-- A webhook's pending deliveries in due order (what a claim takes), and its attempts in flight (what bounds it).
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (webhook_id, due_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_in_flight ON webhook_deliveries (webhook_id)
  WHERE state = 'pending' AND claimed_until IS NOT NULL;

CREATE TABLE webhook_attempts (
  id bigserial PRIMARY KEY,
  webhook_id uuid NOT NULL,
  event_id text NOT NULL,
  attempt integer NOT NULL,
  at timestamptz NOT NULL,
  status integer,
  duration_ms integer NOT NULL,
  error text,
  outcome text NOT NULL
);
CREATE INDEX webhook_attempts_by_webhook ON webhook_attempts (webhook_id, id DESC);

-- Consecutive events whose every attempt failed, per webhook: the disable rule's count, kept by delivery.
CREATE TABLE webhook_health (
  webhook_id uuid PRIMARY KEY,
  failed_events integer NOT NULL DEFAULT 0,
  disabling boolean NOT NULL DEFAULT false
);
