// Opaque page cursors: base64url of `<kind>:<position>`. Clients must treat them as opaque; the kind prefix keeps a
// cursor of one list from being accepted by another.
export function encodeCursor(kind: string, position: number): string {
  return Buffer.from(`${kind}:${position}`).toString('base64url');
}

/** The position in a cursor of `kind`, or null when the cursor is malformed or belongs to another list. */
export function decodeCursor(kind: string, cursor: string): number | null {
  const text = Buffer.from(cursor, 'base64url').toString('utf8');
  const [k, pos, ...rest] = text.split(':');
  if (k !== kind || rest.length > 0 || !pos || !/^\d{1,15}$/.test(pos)) return null;
  return Number(pos);
}
