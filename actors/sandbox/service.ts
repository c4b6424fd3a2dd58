// Sandbox registration: a principal, an agent and an active test mandate with no human step, test credits from the
// principal's actor, and a bearer token. Public, so limited per client address in a window all processes share.
// And an account's test mode: the account's own sandbox principal (made on first use, with the same credits and
// mandate), whose agents and tokens the person issues on the account page. It is a principal of its own, so its test
// credits live on their own ledger subject and never mix with the account's live ones.
import {
  accountSandboxAgentsMax,
  errorReply,
  type GrantSandbox,
  okReply,
  type RequestOf,
  type SandboxAgentT,
  type ServiceHandlers,
  internalRequest,
} from '../../contracts/index.ts';
import {
  accountSandbox,
  countThisMinute,
  ensureAccountSandbox,
  insertSandboxAgent,
  insertSandboxPrincipal,
  sandboxAgentsOf,
} from '../../storage/index.ts';
import { ensureActiveKey, signAgentToken } from '../auth/keys.ts';
import type { IdSource } from '../runtime/clock.ts';
import { askInternal } from '../runtime/service.ts';
import type { WorkerServiceDeps } from '../runtime/worker-deps.ts';

export const sandboxScopes = ['read:artifact', 'read:trust', 'purchase'];

/** The test mandate every sandbox agent starts with: generous, but every rule is live so agents can exercise it. */
export const sandboxMandateDefaults = {
  perItemCapCents: 50_000,
  minTrust: 0,
  minFloor: 0,
  minJudgeVersion: null,
  rejectOpenJudgeErrata: false,
} as const;

export interface SandboxDeps extends WorkerServiceDeps {
  ids: IdSource;
}

export function sandboxService(d: SandboxDeps): ServiceHandlers<'sandbox'> {
  return { registerSandboxAgent: register, 'sandbox.account': accountView, 'sandbox.account_token': accountToken };

  /** Credits and the test mandate of a new sandbox principal, once per registration id (a retry grants nothing more). */
  function grant(principalId: string, registrationId: string, requestId: string) {
    const g: GrantSandbox = {
      registrationId,
      amountCents: d.config.sandboxGrantCents,
      mandate: { id: d.ids.uuid(), ...sandboxMandateDefaults, revoked: false },
    };
    return askInternal(
      d.nc,
      d.names.actorSubject('principal', principalId),
      internalRequest('sandbox.grant', g, { requestId }),
      d.config.requestTimeoutMs,
    );
  }

  async function sign(principalId: string, agentId: string, scopes: string[]) {
    const key = await ensureActiveKey(d.sql, 'token', d.clock);
    return signAgentToken(
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
  }

  async function accountView(req: RequestOf<'sandbox.account'>) {
    const sandboxPrincipalId = await accountSandbox(d.sql, req.body.principalId);
    const agents =
      sandboxPrincipalId === null ? [] : await sandboxAgentsOf(d.sql, sandboxPrincipalId, accountSandboxAgentsMax);
    return okReply(200, {
      sandboxPrincipalId,
      agents: agents.map((a) => ({ id: a.id, name: a.name, createdAt: a.created_at.toISOString() })),
    });
  }

  async function accountToken(req: RequestOf<'sandbox.account_token'>) {
    const at = d.clock.nowIso();
    const principalId = await ensureAccountSandbox(d.sql, req.body.principalId, d.ids.uuid(), at);
    // Keyed by the sandbox principal: every token the account issues shares the one grant of test credits, and a
    // first use that failed after its link was made grants on the next.
    const granted = await grant(principalId, principalId, req.requestId);
    if (!granted.ok) return granted.reply;
    const { agentId } = req.body;
    const before = await sandboxAgentsOf(d.sql, principalId, accountSandboxAgentsMax);
    const again = before.find((a) => a.id === agentId);
    if (!again && before.length >= accountSandboxAgentsMax) {
      return errorReply(
        'validation_failed',
        `a test mode holds at most ${accountSandboxAgentsMax} sandbox agents; tokens of the existing ones keep working`,
      );
    }
    // The agent id comes from the form: sent again (a reload re-posts it), it names the agent it made, which gets a
    // fresh token rather than a second agent. An id of anyone else's agent is refused as unknown.
    const agent = await insertSandboxAgent(d.sql, { agentId, principalId, name: req.body.name, at });
    if (agent.principalId !== principalId) return errorReply('not_found', 'no agent of this test mode has this id');
    const scopes = [...sandboxScopes];
    const { token, exp } = await sign(principalId, agentId, scopes);
    return okReply(agent.made ? 201 : 200, {
      sandboxPrincipalId: principalId,
      agentId,
      name: agent.name ?? req.body.name,
      token,
      expiresAt: new Date(exp * 1000).toISOString(),
      scopes,
    });
  }

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
    const granted = await grant(principalId, agentId, req.requestId);
    // Without its credits the new principal is unusable; no token was issued, so the rows are inert.
    if (!granted.ok) return granted.reply;
    const { token, exp } = await sign(principalId, agentId, scopes);
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
