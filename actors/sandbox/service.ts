// Sandbox registration: a principal, an agent and an active test mandate with no human step, test credits from the
// principal's actor, and a bearer token. Public, so limited per client address in a window all processes share.
import {
  type BusReply,
  type BusRequest,
  type Config,
  errorReply,
  type MandateRecord,
  type Names,
  okReply,
  type SandboxAgentT,
} from '../../contracts/index.ts';
import type { NatsConnection } from '@nats-io/nats-core';
import { countRateWindow, insertSandboxPrincipal, pruneRateWindows, type Sql } from '../../storage/index.ts';
import { ensureActiveKey, signAgentToken } from '../auth/keys.ts';
import { type GrantSandbox, principalOps } from '../principal/principal.ts';
import type { Clock, IdSource } from '../runtime/clock.ts';
import { busRequest } from '../runtime/service.ts';

export const sandboxScopes = ['read:artifact', 'read:trust', 'purchase'];

/** The test mandate every sandbox agent starts with: generous, but every rule is live so agents can exercise it. */
export const sandboxMandateDefaults = {
  perItemCapCents: 50_000,
  minTrust: 0,
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

export function sandboxService(d: SandboxDeps) {
  return async (req: BusRequest): Promise<BusReply> => {
    if (req.op !== 'registerSandboxAgent')
      return errorReply('not_found', `the sandbox service has no operation ${req.op}`);
    const nowMs = d.clock.nowMs();
    const windowStart = new Date(nowMs - (nowMs % 60_000));
    const count = await countRateWindow(d.sql, `sandbox:${req.clientAddress ?? 'unknown'}`, windowStart);
    // Windows older than the previous minute decide nothing any more; keep the table from growing.
    await pruneRateWindows(d.sql, new Date(windowStart.getTime() - 60_000));
    if (count > d.config.sandboxRegistrationsPerMinute) {
      const retryAfterS = Math.ceil((windowStart.getTime() + 60_000 - nowMs) / 1000);
      return errorReply(
        'rate_limited',
        `at most ${d.config.sandboxRegistrationsPerMinute} sandbox registrations per minute per address`,
        retryAfterS,
      );
    }
    const at = d.clock.nowIso();
    const principalId = d.ids.uuid();
    const agentId = d.ids.uuid();
    const requested = req.body as { name?: string; scopes?: string[] } | null;
    const name = requested?.name ?? null;
    const scopes = requested?.scopes ?? sandboxScopes;
    await insertSandboxPrincipal(d.sql, { principalId, agentId, agentName: name, at });
    const grant: GrantSandbox = {
      registrationId: agentId,
      amountCents: d.config.sandboxGrantCents,
      mandate: { id: d.ids.uuid(), ...sandboxMandateDefaults, revoked: false },
    };
    const granted = await busRequest(
      d.nc,
      d.names.actorSubject('principal', principalId),
      { op: principalOps.grantSandbox, requestId: req.requestId, caller: null, params: {}, query: {}, body: grant },
      d.config.requestTimeoutMs,
    );
    // Without its credits the new principal is unusable; no token was issued, so the rows are inert.
    if (!granted.ok) return granted;
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
      balance_cents: (granted.body as { balance_cents: number }).balance_cents,
      mandate: { ...(granted.body as { mandate: MandateRecord }).mandate, principalId, sandbox: true },
    };
    return okReply(201, body);
  };
}
