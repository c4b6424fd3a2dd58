// The signatures of a webhook delivery (docs/webhooks.md, Delivery). Two schemes over the same bytes, so a receiver
// can use whichever it has code for:
// - `X-Webhook-Signature`: lower-case hex HMAC-SHA256 of the body, keyed with the whole secret string (the spec's
//   header); `X-Webhook-Signature-Previous` the same with the previous secret while a rotation's overlap lasts. The
//   body carries the attempt's time (`sent_at`, delivery.ts), so this signature covers it and a replay is refusable.
// - Standard Webhooks: `webhook-id`, `webhook-timestamp` and `webhook-signature` = `v1,<base64 HMAC-SHA256 of
//   "id.timestamp.body">`, keyed with the secret's bytes (the base64 after `whsec_`), space-separated per secret.
import { createHmac } from 'node:crypto';
import { webhookSecretPrefix } from '../../contracts/index.ts';

export interface SigningSecrets {
  secret: string;
  /** The secret before a rotation, while its overlap lasts. */
  previous: string | null;
}

const hexSignature = (secret: string, body: string) => createHmac('sha256', secret).update(body, 'utf8').digest('hex');

const standardSignature = (secret: string, id: string, timestamp: number, body: string) =>
  `v1,${createHmac('sha256', Buffer.from(secret.slice(webhookSecretPrefix.length), 'base64'))
    .update(`${id}.${timestamp}.${body}`, 'utf8')
    .digest('base64')}`;

export function signatureHeaders(
  eventId: string,
  timestampS: number,
  body: string,
  s: SigningSecrets,
): Record<string, string> {
  const secrets = s.previous ? [s.secret, s.previous] : [s.secret];
  return {
    'x-webhook-id': eventId,
    'x-webhook-timestamp': String(timestampS),
    'x-webhook-signature': hexSignature(s.secret, body),
    ...(s.previous ? { 'x-webhook-signature-previous': hexSignature(s.previous, body) } : {}),
    'webhook-id': eventId,
    'webhook-timestamp': String(timestampS),
    'webhook-signature': secrets.map((k) => standardSignature(k, eventId, timestampS, body)).join(' '),
  };
}
