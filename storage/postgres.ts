// PostgreSQL: connection, database creation and migrations. Migrations are the numbered .sql files beside this
// module, applied once each, in order, under an advisory lock so concurrent starts do not race.
import { readdir, readFile } from 'node:fs/promises';
import postgres from 'postgres';
import { storableText } from '../contracts/index.ts';

export type Sql = postgres.Sql<Record<string, never>>;

const migrationsDir = new URL('./migrations/', import.meta.url);

export function openPool(url: string, max = 10): Sql {
  return postgres(url, {
    max,
    onnotice: () => {},
    // int8 columns hold cents and stream sequences, always within Number.MAX_SAFE_INTEGER.
    types: {
      bigint: { to: 20, from: [20], serialize: (x: number) => String(x), parse: (x: string) => Number(x) },
    },
  }) as unknown as Sql;
}

/** Create the database named in the URL if it does not exist (connecting to the server's `postgres` database). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const dbName = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!dbName) return;
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { max: 1, onnotice: () => {}, connect_timeout: 3 });
  try {
    const rows = await sql`SELECT 1 FROM pg_database WHERE datname = ${dbName}`;
    if (rows.length === 0) {
      try {
        await sql.unsafe(`CREATE DATABASE "${dbName.replace(/"/g, '""')}"`);
      } catch (err) {
        if ((err as { code?: string }).code !== '42P04') throw err; // created concurrently
      }
    }
  } finally {
    await sql.end({ timeout: 1 });
  }
}

/** Apply the migrations not applied yet, in order; `through` stops after the one with that number (tests). */
export async function migrate(sql: Sql, through = '999'): Promise<string[]> {
  const files = (await readdir(migrationsDir))
    .filter((f) => /^\d{3}_.+\.sql$/.test(f) && f.slice(0, 3) <= through)
    .sort();
  const applied: string[] = [];
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(hashtext('assay.migrations'))`;
    await tx`CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`;
    const done = new Set(
      (await tx<{ version: string }[]>`SELECT version FROM schema_migrations`).map((r) => r.version),
    );
    for (const file of files) {
      if (done.has(file)) continue;
      await tx.unsafe(await readFile(new URL(file, migrationsDir), 'utf8'));
      await tx`INSERT INTO schema_migrations (version) VALUES (${file})`;
      applied.push(file);
    }
  });
  return applied;
}

/**
 * Rows as one JSON text for `json_to_recordset`. Text PostgreSQL cannot hold (NUL, lone surrogates) is replaced by
 * U+FFFD, so an odd string in a fact can never stop a projection.
 */
export function jsonRows(rows: readonly unknown[]): string {
  return storableJson(rows);
}

/**
 * A value as JSON text PostgreSQL can hold (NUL and lone surrogates become U+FFFD). JSON.stringify writes both as \u
 * escapes, so the common case costs one scan of the text.
 */
export function storableJson(value: unknown): string {
  const text = JSON.stringify(value);
  if (!/\\u0000|\\ud[89a-f]/i.test(text)) return text;
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'string' ? storableText(v) : v));
}

/**
 * One column of a batch as a PostgreSQL array literal, for `unnest($1::uuid[], $2::text[], ...)`: the hot
 * projection statements pass their rows this way. PostgreSQL reads typed arrays several times faster than
 * `json_to_recordset` builds rows (it hashes every row's field names), and the literal carries no field names.
 * Text PostgreSQL cannot hold becomes U+FFFD, as in `jsonRows`. Numbers must be finite.
 */
export function arrayLiteral(values: readonly ArrayElement[]): string {
  let s = '{';
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (i > 0) s += ',';
    if (v === null || v === undefined) s += 'NULL';
    else if (typeof v === 'string') s += quotedElement(v);
    else if (typeof v === 'boolean') s += v ? 't' : 'f';
    else s += String(v);
  }
  return `${s}}`;
}

type ArrayElement = string | number | boolean | null;

/** The fields of a row type that hold one array element each. */
export type ElementKey<R> = { [K in keyof R]: R[K] extends ArrayElement ? K : never }[keyof R];

/** One field of every row, as `arrayLiteral` of that column. */
export function columnLiteral<R>(rows: readonly R[], key: ElementKey<R>): string {
  return arrayLiteral(rows.map((r) => r[key] as ArrayElement));
}

/** What an element needs besides its quotes: an escape (`"`, `\`), or a look for text PostgreSQL cannot hold. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: NUL is one of the characters looked for.
const elementNeedsWork = /["\\\u0000\ud800-\udfff]/;

/** An array element in double quotes, where only `"` and `\` are escaped (any other character stands for itself). */
function quotedElement(v: string): string {
  // One scan for the common case (ids, keys, times): nothing to escape, nothing to replace.
  if (!elementNeedsWork.test(v)) return `"${v}"`;
  return `"${storableText(v).replace(/["\\]/g, '\\$&')}"`;
}
