// The webhooks service (docs/webhooks.md): the URL rule, asked by the principal actor before it records a URL, and
// the owner's view of its deliveries' attempts.
import { errorReply, okReply, type ServiceHandlers } from '../../contracts/index.ts';
import { rearmEvent, type Sql, webhookAttempts } from '../../storage/index.ts';
import { type OutboundOptions, resolveTarget } from '../shared/outbound-fetch.ts';

export function webhooksService(d: { sql: Sql; sender: OutboundOptions }): ServiceHandlers<'webhooks'> {
  return {
    async 'webhook.check_url'(req) {
      const target = await resolveTarget(req.body.url, d.sender);
      if (!target.ok) return errorReply('validation_failed', `url: ${target.problem}`);
      return okReply(200, { url: req.body.url });
    },
    async 'webhook.redeliver'(req) {
      const rearmed = await rearmEvent(d.sql, req.caller.principalId, req.body.eventId);
      if (rearmed === null) return errorReply('not_found', 'no event of yours has this id');
      return okReply(201, { id: req.body.eventId, rearmed: rearmed > 0 });
    },
    async 'webhook.attempts'(req) {
      const rows = await webhookAttempts(d.sql, req.caller.principalId, req.body.id, req.body.limit);
      return okReply(200, {
        items: rows.map((r) => ({
          event_id: r.event_id,
          event_type: r.event_type,
          attempt: r.attempt,
          at: r.at.toISOString(),
          status: r.status,
          duration_ms: r.duration_ms,
          error: r.error,
          outcome: r.outcome,
        })),
      });
    },
  };
}
