// Opaque page cursors: base64url of `<kind>:<position>`. Clients must treat them as opaque; the kind prefix keeps a
// cursor of one list from being accepted by another.
export function encodeCursor(kind: string, position: number | string): string {
  return Buffer.from(`${kind}:${position}`).toString('base64url');
}

/** The numeric position in a cursor of `kind`, or null when it is malformed or belongs to another list. */
export function decodeCursor(kind: string, cursor: string): number | null {
  const pos = decodeCursorText(kind, cursor);
  return pos !== null && /^\d{1,15}$/.test(pos) ? Number(pos) : null;
}

/** The raw position text in a cursor of `kind`, or null. */
export function decodeCursorText(kind: string, cursor: string): string | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0 || text.slice(0, colon) !== kind) return null;
  const pos = text.slice(colon + 1);
  return pos.length > 0 && pos.length <= 100 ? pos : null;
}
