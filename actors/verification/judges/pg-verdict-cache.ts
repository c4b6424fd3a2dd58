// The verdict cache port (verdict-cache.ts) over PostgreSQL, shared by every worker of the deployment.
import { getVerdicts, putVerdicts, type Sql } from '../../../storage/index.ts';
import type { CachedVerdict, VerdictCache, VerdictKey } from './verdict-cache.ts';

export class PgVerdictCache implements VerdictCache {
  constructor(private readonly sql: Sql) {}

  async get(keys: readonly VerdictKey[]): Promise<Map<string, CachedVerdict>> {
    return (await getVerdicts(
      this.sql,
      keys.map((k) => k.id),
    )) as Map<string, CachedVerdict>;
  }

  async put(entries: readonly { key: VerdictKey; verdict: CachedVerdict }[]): Promise<void> {
    // judge_error is never cached: the next try may get a proper answer.
    const rows = entries.filter((e) => e.verdict.state !== 'judge_error');
    await putVerdicts(
      this.sql,
      rows.map((e) => ({ key: e.key.id, verdict: e.verdict })),
    );
  }
}
