// The context-file API's contract: the records the principal actor keeps and its facts carry, the request bodies
// of the routes, and what the routes answer (docs/contexts.md). Not an agent route: errors are `{error, message}`.
import Type, { type Static } from 'typebox';
import { Topics, Uuid } from './schemas.ts';

/** Content is stored as text; a file larger than this (UTF-8 bytes) is refused with 400. */
export const contextContentBytesMax = 256 * 1024;
/** The start of the content a list shows, in characters. */
export const contextPreviewChars = 200;

/** A context file as its owner's actor keeps it and its facts carry it (the content itself is in the fact). */
export const ContextRecord = Type.Object({
  id: Uuid(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  isPublic: Type.Boolean(),
  contentSha256: Type.String(),
  contentBytes: Type.Integer({ minimum: 0 }),
  preview: Type.String(),
  createdAt: Type.String(),
  updatedAt: Type.String(),
});
export type ContextRecord = Static<typeof ContextRecord>;

const Name = Type.String({ minLength: 1, maxLength: 200, description: 'Shown to people; the slug derives from it.' });
const Description = Type.String({ maxLength: 2000 });
const Content = Type.String({ description: `The file's text, at most ${contextContentBytesMax} UTF-8 bytes.` });

export const ContextCreateBody = Type.Object(
  { name: Name, content: Content, description: Type.Optional(Description) },
  { additionalProperties: false },
);
export const ContextPatchBody = Type.Object(
  {
    name: Type.Optional(Name),
    content: Type.Optional(Content),
    description: Type.Optional(Description),
    is_public: Type.Optional(
      Type.Boolean({ description: 'true publishes it (context.published); false makes it private again.' }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

/** `content` in a list: what it is, without the text. */
export const ContextContentSummary = Type.Object({
  format: Type.Literal('text'),
  bytes: Type.Integer(),
  sha256: Type.String(),
  preview: Type.String({ description: `The first ${contextPreviewChars} characters.` }),
});

/** A published file's artifact: its id, and whether its newest edition holds the file's text yet. */
export const ContextArtifact = Type.Object({
  id: Uuid(),
  edition_current: Type.Boolean({
    description: "false for the moment between a change of the file's text and its new edition.",
  }),
});
export type ContextArtifact = Static<typeof ContextArtifact>;

/** Publishing a file to the catalog: what the artifact adds to the file (its title and text are the file's). */
export const ContextPublishBody = Type.Object(
  {
    topics: Type.Optional(Topics),
    floor: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  },
  { additionalProperties: false },
);
export type ContextPublishBody = Static<typeof ContextPublishBody>;
export const ContextPublishCommand = Type.Object({ id: Type.String(), publish: ContextPublishBody });

/** A context file as the API shows it: `content` is the text on one file, a summary in a list. */
export const ContextView = Type.Object({
  id: Uuid(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  content: Type.Union([Type.String(), ContextContentSummary]),
  is_public: Type.Boolean(),
  owned: Type.Boolean({ description: "false: another principal's public file." }),
  /** The owner's view only: the catalog artifact the file was published as, or null. */
  artifact: Type.Optional(Type.Union([ContextArtifact, Type.Null()])),
  created_at: Type.String(),
  updated_at: Type.String(),
});
export type ContextView = Static<typeof ContextView>;

/** The API's view of a record: with its text, or (in a list) a summary of it. */
export function contextView(
  r: ContextRecord,
  content: string | null,
  owned: boolean,
  artifact?: ContextArtifact | null,
): ContextView {
  return {
    id: r.id,
    name: r.name,
    slug: r.slug,
    description: r.description,
    content: content ?? { format: 'text', bytes: r.contentBytes, sha256: r.contentSha256, preview: r.preview },
    is_public: r.isPublic,
    owned,
    ...(artifact === undefined ? {} : { artifact }),
    created_at: r.createdAt,
    updated_at: r.updatedAt,
  };
}

// Internal commands to the owner's principal actor (the caller is the owner).
export const ContextListCommand = Type.Object({
  offset: Type.Integer({ minimum: 0 }),
  limit: Type.Integer({ minimum: 1, maximum: 100 }),
});
export const ContextListReply = Type.Object({ items: Type.Array(ContextView), total: Type.Integer() });
export const ContextIdCommand = Type.Object({ id: Type.String() });
export const ContextPatchCommand = Type.Object({ id: Type.String(), patch: ContextPatchBody });

/** The slug of a name: lower-case ASCII letters, digits and single dashes; `context` when nothing is left. */
export function slugOf(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80)
    .replace(/-+$/, '');
  return slug === '' ? 'context' : slug;
}
