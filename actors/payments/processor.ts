// The payment processor's client: the official `stripe` SDK, its API version pinned, pointed at Stripe or (for
// tests and laptops) at a local processor that speaks the same protocol (STRIPE_API_BASE). Absent without a key:
// every live-money call then answers 503 saying the processor is not configured.
import Stripe from 'stripe';
import type { Config } from '../../contracts/index.ts';

/** The API version every request is made with; the webhook endpoint at the processor must be set to the same. */
export const processorApiVersion = '2026-10-28.endive' as const;

export type Processor = Stripe;

export function processorOf(config: Config): Processor | null {
  if (!config.stripeSecretKey) return null;
  const base = config.stripeApiBase ? new URL(config.stripeApiBase) : null;
  return new Stripe(config.stripeSecretKey, {
    apiVersion: processorApiVersion,
    // Every POST carries our own idempotency key, so the SDK's retries of a lost answer never charge twice.
    maxNetworkRetries: 2,
    timeout: 20_000,
    ...(base
      ? {
          host: base.hostname,
          port: Number(base.port || (base.protocol === 'https:' ? 443 : 80)),
          protocol: base.protocol === 'https:' ? ('https' as const) : ('http' as const),
        }
      : {}),
  });
}

export const isProcessorError = (err: unknown): err is Stripe.errors.StripeError =>
  err instanceof Stripe.errors.StripeError;
