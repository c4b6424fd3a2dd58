// Sign-up is never reported failed when it worked: the same form sent again (after its answer was lost to a busy
// machine) signs in to the account it made, and slow password work gets its own deadline, with the form handed back
// (same submission) when even that passes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { WebJar } from '../support/oauth.ts';
import { eventually, startSystem, type TestSystem } from '../support/system.ts';

let sys: TestSystem;
const password = 'correct horse battery staple';

before(async () => {
  // A cost other than the test systems' default, to see the configured one stored.
  sys = await startSystem({ ASSAY_PASSWORD_SCRYPT_LOG_N: '11' });
});
after(async () => {
  await sys.stop();
});

/** The submission id of the sign-up form on a page. */
const submissionOf = (html: string) => /name="submission" value="([0-9a-f-]{36})"/.exec(html)?.[1];

test('[OAUTH-SIGNUP-ONCE] the same sign-up form sent twice signs in to the account it made; another form is told the email is taken', async () => {
  const jar = new WebJar(sys.baseUrl);
  const form = await (await jar.get('/signup')).text();
  const submission = submissionOf(form);
  assert.ok(submission, 'the sign-up form carries a submission id');
  const send = (j: WebJar, fields: Record<string, string>) =>
    j.post('/signup', { email: 'once@example.com', password, next: '/account', ...fields });
  const first = await send(jar, { submission });
  assert.equal(first.status, 303);
  // The answer was lost; the person sends the same form again from another tab (no session cookie).
  const again = new WebJar(sys.baseUrl);
  const second = await send(again, { submission });
  assert.equal(second.status, 303, 'the same form signs in instead of failing');
  assert.ok(again.cookies.has('assay_session'));
  assert.equal(second.headers.get('location'), `${sys.config.webUrl}/account`);
  // Another form, or the same form with another password, is told the account exists; nothing more is made.
  const other = new WebJar(sys.baseUrl);
  const taken = await send(other, { submission: submissionOf(await (await other.get('/signup')).text())! });
  assert.equal(taken.status, 400);
  assert.match(await taken.text(), /account with this email exists/);
  const wrong = await send(new WebJar(sys.baseUrl), { submission, password: 'another password entirely' });
  assert.equal(wrong.status, 400);
  assert.equal(
    (await sys.sql`SELECT count(*)::int AS n FROM accounts WHERE email = 'once@example.com'`)[0]!.n,
    1,
    'one account',
  );
  const [stored] = await sys.sql<{ password_hash: string }[]>`
    SELECT password_hash FROM accounts WHERE email = 'once@example.com'`;
  assert.match(stored!.password_hash, /^scrypt\$11\$8\$1\$/, 'hashed at the configured cost');
});

test('[OAUTH-SIGNUP-ONCE] password work past its deadline hands the form back with the same submission, and the account is made', async () => {
  // A hash far slower than the page's deadline: the answer is lost, the work is not.
  const slow = await startSystem({ ASSAY_PASSWORD_SCRYPT_LOG_N: '20', ASSAY_PASSWORD_WORK_TIMEOUT_MS: '1000' });
  try {
    const jar = new WebJar(slow.baseUrl);
    const submission = submissionOf(await (await jar.get('/signup')).text())!;
    const res = await jar.post('/signup', { email: 'slow@example.com', password, next: '/account', submission });
    assert.equal(res.status, 503);
    const html = await res.text();
    assert.match(html, /Send the form again: if your account was made, this signs you in/);
    assert.equal(submissionOf(html), submission, 'the form handed back is the same submission');
    assert.match(html, /value="slow@example.com"/);
    await eventually(
      'the account to be made',
      async () => {
        const [row] = await slow.sql`SELECT signup_submission FROM accounts WHERE email = 'slow@example.com'`;
        return row ? row : undefined;
      },
      60_000,
    );
  } finally {
    await slow.stop();
  }
});
