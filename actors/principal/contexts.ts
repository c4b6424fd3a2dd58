// A principal's context files (docs/contexts.md). The owner's actor is their one writer: every create, change and
// delete is one fact on the principal's ledger (`context_saved`, `context_deleted`), which is also where their
// events come from, so a change and its event can never disagree. The actor keeps each file's record and the
// sequence of the fact that holds its current text; reads come from here too (the text read back from that fact),
// so a read right after a write sees it. Slugs are unique per owner because one mailbox hands them out.
import { createHash } from 'node:crypto';
import {
  type BusRequest,
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
import { askThen, type Decision } from '../runtime/host.ts';
import { factBase, type PrincipalDeps } from './deps.ts';
import type { HeldContext, PrincipalState } from './state.ts';
import { derivedId } from '../shared/ids.ts';

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
  return { fact, reply: okReply(201, contextView(record, b.content, true, null)) };
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
  // A published file's new text becomes its artifact's next edition, right after this change commits.
  const followUp = held.artifact && p.content !== undefined ? syncRequest(req, before.id) : undefined;
  return { fact, reply: okReply(200, ownView({ ...held, record }, content)), ...(followUp ? { followUp } : {}) };
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
  return { fact, reply: okReply(200, ownView(held, null)) };
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
  return { reply: okReply(200, ownView(held, content)) };
}

/** The owner's files, newest first. */
export function listContexts(state: PrincipalState, req: RequestOf<'context.list'>): Decision<LedgerFact> {
  const all = [...state.contexts.values()].reverse();
  const items = all.slice(req.body.offset, req.body.offset + req.body.limit).map((h) => ownView(h, null));
  return { reply: okReply(200, { items, total: all.length }) };
}

/** The current text of a file: read back from the fact that last set it. */
async function textOf(d: PrincipalDeps, state: PrincipalState, id: string): Promise<string | null> {
  const held = state.contexts.get(id);
  if (!held) return null;
  const fact = await d.loadFact(state.principalId, held.contentSeq);
  return fact?.type === 'context_saved' && fact.context.id === id && fact.content !== undefined ? fact.content : null;
}

/** The owner's view of a file: with its artifact, and whether the artifact's newest edition holds its text. */
function ownView(held: HeldContext, content: string | null) {
  const artifact = held.artifact
    ? { id: held.artifact.id, edition_current: held.artifact.contentSha256 === held.record.contentSha256 }
    : null;
  return contextView(held.record, content, true, artifact);
}

const syncRequest = (req: BusRequest, id: string): BusRequest => ({
  ...req,
  op: 'context.sync_edition',
  idempotency: undefined,
  body: { id },
});

/** The catalog artifact a file is published as, and the edition its text makes: the same ids however often asked. */
const artifactIdOf = (principalId: string, contextId: string) => derivedId(principalId, 'context-artifact', contextId);
const editionIdOf = (principalId: string, contextId: string, sha256: string) =>
  derivedId(principalId, 'context-edition', contextId, sha256);

/**
 * Publish a file to the catalog as an artifact whose title, description and text are the file's (its first
 * edition is verified like any other), and link the two; a file already published answers as it is.
 */
export async function publishContext(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'context.publish'>,
): Promise<Decision<LedgerFact>> {
  const held = state.contexts.get(req.body.id);
  if (!held) return { reply: errorReply('not_found', noSuchContext) };
  // Published already: answer it, first bringing its edition up to date if a change's follow-up was lost.
  if (held.artifact) return syncEdition(d, state, { ...req, op: 'context.sync_edition', body: { id: req.body.id } });
  const content = await textOf(d, state, held.record.id);
  if (content === null) return { reply: errorReply('unavailable', 'the file could not be read; retry', 1) };
  const r = held.record;
  const artifactId = artifactIdOf(state.principalId, r.id);
  const editionId = editionIdOf(state.principalId, r.id, r.contentSha256);
  const { topics, floor } = req.body.publish;
  const command: RequestOf<'catalog.publish_artifact'>['body'] = {
    artifactId,
    editionId,
    request: {
      title: r.name,
      content,
      // An empty description leaves the one the text's front matter may declare.
      ...(r.description === '' ? {} : { description: r.description }),
      ...(topics === undefined ? {} : { topics }),
      ...(floor === undefined ? {} : { floor }),
    },
  };
  return askThen(
    d.names.serviceSubject('catalog'),
    { ...req, op: 'catalog.publish_artifact', body: command },
    (reply) => {
      if (!reply.ok) return { reply: reply.reply };
      const fact = syncedFact(d, state, req.caller.sandbox, r, artifactId, editionId);
      const linked = { ...held, artifact: { id: artifactId, contentSha256: r.contentSha256 } };
      return { fact, reply: okReply(201, ownView(linked, null)) };
    },
  );
}

/**
 * Make a published file's current text its artifact's newest edition. Runs as the follow-up of a change of the
 * text; the edition's id derives from the file and its text, so a repeat (or a change and its undo) is harmless.
 */
export async function syncEdition(
  d: PrincipalDeps,
  state: PrincipalState,
  req: RequestOf<'context.sync_edition'>,
): Promise<Decision<LedgerFact>> {
  const held = state.contexts.get(req.body.id);
  if (!held) return { reply: errorReply('not_found', noSuchContext) };
  const r = held.record;
  if (!held.artifact || held.artifact.contentSha256 === r.contentSha256)
    return { reply: okReply(200, ownView(held, null)) };
  const content = await textOf(d, state, r.id);
  if (content === null) return { reply: errorReply('unavailable', 'the file could not be read; retry', 1) };
  const artifactId = held.artifact.id;
  const editionId = editionIdOf(state.principalId, r.id, r.contentSha256);
  const command: RequestOf<'catalog.publish_edition'>['body'] = {
    artifactId,
    editionId,
    request: { content, title: r.name, ...(r.description === '' ? {} : { description: r.description }) },
  };
  return askThen(
    d.names.serviceSubject('catalog'),
    { ...req, op: 'catalog.publish_edition', body: command },
    (reply) => {
      if (!reply.ok) return { reply: reply.reply };
      const fact = syncedFact(d, state, req.caller.sandbox, r, artifactId, editionId);
      return {
        fact,
        reply: okReply(200, ownView({ ...held, artifact: { id: artifactId, contentSha256: r.contentSha256 } }, null)),
      };
    },
  );
}

function syncedFact(
  d: PrincipalDeps,
  state: PrincipalState,
  sandbox: boolean,
  r: ContextRecord,
  artifactId: string,
  editionId: string,
): LedgerFact {
  return {
    ...factBase(d, state.principalId, sandbox, state.availableCents),
    type: 'context_artifact_synced',
    contextId: r.id,
    artifactId,
    editionId,
    contentSha256: r.contentSha256,
  };
}
