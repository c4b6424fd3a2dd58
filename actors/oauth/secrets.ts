// Credentials the OAuth server and web sign-in hand out: random, prefixed (contracts/oauth.ts), stored only as their
// sha256. And the two small derivations the protocol needs: PKCE's S256 and device user codes.
import { createHash, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';

/** A new secret with its prefix, and the hash it is stored and looked up by. */
export function newSecret(prefix: string): { value: string; hash: string } {
  const value = `${prefix}${randomBytes(32).toString('base64url')}`;
  return { value, hash: secretHash(value) };
}

export function secretHash(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** RFC 7636 4.2: BASE64URL(SHA256(ASCII(code_verifier))). */
export function s256(verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** Constant-time comparison of two strings (different lengths compare unequal at once: lengths are not secret). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/**
 * RFC 8628 6.1: 8 characters from 20 consonants (no vowels, so no words; no digits, so no 0/O or 1/I), shown as
 * XXXX-XXXX: 20^8 = 2.6e10 codes against an attacker limited to a few guesses a minute.
 */
const userCodeAlphabet = 'BCDFGHJKLMNPQRSTVWXZ';
export function newUserCode(): string {
  let code = '';
  for (let i = 0; i < 8; i++) code += userCodeAlphabet[randomInt(userCodeAlphabet.length)];
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** What a person typed, as a stored user code: case and dashes and spaces forgiven; null if it cannot be one. */
export function normaliseUserCode(typed: string): string | null {
  const letters = typed.toUpperCase().replace(/[\s-]/g, '');
  if (letters.length !== 8 || [...letters].some((c) => !userCodeAlphabet.includes(c))) return null;
  return `${letters.slice(0, 4)}-${letters.slice(4)}`;
}
