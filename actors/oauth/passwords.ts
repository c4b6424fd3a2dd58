// Password hashes: scrypt from node:crypto (Node's own maintained binding of OpenSSL's scrypt), N = 2^logN, r = 8,
// p = 1, a 16-byte salt and a 32-byte key, stored as `scrypt$<logN>$8$1$<salt>$<key>` so the cost can rise later
// while old hashes still verify. The work runs on libuv's thread pool, not the event loop.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

const keyBytes = 32;

function derive(password: string, salt: Buffer, logN: number, r: number, p: number): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) =>
    // maxmem must exceed 128 * N * r bytes, or OpenSSL refuses the cost.
    scrypt(password.normalize('NFKC'), salt, keyBytes, { N, r, p, maxmem: 256 * N * r }, (err, key) =>
      err ? reject(err) : resolve(key),
    ),
  );
}

export async function hashPassword(password: string, logN: number): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, logN, 8, 1);
  return `scrypt$${logN}$8$1$${salt.toString('base64url')}$${key.toString('base64url')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, logN, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), Number(logN), Number(r), Number(p));
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * A hash to check when the email is unknown, so that answer costs the same time as a wrong password (no account
 * enumeration by timing). Made once per process, at the configured cost.
 */
let decoy: Promise<string> | null = null;
export function decoyHash(logN: number): Promise<string> {
  decoy ??= hashPassword(randomBytes(16).toString('hex'), logN);
  return decoy;
}
