// Operator commands for judge errata. An operator CLI rather than an API route: opening an erratum changes what
// every mandate with reject_open_judge_errata may buy, so it stays off the network surface entirely.
import { parseArgs } from 'node:util';
import { judgeModel, judgeVersions, randomIds, systemClock } from '../actors/index.ts';
import { type Config, names } from '../contracts/index.ts';
import { closeErratum, openErratum } from '../storage/index.ts';
import { openDatabase, openNats, StartupError } from './roles.ts';

export async function errataCommand(config: Config, args: string[]): Promise<number> {
  const [action, ...rest] = args;
  const sql = await openDatabase(config);
  try {
    if (action === 'open') {
      const { values } = parseArgs({
        args: rest,
        options: {
          title: { type: 'string' },
          description: { type: 'string', default: '' },
          'judge-versions': { type: 'string' },
          'judge-model': { type: 'string', default: judgeModel },
        },
      });
      const versions = (values['judge-versions'] ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);
      if (!values.title || versions.length === 0) {
        throw new StartupError('errata open needs --title and --judge-versions (comma-separated)');
      }
      const unknown = values['judge-model'] === judgeModel ? versions.filter((v) => !judgeVersions.includes(v)) : [];
      if (unknown.length > 0)
        throw new StartupError(`unknown judge versions: ${unknown.join(', ')} (known: ${judgeVersions.join(', ')})`);
      const id = randomIds.uuid();
      await openErratum(sql, {
        id,
        title: values.title,
        description: values.description,
        judgeModel: values['judge-model'],
        judgeVersions: versions,
        at: systemClock.nowIso(),
      });
      await noticeErrataChanged(config);
      console.log(id);
      return 0;
    }
    if (action === 'close') {
      const id = rest[0];
      if (!id) throw new StartupError('errata close needs the erratum id');
      if (!(await closeErratum(sql, id, systemClock.nowIso()))) {
        console.error(`no open erratum ${id}`);
        return 1;
      }
      await noticeErrataChanged(config);
      console.log(`closed ${id}`);
      return 0;
    }
    if (action === 'list') {
      const rows = await sql`SELECT id, state, judge_model, judge_versions, title FROM errata ORDER BY opened_at DESC`;
      for (const r of rows)
        console.log(`${r.id}  ${r.state.padEnd(6)}  ${r.judge_model}@${r.judge_versions.join(',')}  ${r.title}`);
      return 0;
    }
    throw new StartupError('usage: assay errata open|close|list');
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/**
 * Tell actor hosts to drop their cached artifact quotes, so purchases see the change at once. Without NATS the
 * change still takes effect within ASSAY_QUOTE_TTL_MS.
 */
async function noticeErrataChanged(config: Config): Promise<void> {
  try {
    const nc = await openNats(config, 'assay-errata');
    nc.publish(names(config.namespace).notices.errata);
    await nc.drain();
  } catch (err) {
    console.error(
      `warning: could not notify actor hosts (${(err as Error).message}); purchases see the change within ASSAY_QUOTE_TTL_MS`,
    );
  }
}
