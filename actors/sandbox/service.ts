// Sandbox registration: a principal, an agent and an active test mandate with no human step, test credits from the
// principal's actor, and a bearer token. Public, so limited per client address in a window all processes share.
import type { NatsConnection } from '@nats-io/nats-core';
import {
  type Config,
  errorReply,
  type GrantSandbox,
  type Names,
  okReply,
  type RequestOf,
  type SandboxAgentT,
  type ServiceHandlers,
} from '../../contracts/index.ts';
import { countThisMinute, insertSandboxPrincipal, type Sql } from '../../storage/index.ts';
import { ensureActiveKey, signAgentToken } from '../auth/keys.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import { askInternal, internalRequest } from '../runtime/service.ts';

export const sandboxScopes = ['read:artifact', 'read:trust', 'purchase'];

/** The test mandate every sandbox agent starts with: generous, but every rule is live so agents can exercise it. */
export const sandboxMandateDefaults = {
  perItemCapCents: 50_000,
  minTrust: 0,
  minFloor: 0,
  minJudgeVersion: null,
  rejectOpenJudgeErrata: false,
} as const;

export interface SandboxDeps {
  nc: NatsConnection;
  sql: Sql;
  names: Names;
  config: Config;
  clock: Clock;
  ids: IdSource;
}

export function sandboxService(d: SandboxDeps): ServiceHandlers<'sandbox'> {
  return { registerSandboxAgent: register };

  async function register(req: RequestOf<'registerSandboxAgent'>) {
    const { count, retryAfterS } = await countThisMinute(
      d.sql,
      `sandbox:${req.clientAddress ?? 'unknown'}`,
      d.clock.nowMs(),
    );
    if (count > d.config.sandboxRegistrationsPerMinute) {
      return errorReply(
        'rate_limited',
        `at most ${d.config.sandboxRegistrationsPerMinute} sandbox registrations per minute per address`,
        retryAfterS,
      );
    }
    const at = d.clock.nowIso();
    const principalId = d.ids.uuid();
    const agentId = d.ids.uuid();
    const name = req.body.name ?? null;
    const scopes = req.body.scopes ?? sandboxScopes;
    await insertSandboxPrincipal(d.sql, { principalId, agentId, agentName: name, at });
    const grant: GrantSandbox = {
      registrationId: agentId,
      amountCents: d.config.sandboxGrantCents,
      mandate: { id: d.ids.uuid(), ...sandboxMandateDefaults, revoked: false },
    };
    const granted = await askInternal(
      d.nc,
      d.names.actorSubject('principal', principalId),
      internalRequest('sandbox.grant', grant, { requestId: req.requestId }),
      d.config.requestTimeoutMs,
    );
    // Without its credits the new principal is unusable; no token was issued, so the rows are inert.
    if (!granted.ok) return granted.reply;
    const key = await ensureActiveKey(d.sql, 'token', d.clock);
    const { token, exp } = await signAgentToken(
      key,
      {
        principalId,
        agentId,
        scopes,
        sandbox: true,
        issuer: d.config.baseUrl,
        ttlSeconds: d.config.tokenTtlSeconds,
        jti: d.ids.uuid(),
      },
      d.clock,
    );
    const body: SandboxAgentT = {
      token,
      token_type: 'Bearer',
      expires_at: new Date(exp * 1000).toISOString(),
      principal_id: principalId,
      agent_id: agentId,
      scopes,
      sandbox: true,
      balance_cents: granted.body.balance_cents,
      mandate: { ...granted.body.mandate, principalId, sandbox: true },
    };
    return okReply(201, body);
  }
}
