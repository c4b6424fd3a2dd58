// A principal's skills (docs/contexts.md, "Skills"): versioned prompt templates. Like context files, every create,
// change and delete is one fact on the owner's ledger, written by this actor; each save is the skill's next version
// and keeps the template's text in its fact, so every version stays executable and the actor holds only the
// sequence of each version's fact. Execution is the skills service's (actors/skills/), which asks this actor for
// the version to run.
import { createHash } from 'node:crypto';
import {
  type BusReply,
  errorReply,
  type LedgerFact,
  okReply,
  type RequestOf,
  type SkillRecord,
  skillTemplateBytesMax,
  skillView,
  templateVariables,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import type { PrincipalState } from './state.ts';

const noSuchSkill = 'no skill of yours has this id';

function templateFields(template: string): { problem: string } | Pick<SkillRecord, 'variables' | 'templateSha256'> {
  const bytes = Buffer.byteLength(template, 'utf8');
  if (bytes > skillTemplateBytesMax)
    return { problem: `template is ${bytes} bytes of UTF-8; at most ${skillTemplateBytesMax}` };
  return {
    variables: templateVariables(template),
    templateSha256: createHash('sha256').update(template, 'utf8').digest('hex'),
  };
}

export function createSkill(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'skill.create'>,
): Decision<LedgerFact> {
  const b = req.body;
  const t = templateFields(b.template);
  if ('problem' in t) return { reply: errorReply('validation_failed', t.problem) };
  const at = d.clock.nowIso();
  const skill: SkillRecord = {
    id: d.ids.uuid(),
    name: b.name,
    description: b.description ?? '',
    version: 1,
    executor: b.executor ?? 'render',
    contextIds: b.contexts ?? [],
    ...t,
    createdAt: at,
    updatedAt: at,
  };
  return saved(d, state, req.caller.sandbox, skill, b.template, 201);
}

export async function updateSkill(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'skill.update'>,
): Promise<Decision<LedgerFact>> {
  const held = state.skills.get(req.body.id);
  if (!held) return { reply: errorReply('not_found', noSuchSkill) };
  const p = req.body.patch;
  const template = p.template ?? (await templateOf(d, state, req.body.id, held.record.version));
  if (template === null) return { reply: errorReply('unavailable', 'the skill could not be read; retry', 1) };
  const t = templateFields(template);
  if ('problem' in t) return { reply: errorReply('validation_failed', t.problem) };
  const before = held.record;
  const skill: SkillRecord = {
    ...before,
    name: p.name ?? before.name,
    description: p.description ?? before.description,
    executor: p.executor ?? before.executor,
    contextIds: p.contexts ?? before.contextIds,
    ...t,
    version: before.version + 1,
    updatedAt: d.clock.nowIso(),
  };
  return saved(d, state, req.caller.sandbox, skill, template, 200);
}

function saved(
  d: PrincipalDeps,
  state: PrincipalState,
  sandbox: boolean,
  skill: SkillRecord,
  template: string,
  status: 200 | 201,
): Decision<LedgerFact> {
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, sandbox, state.availableCents),
    type: 'skill_saved',
    skill,
    template,
  };
  return { fact, reply: okReply(status, skillView(skill, template)) };
}

export function deleteSkill(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'skill.delete'>,
): Decision<LedgerFact> {
  const held = state.skills.get(req.body.id);
  if (!held) return { reply: errorReply('not_found', noSuchSkill) };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, req.caller.sandbox, state.availableCents),
    type: 'skill_deleted',
    skill: held.record,
  };
  return { fact, reply: okReply(200, skillView(held.record, null)) };
}

/** The owner's skills, newest first, without their templates. */
export function listSkills(state: PrincipalState, req: RequestOf<'skill.list'>): Decision<LedgerFact> {
  const all = [...state.skills.values()].reverse();
  const items = all.slice(req.body.offset, req.body.offset + req.body.limit).map((h) => skillView(h.record, null));
  return { reply: okReply(200, { items, total: all.length }) };
}

/** One version of a skill (the newest by default), with its template. */
export async function getSkill(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'skill.get'>,
): Promise<Decision<LedgerFact>> {
  const found = await version(d, state, req.body.id, req.body.version);
  if ('refused' in found) return { reply: found.refused };
  return { reply: okReply(200, skillView(found.record, found.template)) };
}

async function version(
  d: PrincipalDeps,
  state: PrincipalState,
  id: string,
  wanted: number | undefined,
): Promise<{ record: SkillRecord; template: string } | { refused: BusReply }> {
  const held = state.skills.get(id);
  if (!held) return { refused: errorReply('not_found', noSuchSkill) };
  const v = wanted ?? held.record.version;
  if (v > held.record.version) {
    return { refused: errorReply('not_found', `this skill has versions 1 to ${held.record.version}`) };
  }
  const fact = await d.loadFact(state.principalId, held.versionSeqs[v - 1]!);
  if (fact?.type !== 'skill_saved' || fact.skill.id !== id) {
    return { refused: errorReply('unavailable', 'the skill could not be read; retry', 1) };
  }
  return { record: fact.skill, template: fact.template };
}

async function templateOf(d: PrincipalDeps, state: PrincipalState, id: string, v: number): Promise<string | null> {
  const found = await version(d, state, id, v);
  return 'template' in found ? found.template : null;
}
