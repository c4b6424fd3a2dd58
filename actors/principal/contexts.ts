// A principal's context files (docs/contexts.md). The owner's actor is their one writer: every create, change and
// delete is one fact on the principal's ledger (`context_saved`, `context_deleted`), which is also where their
// events come from, so a change and its event can never disagree. The actor keeps each file's record and the
// sequence of the fact that holds its current text; reads come from here too (the text read back from that fact),
// so a read right after a write sees it. Slugs are unique per owner because one mailbox hands them out.
import { createHash } from 'node:crypto';
import {
  type ContextRecord,
  contextView,
  contextContentBytesMax,
  contextPreviewChars,
  errorReply,
  type LedgerFact,
  okReply,
  type RequestOf,
  slugOf,
} from '../../contracts/index.ts';
import type { Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import type { PrincipalState } from './state.ts';

const noSuchContext = 'no context file of yours has this id';

/** Size refusal, worded for the person who sent it; null when the text fits. */
function contentProblem(content: string): string | null {
  const bytes = Buffer.byteLength(content, 'utf8');
  return bytes > contextContentBytesMax
    ? `content is ${bytes} bytes of UTF-8; at most ${contextContentBytesMax}`
    : null;
}

const contentFields = (content: string) => ({
  contentSha256: createHash('sha256').update(content, 'utf8').digest('hex'),
  contentBytes: Buffer.byteLength(content, 'utf8'),
  preview: [...content].slice(0, contextPreviewChars).join(''),
});

/** The name's slug, made unique among the owner's other files with -2, -3, ... */
function uniqueSlug(state: PrincipalState, name: string, self: string | null): string {
  const base = slugOf(name);
  let slug = base;
  for (let n = 2; ; n++) {
    const holder = state.contextSlugs.get(slug);
    if (holder === undefined || holder === self) return slug;
    slug = `${base}-${n}`;
  }
}

export function createContext(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'context.create'>,
): Decision<LedgerFact> {
  const b = req.body;
  const problem = contentProblem(b.content);
  if (problem) return { reply: errorReply('validation_failed', problem) };
  const at = d.clock.nowIso();
  const record: ContextRecord = {
    id: d.ids.uuid(),
    name: b.name,
    slug: uniqueSlug(state, b.name, null),
    description: b.description ?? '',
    isPublic: false,
    ...contentFields(b.content),
    createdAt: at,
    updatedAt: at,
  };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, req.caller.sandbox, state.availableCents),
    type: 'context_saved',
    change: 'created',
    context: record,
    wasPublic: null,
    content: b.content,
  };
  return { fact, reply: okReply(201, contextView(record, b.content, true)) };
}

export async function updateContext(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'context.update'>,
): Promise<Decision<LedgerFact>> {
  const held = state.contexts.get(req.body.id);
  if (!held) return { reply: errorReply('not_found', noSuchContext) };
  const p = req.body.patch;
  if (p.content !== undefined) {
    const problem = contentProblem(p.content);
    if (problem) return { reply: errorReply('validation_failed', problem) };
  }
  const before = held.record;
  const record: ContextRecord = {
    ...before,
    name: p.name ?? before.name,
    slug: p.name === undefined ? before.slug : uniqueSlug(state, p.name, before.id),
    description: p.description ?? before.description,
    isPublic: p.is_public ?? before.isPublic,
    ...(p.content === undefined ? {} : contentFields(p.content)),
    updatedAt: d.clock.nowIso(),
  };
  const content = p.content ?? (await textOf(d, state, before.id));
  if (content === null) return { reply: errorReply('unavailable', 'the file could not be read; retry', 1) };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, req.caller.sandbox, state.availableCents),
    type: 'context_saved',
    change: 'updated',
    context: record,
    wasPublic: before.isPublic,
    ...(p.content === undefined ? {} : { content: p.content }),
  };
  return { fact, reply: okReply(200, contextView(record, content, true)) };
}

export function deleteContext(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'context.delete'>,
): Decision<LedgerFact> {
  const held = state.contexts.get(req.body.id);
  if (!held) return { reply: errorReply('not_found', noSuchContext) };
  const fact: LedgerFact = {
    ...factBase(d, state.principalId, req.caller.sandbox, state.availableCents),
    type: 'context_deleted',
    context: held.record,
  };
  return { fact, reply: okReply(200, contextView(held.record, null, true)) };
}

export async function getContext(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'context.get'>,
): Promise<Decision<LedgerFact>> {
  const held = state.contexts.get(req.body.id);
  if (!held) return { reply: errorReply('not_found', noSuchContext) };
  const content = await textOf(d, state, held.record.id);
  if (content === null) return { reply: errorReply('unavailable', 'the file could not be read; retry', 1) };
  return { reply: okReply(200, contextView(held.record, content, true)) };
}

/** The owner's files, newest first. */
export function listContexts(state: PrincipalState, req: RequestOf<'context.list'>): Decision<LedgerFact> {
  const all = [...state.contexts.values()].reverse();
  const items = all
    .slice(req.body.offset, req.body.offset + req.body.limit)
    .map((h) => contextView(h.record, null, true));
  return { reply: okReply(200, { items, total: all.length }) };
}

/** The current text of a file: read back from the fact that last set it. */
async function textOf(d: PrincipalDeps, state: PrincipalState, id: string): Promise<string | null> {
  const held = state.contexts.get(id);
  if (!held) return null;
  const fact = await d.loadFact(state.principalId, held.contentSeq);
  return fact?.type === 'context_saved' && fact.context.id === id && fact.content !== undefined ? fact.content : null;
}
