// OKF, the Open Knowledge Format: how `GET {web_url}/export/okf` writes every public context file (docs/contexts.md,
// The OKF export). JSON Lines: a header, one line per public file, an end line. The schemas here define the format
// and the builders below write its exact bytes: the gateway writes the header and end lines with them; the file
// lines are written by PostgreSQL (storage/okf-export.ts), held byte-equal to `okfContextLine` by a test.
import Type, { type Static } from 'typebox';
import { Uuid } from './schemas.ts';

/** The format's version, in the header line and the tag; a change to any line's fields is a new version. */
export const okfVersion = 1;
export const okfMediaType = 'application/x-ndjson';
/** Where the gateway serves the export, on `{web_url}`. */
export const okfExportPath = '/export/okf';

/**
 * A page the gateway asks the ledger service for: at most this many files, and no file starts past this many
 * bytes of content, so a page stays near half a MiB whatever the files' sizes (a file is at most 256 KiB).
 */
export const okfPageRowsMax = 500;
export const okfPageContentBytesMax = 512 * 1024;
/** Exports one gateway process streams at once; more wait (503 with Retry-After). Each holds at most two pages. */
export const okfExportsPerGatewayMax = 16;

const Iso = Type.String({ format: 'date-time', description: 'ISO 8601 UTC, with milliseconds.' });
const Tag = (description = 'The export’s entity tag (the ETag header without its quotes).') =>
  Type.String({ pattern: `^okf${okfVersion}\\.[0-9a-f]{12}\\.[0-9]+$`, description });

export const OkfHeader = Type.Object(
  {
    type: Type.Literal('header'),
    okf: Type.Literal(okfVersion),
    source: Type.String({ description: 'The web URL the export was taken from.' }),
    tag: Tag(),
  },
  { additionalProperties: false },
);

/** One public context file. Its owner is not part of it: publishing a file publishes the file, not its account. */
export const OkfContext = Type.Object(
  {
    type: Type.Literal('context'),
    id: Uuid(),
    name: Type.String({ minLength: 1, maxLength: 200 }),
    slug: Type.String({ pattern: '^[a-z0-9]+(-[a-z0-9]+)*$' }),
    description: Type.String({ maxLength: 2000 }),
    content: Type.String(),
    sha256: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'SHA-256 of the content’s UTF-8 bytes, hex.' }),
    bytes: Type.Integer({ minimum: 0, description: 'Length of the content in UTF-8 bytes.' }),
    created_at: Iso,
    updated_at: Iso,
  },
  { additionalProperties: false },
);

export const OkfEnd = Type.Object(
  {
    type: Type.Literal('end'),
    count: Type.Integer({ minimum: 0, description: 'How many context lines came before.' }),
    tag: Tag('The tag when the export ended: the header’s when no public file changed meanwhile.'),
  },
  { additionalProperties: false },
);

/** Any line of an export. */
export const OkfLine = Type.Union([OkfHeader, OkfContext, OkfEnd]);

export type OkfHeaderT = Static<typeof OkfHeader>;
export type OkfContextT = Static<typeof OkfContext>;
export type OkfEndT = Static<typeof OkfEnd>;

/** The tag of the public files' state: the version of the format, the projection's epoch and its change count. */
export function okfTag(epoch: string, changes: string | number): string {
  return `okf${okfVersion}.${epoch.replaceAll('-', '').slice(0, 12)}.${changes}`;
}

// Each builder writes its line's fields in the schema's order, newline included, as JSON.stringify escapes them.
export function okfHeaderLine(source: string, tag: string): string {
  const line: OkfHeaderT = { type: 'header', okf: okfVersion, source, tag };
  return `${JSON.stringify(line)}\n`;
}

export function okfContextLine(f: Omit<OkfContextT, 'type'>): string {
  const line: OkfContextT = {
    type: 'context',
    id: f.id,
    name: f.name,
    slug: f.slug,
    description: f.description,
    content: f.content,
    sha256: f.sha256,
    bytes: f.bytes,
    created_at: f.created_at,
    updated_at: f.updated_at,
  };
  return `${JSON.stringify(line)}\n`;
}

export function okfEndLine(count: number, tag: string): string {
  const line: OkfEndT = { type: 'end', count, tag };
  return `${JSON.stringify(line)}\n`;
}

// The ledger service's side (contracts/internal.ts): the tag, and pages of file lines keyed by id.
export const OkfTagReply = Type.Object({ tag: Tag() });
export const OkfPageCommand = Type.Object({
  /** The last id of the previous page; null for the first. */
  after: Type.Union([Uuid(), Type.Null()]),
});
/**
 * A page is a raw-bytes reply (`okfMediaType`): this head as one JSON line, then its files' lines exactly as the
 * export writes them, so the gateway passes them on without parsing them. A page with no files ends the export.
 */
export const OkfPageHead = Type.Object({
  count: Type.Integer({ minimum: 0 }),
  last: Type.Union([Uuid(), Type.Null()]),
});
export type OkfPageHeadT = Static<typeof OkfPageHead>;
