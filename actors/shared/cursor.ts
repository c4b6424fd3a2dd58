// Opaque page cursors: base64url of `<kind>:<position>`. Clients must treat them as opaque; the kind prefix keeps a
// cursor of one list from being accepted by another. A cursor comes back from the client, so whatever it decodes to
// is checked before it reaches a query: a forged one is a `validation_failed`, never a database error.
import { errorReply } from '../../contracts/index.ts';

export function encodeCursor(kind: string, position: number | string): string {
  return Buffer.from(`${kind}:${position}`).toString('base64url');
}

/** The raw position text in a cursor of `kind`, or null when it is malformed or belongs to another list. */
function positionText(kind: string, cursor: string): string | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0 || text.slice(0, colon) !== kind) return null;
  const pos = text.slice(colon + 1);
  return pos.length > 0 && pos.length <= 100 ? pos : null;
}

/** A sequence or offset cursor: a whole number from 0 to 2^53 - 1 (fits a bigint and a JS number); null if not. */
export function decodeNumberCursor(kind: string, cursor: string): number | null {
  const pos = positionText(kind, cursor);
  if (pos === null || !/^\d{1,16}$/.test(pos)) return null;
  const n = Number(pos);
  return Number.isSafeInteger(n) ? n : null;
}

/**
 * A ledger position (storage/ledger-projection.ts, LedgerPosition): `<seq>` for part 0, the form every earlier
 * ledger cursor had, or `<seq>.1` for a settlement recorded with its hold.
 */
export function decodeLedgerCursor(cursor: string): { seq: number; part: 0 | 1 } | null {
  const pos = positionText('ledger', cursor);
  const m = pos === null ? null : /^(\d{1,16})(\.1)?$/.exec(pos);
  if (!m) return null;
  const seq = Number(m[1]);
  return Number.isSafeInteger(seq) ? { seq, part: m[2] ? 1 : 0 } : null;
}

export function encodeLedgerCursor(p: { seq: number; part: 0 | 1 }): string {
  return encodeCursor('ledger', p.part === 0 ? p.seq : `${p.seq}.1`);
}

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Latest time a cursor may name: the end of year 9999, inside both JavaScript's and PostgreSQL's range. */
const cursorTimeMaxMs = Date.parse('9999-12-31T23:59:59.999Z');

/** A `(created time, id)` keyset cursor, `<ms>/<uuid>`; null unless both are valid. */
export function decodeTimeIdCursor(kind: string, cursor: string): { createdAt: Date; id: string } | null {
  const pos = positionText(kind, cursor);
  const m = pos === null ? null : /^(\d{1,15})\/(.+)$/.exec(pos);
  if (!m) return null;
  const ms = Number(m[1]);
  if (ms > cursorTimeMaxMs || !uuidPattern.test(m[2]!)) return null;
  return { createdAt: new Date(ms), id: m[2]! };
}

export function encodeTimeIdCursor(kind: string, createdAt: Date, id: string): string {
  return encodeCursor(kind, `${createdAt.getTime()}/${id}`);
}

/** The refusal of a cursor this list did not hand out. */
export const badCursor = (kind: string) =>
  errorReply('validation_failed', `cursor is not a ${kind} cursor from this API; start again without one`);
