// Password hashes as docs/oauth.md states them: scrypt at OWASP's minimum cost by default (log2 N = 17, r 8, p 1),
// stored with their cost so it can rise while old hashes verify. The test systems hash at a lower cost (their
// environment sets ASSAY_PASSWORD_SCRYPT_LOG_N); the cost a deployment gets without setting it is checked here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashPassword, verifyPassword } from '../../actors/oauth/passwords.ts';
import { loadConfig } from '../../contracts/index.ts';

test('[OAUTH-PASSWORD-HASH] unless configured, passwords are hashed with scrypt at log2 N 17, r 8, p 1, stored with their cost', async () => {
  const logN = loadConfig({}).passwordScryptLogN;
  assert.equal(logN, 17);
  const stored = await hashPassword('correct horse battery staple', logN);
  const [scheme, n, r, p, salt, key] = stored.split('$');
  assert.deepEqual([scheme, n, r, p], ['scrypt', '17', '8', '1']);
  assert.equal(Buffer.from(salt!, 'base64url').length, 16);
  assert.equal(Buffer.from(key!, 'base64url').length, 32);
  assert.equal(await verifyPassword('correct horse battery staple', stored), true);
  assert.equal(await verifyPassword('correct horse battery stapler', stored), false);
});

test('[OAUTH-PASSWORD-HASH] a hash keeps its own cost: one made at another cost still verifies, and the same password salts apart', async () => {
  const cheap = await hashPassword('correct horse battery staple', 10);
  assert.match(cheap, /^scrypt\$10\$8\$1\$/);
  assert.equal(await verifyPassword('correct horse battery staple', cheap), true);
  assert.equal(await verifyPassword('Correct horse battery staple', cheap), false);
  assert.notEqual(await hashPassword('correct horse battery staple', 10), cheap);
});
