// Receipts are written in batches: while one INSERT is in flight the receipts of the deliveries that arrive meanwhile
// queue, and go in the next one. Each delivery still answers only once its receipt is committed; under load many
// share a commit (one WAL flush) instead of paying one each.
import { insertReceipts, type NewReceipt, type Sql } from '../../storage/index.ts';

/** Rows per INSERT at most, so one statement stays a bounded size. */
const batchRowsMax = 500;

export class ReceiptWriter {
  private queue: { row: NewReceipt; done: (err?: unknown) => void }[] = [];
  private writing = false;

  constructor(private readonly sql: Sql) {}

  /** Resolves once the receipt is committed; rejects if its batch failed. */
  write(row: NewReceipt): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!this.writing) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.writing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, batchRowsMax);
      try {
        await insertReceipts(
          this.sql,
          batch.map((b) => b.row),
        );
        for (const b of batch) b.done();
      } catch (err) {
        for (const b of batch) b.done(err);
      }
    }
    this.writing = false;
  }
}
