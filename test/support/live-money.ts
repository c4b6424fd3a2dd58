// Live money as a person meets it (docs/money.md), for tests against a system whose processor is the local Stripe
// stand-in (stripe-processor.ts): sign up on the web, save a card on the processor's checkout page, top up with a
// live agent token, read the balance.
import assert from 'node:assert/strict';
import { signUp, type WebJar } from './oauth.ts';
import type { StripeProcessor } from './stripe-processor.ts';
import { eventually, type TestSystem } from './system.ts';
import { mintToken } from './tokens.ts';

export const buyerScopes = ['read:artifact', 'read:trust', 'purchase', 'manage:mandate'];

export interface LivePerson {
  jar: WebJar;
  principalId: string;
  token: string;
}

/** A person who signed up on the web, with a live agent token of their principal. */
export async function livePerson(sys: TestSystem, email: string, scopes = buyerScopes): Promise<LivePerson> {
  const jar = await signUp(sys.baseUrl, email);
  const page = await (await jar.get('/account')).text();
  const principalId = /Principal id<\/dt><dd><code>([0-9a-f-]{36})<\/code>/.exec(page)?.[1];
  assert.ok(principalId, 'the account page shows the principal id');
  return { jar, principalId, token: await mintToken(sys.config, { principalId, sandbox: false, scopes }) };
}

/** The account page's "Save a card": to the processor's checkout, where the person submits `card`. */
export async function saveCard(
  processor: StripeProcessor,
  p: LivePerson,
  card: 'pm_card_visa' | 'pm_card_chargeDeclined' | 'pm_card_authenticationRequired',
): Promise<void> {
  const res = await p.jar.post('/account/card', {});
  assert.equal(res.status, 303, await res.text());
  const checkout = new URL(res.headers.get('location')!);
  assert.equal(checkout.origin, new URL(processor.url).origin, 'the person is sent to the processor');
  const sessionId = [...checkout.pathname.split('/')].find((s) => s.startsWith('cs_'));
  assert.ok(sessionId, `a checkout session in ${checkout}`);
  processor.completeCheckout(sessionId, card);
  await eventually('the card saved on the account page', async () => {
    const page = await (await p.jar.get('/account')).text();
    return /ending in \d{4}/.test(page) ? page : undefined;
  });
}

export const balanceOf = async (sys: TestSystem, p: { token: string }) =>
  (await sys.call('GET', '/v1/balance', { token: p.token })).body.balance_cents as number;

export const topUp = (sys: TestSystem, p: { token: string }, credits: number, key: string) =>
  sys.call('POST', '/v1/topups', { token: p.token, body: { credits }, key });
