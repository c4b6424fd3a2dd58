// Accounts and web sessions: sign-up, sign-in (one answer for an unknown email and a wrong password, at the same
// cost), the session behind a cookie, sign-out, and what the account page shows and does.
import {
  credentialPrefixes,
  errorReply,
  isUuid,
  okReply,
  passwordMinLength,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import {
  accountByEmail,
  accountByPrincipal,
  countThisMinute,
  endWebSession,
  insertAccount,
  insertWebSession,
  oauthStore,
  webSession,
} from '../../storage/index.ts';
import type { OAuthDeps } from './deps.ts';
import { decoyHash, hashPassword, verifyPassword } from './passwords.ts';
import { newSecret, secretHash } from './secrets.ts';

type Handlers = ServiceHandlers<'oauth'>;

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const wrongCredentials = 'The email or password is not right.';

const normaliseEmail = (email: string) => email.trim().toLowerCase();

export function accountHandlers(
  d: OAuthDeps,
): Pick<
  Handlers,
  'oauth.signUp' | 'oauth.signIn' | 'oauth.session' | 'oauth.signOut' | 'oauth.account' | 'oauth.accountAction'
> {
  const { sql } = d;
  const limit = d.config.signInAttemptsPerMinute;

  /** Count an attempt in each bucket; true when any is over its limit this minute. */
  const overLimit = async (...buckets: { bucket: string; limit: number }[]) => {
    let over = false;
    for (const b of buckets) if ((await countThisMinute(sql, b.bucket, d.clock.nowMs())).count > b.limit) over = true;
    return over;
  };
  const waitAMinute = () => errorReply('rate_limited', 'Too many attempts. Wait a minute and try again.', 60);

  async function startSession(principalId: string) {
    const session = newSecret(credentialPrefixes.webSession);
    const now = d.clock.nowMs();
    await insertWebSession(sql, {
      tokenHash: session.hash,
      principalId,
      at: new Date(now).toISOString(),
      expiresAt: new Date(now + d.config.webSessionSeconds * 1000).toISOString(),
    });
    return okReply(200, { sessionToken: session.value, principalId });
  }

  return {
    async 'oauth.signUp'({ body }) {
      // Sign-up says when an email has an account (there is no email verification to hide it behind), so how fast
      // anyone can ask is bounded: per address, and for all addresses together (docs/threat-model.md).
      const buckets = [
        { bucket: `signup:addr:${body.clientAddress}`, limit },
        { bucket: 'signup:all', limit: d.config.signUpsPerMinute },
      ];
      if (await overLimit(...buckets)) return waitAMinute();
      const email = normaliseEmail(body.email);
      if (!emailPattern.test(email)) return errorReply('validation_failed', 'Enter a valid email address.');
      if (body.password.length < passwordMinLength) {
        return errorReply('validation_failed', `Use a password of at least ${passwordMinLength} characters.`);
      }
      const submission = body.submission ?? null;
      /** The account is there already: made by this very form (sent again) signs in to it, else it is taken. */
      const existing = async () => {
        const account = await accountByEmail(sql, email);
        if (!account) return null;
        const sameForm = submission !== null && account.signup_submission === submission;
        if (sameForm && (await verifyPassword(body.password, account.password_hash))) {
          return startSession(account.principal_id);
        }
        return errorReply('validation_failed', 'An account with this email exists. Sign in instead.');
      };
      const before = await existing();
      if (before) return before;
      const principalId = d.ids.uuid();
      const created = await insertAccount(sql, {
        principalId,
        webAgentId: d.ids.uuid(),
        email,
        passwordHash: await hashPassword(body.password, d.config.passwordScryptLogN),
        submission,
        at: d.clock.nowIso(),
      });
      // Taken meanwhile (by a racing copy of the same form, which signs in too, or by someone else), or this form
      // made an account already under the email it carried before it was edited.
      if (!created) {
        return (
          (await existing()) ??
          errorReply('validation_failed', 'This form already created an account. Sign in to it instead.')
        );
      }
      return startSession(principalId);
    },

    async 'oauth.signIn'({ body }) {
      const email = normaliseEmail(body.email);
      const buckets = [
        { bucket: `signin:addr:${body.clientAddress}`, limit },
        { bucket: `signin:email:${email}`, limit },
      ];
      if (await overLimit(...buckets)) return waitAMinute();
      const account = await accountByEmail(sql, email);
      // An unknown email costs one scrypt too, so neither the answer nor its time tells which case it was.
      const ok = await verifyPassword(
        body.password,
        account?.password_hash ?? (await decoyHash(d.config.passwordScryptLogN)),
      );
      if (!account || !ok) return errorReply('unauthorized', wrongCredentials);
      return startSession(account.principal_id);
    },

    async 'oauth.session'({ body }) {
      const s = await webSession(sql, secretHash(body.sessionToken), d.clock.nowIso());
      if (!s) return errorReply('unauthorized', 'not signed in');
      return okReply(200, { principalId: s.principal_id, email: s.email, webAgentId: s.web_agent_id });
    },

    async 'oauth.signOut'({ body }) {
      await endWebSession(sql, secretHash(body.sessionToken), d.clock.nowIso());
      return okReply(200, {});
    },

    async 'oauth.account'({ body }) {
      const now = d.clock.nowIso();
      const [account, clients, grants, iats] = await Promise.all([
        accountByPrincipal(sql, body.principalId),
        oauthStore.clientsOf(sql, body.principalId),
        oauthStore.grantsOf(sql, body.principalId, now),
        oauthStore.liveInitialAccessTokens(sql, body.principalId, now),
      ]);
      if (!account) return errorReply('not_found', 'no account');
      return okReply(200, {
        email: account.email,
        clients: clients.map((c) => ({
          clientId: c.client_id,
          name: c.client_name,
          redirectUris: c.redirect_uris,
          grantTypes: c.grant_types,
          createdAt: c.created_at.toISOString(),
        })),
        grants: grants.map((g) => ({
          id: g.id,
          clientId: g.client_id,
          clientName: g.client_name,
          scopes: g.scopes,
          resource: g.resource,
          createdAt: g.created_at.toISOString(),
          liveTokens: g.tokens.map((t) => ({
            jti: t.jti,
            expiresAt: new Date(t.expires_at).toISOString(),
            exchanged: t.exchanged,
          })),
        })),
        initialAccessTokens: iats.map((t) => ({
          id: t.id,
          createdAt: t.created_at.toISOString(),
          expiresAt: t.expires_at.toISOString(),
        })),
      });
    },

    async 'oauth.accountAction'({ body }) {
      const now = d.clock.nowIso();
      const id = body.id ?? '';
      const uuid = isUuid(id);
      const gone = () => errorReply('not_found', 'That is not there any more.');
      switch (body.action) {
        case 'revoke_grant': {
          if (!uuid || !(await oauthStore.revokeGrant(sql, id, 'revoked_by_person', now, body.principalId))) {
            return gone();
          }
          await d.revocations.grants([id]);
          return okReply(200, {});
        }
        case 'revoke_token': {
          const revoked = uuid ? await oauthStore.revokeAccessToken(sql, id, now, body.principalId) : [];
          if (revoked.length === 0) return gone();
          await d.revocations.tokens(revoked);
          return okReply(200, {});
        }
        case 'revoke_client': {
          if (!uuid) return gone();
          const grants = await oauthStore.revokeClient(sql, body.principalId, id, now);
          await d.revocations.grants(grants);
          return okReply(200, {});
        }
        case 'issue_initial_access_token': {
          const token = newSecret(credentialPrefixes.initialAccessToken);
          const expiresAt = new Date(d.clock.nowMs() + d.config.oauthInitialAccessTokenSeconds * 1000).toISOString();
          await oauthStore.insertInitialAccessToken(sql, {
            id: d.ids.uuid(),
            tokenHash: token.hash,
            principalId: body.principalId,
            at: now,
            expiresAt,
          });
          return okReply(200, { newInitialAccessToken: { token: token.value, expiresAt } });
        }
        case 'show_initial_access_token': {
          const token = body.token ?? '';
          const own = token
            ? await oauthStore.ownLiveInitialAccessToken(sql, body.principalId, secretHash(token), now)
            : null;
          if (!own) return gone();
          return okReply(200, { newInitialAccessToken: { token, expiresAt: own.expires_at.toISOString() } });
        }
        case 'revoke_initial_access_token': {
          if (!uuid || !(await oauthStore.revokeInitialAccessToken(sql, body.principalId, id, now))) return gone();
          return okReply(200, {});
        }
      }
    },
  };
}
