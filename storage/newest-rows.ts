// A projected record as the newest fact of a batch leaves it: saved, to be upserted, or deleted. The writers of
// such batches (context-files.ts, webhooks.ts) split them the same way: the rows to upsert, the ids to delete.

type Deleted = { kind: 'deleted'; id: string };
type Saved<R> = Extract<R, { kind: 'saved' }>;

const isSaved = <R extends { kind: string }>(r: R): r is Saved<R> => r.kind === 'saved';

/** The saved records of a batch as `rowOf` makes them, in order, and the ids of the deleted ones. */
export function savedAndDeleted<R extends { kind: 'saved' } | Deleted, Row>(
  rows: readonly R[],
  rowOf: (r: Saved<R>) => Row,
): { saved: Row[]; deleted: string[] } {
  return {
    saved: rows.filter(isSaved).map((r) => rowOf(r)),
    deleted: rows.flatMap((r) => (r.kind === 'deleted' ? [r.id] : [])),
  };
}
