// The skills service (docs/contexts.md, "Skills"): runs one version of a caller's skill. The owner's actor hands
// over the version (its template and the files it brings); the files are read from the projection once it holds
// the owner's latest fact, with the caller's rights (its own files, other owners' public ones); the variables must
// be exactly the template's; the rendered messages go to the skill's executor within the configured time.
import {
  errorReply,
  okReply,
  renderTemplate,
  type ServiceHandlers,
  type SkillContextUsed,
  type SkillExecution,
  skillInputBytesMax,
  type SkillMessage,
} from '../../contracts/index.ts';
import { readableContextFiles } from '../../storage/index.ts';
import { principalFactsCaughtUp } from '../ledger/caught-up.ts';
import { askInternal } from '../runtime/service.ts';
import type { WorkerServiceDeps } from '../runtime/worker-deps.ts';
import { ExecutionFailed, runnersFromConfig, type SkillRunner } from './executors.ts';

export interface SkillsServiceDeps extends WorkerServiceDeps {
  /** The runners to use instead of the configured ones (tests of the service alone). */
  runners?: Record<'render' | 'model', SkillRunner | null>;
}

const list = (names: string[]) => names.map((n) => JSON.stringify(n)).join(', ');

export async function skillsService(d: SkillsServiceDeps): Promise<ServiceHandlers<'skills'>> {
  const caughtUp = await principalFactsCaughtUp(d.nc, d.sql, d.names, d.config);
  const runners = d.runners ?? runnersFromConfig(d.config);
  return {
    async 'skill.execute'(req) {
      const started = d.clock.nowMs();
      const { id, input, variables, version } = req.body;
      const inputBytes = Buffer.byteLength(input, 'utf8');
      if (inputBytes > skillInputBytesMax) {
        return errorReply('validation_failed', `input is ${inputBytes} bytes of UTF-8; at most ${skillInputBytesMax}`);
      }
      const owner = req.caller.principalId;
      const got = await askInternal(
        d.nc,
        d.names.actorSubject('principal', owner),
        { ...req, op: 'skill.get', body: { id, ...(version === undefined ? {} : { version }) } },
        d.config.requestTimeoutMs,
        d.log,
      );
      if (!got.ok) return got.reply;
      const skill = got.body;
      const template = skill.template ?? '';

      const missing = skill.variables.filter((v) => !Object.hasOwn(variables, v));
      const extra = Object.keys(variables).filter((v) => !skill.variables.includes(v));
      if (missing.length > 0 || extra.length > 0) {
        const problems = [
          missing.length > 0 ? `missing variables ${list(missing)}` : null,
          extra.length > 0 ? `variables the template does not use ${list(extra)}` : null,
        ].filter(Boolean);
        return errorReply(
          'validation_failed',
          `${problems.join('; ')} (this version uses ${list(skill.variables) || 'none'})`,
        );
      }

      // The caller's own files as it last wrote them: the projection first catches up with its ledger.
      await caughtUp(owner);
      const rows = new Map((await readableContextFiles(d.sql, owner, skill.contexts)).map((r) => [r.id, r]));
      const gone = skill.contexts.filter((c) => !rows.has(c));
      if (gone.length > 0) {
        return errorReply(
          'not_found',
          `this skill brings context files that are neither yours nor public (deleted or made private): ${gone.join(', ')}`,
        );
      }
      const used: SkillContextUsed[] = [];
      const blocks: string[] = [];
      for (const cid of skill.contexts) {
        const r = rows.get(cid)!;
        used.push({
          id: r.id,
          name: r.name,
          slug: r.slug,
          sha256: r.content_sha256,
          updated_at: r.updated_at.toISOString(),
          owned: r.owner_principal_id === owner,
        });
        blocks.push(`<context name=${JSON.stringify(r.name)} slug="${r.slug}">\n${r.content}\n</context>`);
      }
      const system = [renderTemplate(template, variables), ...blocks].join('\n\n');
      const messages: SkillMessage[] = [
        { role: 'system', content: system },
        { role: 'user', content: input },
      ];

      const runner = runners[skill.executor];
      if (!runner) {
        return errorReply(
          'unavailable',
          'this service has no model to run skills with (the operator sets ASSAY_SKILL_MODEL_URL); change the skill to executor "render" to get the prompt instead',
        );
      }
      const budgetMs = Math.max(1, d.config.skillTimeoutMs - (d.clock.nowMs() - started));
      let answer: Awaited<ReturnType<SkillRunner['run']>>;
      try {
        answer = await runner.run(messages, AbortSignal.timeout(budgetMs));
      } catch (err) {
        if (!(err instanceof ExecutionFailed)) throw err;
        d.log?.warn({ err, requestId: req.requestId, skill: id }, 'skill execution failed');
        return errorReply(
          'unavailable',
          err.timedOut ? `the skill did not finish within ${d.config.skillTimeoutMs} ms` : err.message,
        );
      }
      const execution: SkillExecution = {
        skill: { id: skill.id, name: skill.name, version: skill.version },
        executor: skill.executor,
        model: answer.model,
        messages,
        contexts: used,
        output: answer.output,
        usage: answer.usage,
        executed_at: new Date(started).toISOString(),
        duration_ms: Math.round(d.clock.nowMs() - started),
      };
      return okReply(200, execution);
    },
  };
}
