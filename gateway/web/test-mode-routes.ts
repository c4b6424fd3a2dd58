// Test mode on the account page: issue a sandbox agent token for the account's own sandbox principal (made, with its
// test credits and test mandate, the first time). The token is shown once, in this answer, and never put in a URL.
import { randomUUID } from 'node:crypto';
import { isUuid, textProblem } from '../../contracts/index.ts';
import { accountForm, renderAccount } from './page-routes.ts';
import type { WebRoute } from './route.ts';

/** Longest name a sandbox agent may have (the form's `maxlength`). */
const sandboxAgentNameMax = 200;

export function testModeRoutes(): WebRoute[] {
  return [
    accountForm('/account/test-mode/agents', async (ctx, req, session, form) => {
      const name = (form.name ?? '').trim();
      const error =
        name.length === 0 || name.length > sandboxAgentNameMax
          ? `Give the sandbox agent a name of 1 to ${sandboxAgentNameMax} characters.`
          : textProblem(name) === null
            ? null
            : 'The name contains a character that cannot be kept (NUL): remove it.';
      if (error !== null) return renderAccount(ctx, req, session, { error, status: 400 });
      // The form's own agent id: sent again, it gets a token for the agent it made instead of a second agent.
      const agentId = form.agent_id && isUuid(form.agent_id) ? form.agent_id : randomUUID();
      const r = await ctx.ask(
        'sandbox.account_token',
        { principalId: session.principalId, agentId, name },
        { requestId: req.requestId },
      );
      if (!r.ok) {
        const e = r.reply.error;
        if (e.code !== 'validation_failed' && e.code !== 'not_found')
          throw new Error(`issuing a sandbox token refused: ${e.message}`);
        return renderAccount(ctx, req, session, {
          error: `${e.message}.`,
          status: e.code === 'not_found' ? 404 : 400,
        });
      }
      return renderAccount(ctx, req, session, {
        notice: 'Sandbox agent token issued. Copy it now: it is not shown again.',
        newSandboxToken: { name: r.body.name, token: r.body.token, expiresAt: r.body.expiresAt, scopes: r.body.scopes },
      });
    }),
  ];
}
