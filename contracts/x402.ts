// The x402 rail (docs/x402.md): a paid resource per listing at `{base_url}/x402/listings/{id}/content`, the messages
// between the gateway's x402 face and the x402 service that verifies and settles through the operator's
// facilitator, and the two commands the payer's principal actor takes (a dry run of the purchase rules, and the
// credit of a settled payment). The wire format itself (PAYMENT-REQUIRED, PAYMENT-SIGNATURE, PAYMENT-RESPONSE) is
// the protocol's own package's (@x402/core): the service encodes the headers, the gateway copies them.
import Type, { type Static } from 'typebox';
import type { ErrorCode } from './errors.ts';
import * as S from './schemas.ts';

/** Where the rail is served on `{base_url}`. */
export const x402PathPrefix = '/x402/';
/** The x402 protocol version this rail speaks (the v2 HTTP transport). */
export const x402Version = 2;

const Format = Type.Union([Type.Literal('md'), Type.Literal('pdf')]);

/** The mandate every x402 payer principal buys under, from the operator's settings (ASSAY_X402_MANDATE_*). */
export const X402Mandate = Type.Object({
  perItemCapCents: Type.Integer({ minimum: 0 }),
  minTrust: Type.Number({ minimum: 0, maximum: 1 }),
  minFloor: Type.Number({ minimum: 0, maximum: 1 }),
});
export type X402MandateT = Static<typeof X402Mandate>;

/** The unpaid request: what the resource costs, as a PAYMENT-REQUIRED header and the same object as the body. */
export const X402OfferCommand = Type.Object({
  listingId: Type.String(),
  format: Format,
  /** The URL the client asked for, as the resource's `url`. */
  resourceUrl: Type.String(),
});
export const X402OfferReply = Type.Object({
  paymentRequiredHeader: Type.String(),
  paymentRequired: Type.Unknown(),
});

export const X402PayCommand = Type.Object({
  listingId: Type.String(),
  format: Format,
  resourceUrl: Type.String(),
  /** The PAYMENT-SIGNATURE header as the client sent it (base64 JSON of a PaymentPayload). */
  paymentSignature: Type.String(),
});

/**
 * What a paid request answers: a status, the x402 headers to send (already encoded), the order it bought, and
 * either the delivery (200) or a refusal, worded by the gateway as the typed error object with `extra` beside it.
 */
export const X402PayReply = Type.Object({
  status: Type.Integer(),
  paymentRequiredHeader: Type.Union([Type.String(), Type.Null()]),
  paymentResponseHeader: Type.Union([Type.String(), Type.Null()]),
  orderId: Type.Union([Type.String(), Type.Null()]),
  /** 402: the PaymentRequired object (with its `error`), also sent as the body. */
  paymentRequired: Type.Unknown(),
  refusal: Type.Union([
    Type.Null(),
    Type.Object({
      code: Type.Unsafe<ErrorCode>(Type.String()),
      message: Type.String(),
      retryAfterS: Type.Optional(Type.Integer({ minimum: 0 })),
      /** Fields added to the typed error object (the order, the payer's balance, the evidence bundle). */
      extra: Type.Record(Type.String(), Type.Unknown()),
    }),
  ]),
  /** 200: the delivery as GET /v1/orders/{id}/content answers it, with the signed receipt and the x402 bundle. */
  delivery: Type.Unknown(),
});
export type X402PayReplyT = Static<typeof X402PayReply>;

/** Discovery ("bazaar") query: the query string as sent; the service reads it by the search's own schema. */
export const X402DiscoveryQuery = Type.Record(Type.String(), Type.String());
export const X402DiscoveryReply = Type.Object({
  x402Version: Type.Literal(x402Version),
  items: Type.Array(Type.Unknown()),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
});

/** The purchase rules run for an x402 payment before anything is settled: would this purchase go through? */
export const X402CheckCommand = Type.Object({
  listingId: Type.String(),
  format: Format,
  /** The payment's worth in cents, counted as available credits for the check. */
  paymentCents: Type.Integer({ minimum: 0 }),
  mandate: X402Mandate,
});
export const X402CheckReply = Type.Object({ priceCents: Type.Integer({ minimum: 0 }) });

/**
 * A settled x402 payment, credited to the payer's principal once (keyed by `paymentId`, which names the
 * authorization's network, asset, payer and nonce). Carries the operator's mandate when the principal's differs.
 */
export const X402CreditCommand = Type.Object({
  paymentId: Type.String({ minLength: 1, maxLength: 180 }),
  amountCents: Type.Integer({ minimum: 1 }),
  network: Type.String(),
  payer: Type.String(),
  transaction: Type.String(),
  mandate: X402Mandate,
});
export const X402CreditReply = Type.Object({ balance_cents: Type.Integer(), topup_id: S.Uuid() });
