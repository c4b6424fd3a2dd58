// The OAuth server's records (migration 017): initial access tokens, clients, grants, authorization codes, refresh
// tokens, issued access tokens and device codes. Every secret arrives here hashed. Single-use rules (a code, a
// refresh token, a device code) are one conditional UPDATE each, so two racing requests cannot both win.
import type postgres from 'postgres';
import type { Sql } from './postgres.ts';

// Initial access tokens (registration) ----------------------------------------------------------------------------

export async function insertInitialAccessToken(
  sql: Sql,
  t: { id: string; tokenHash: string; principalId: string; at: string; expiresAt: string },
): Promise<void> {
  await sql`INSERT INTO oauth_initial_access_tokens (id, token_hash, principal_id, created_at, expires_at)
            VALUES (${t.id}, ${t.tokenHash}, ${t.principalId}, ${t.at}, ${t.expiresAt})`;
}

/** The principal a live initial access token belongs to (not revoked, expired or spent), or null. */
export async function initialAccessTokenPrincipal(sql: Sql, tokenHash: string, now: string): Promise<string | null> {
  const rows = await sql<{ principal_id: string }[]>`
    SELECT principal_id FROM oauth_initial_access_tokens
    WHERE token_hash = ${tokenHash} AND revoked_at IS NULL AND expires_at > ${now} AND used_at IS NULL`;
  return rows[0]?.principal_id ?? null;
}

/** A live initial access token of the principal, by its hash: its id and expiry, or null (to show it once). */
export async function ownLiveInitialAccessToken(sql: Sql, principalId: string, tokenHash: string, now: string) {
  const rows = await sql<{ id: string; expires_at: Date }[]>`
    SELECT id, expires_at FROM oauth_initial_access_tokens
    WHERE token_hash = ${tokenHash} AND principal_id = ${principalId} AND revoked_at IS NULL AND expires_at > ${now}
      AND used_at IS NULL`;
  return rows[0] ?? null;
}

export async function liveInitialAccessTokens(sql: Sql, principalId: string, now: string) {
  return sql<{ id: string; created_at: Date; expires_at: Date }[]>`
    SELECT id, created_at, expires_at FROM oauth_initial_access_tokens
    WHERE principal_id = ${principalId} AND revoked_at IS NULL AND expires_at > ${now} AND used_at IS NULL
    ORDER BY created_at DESC`;
}

export async function revokeInitialAccessToken(sql: Sql, principalId: string, id: string, now: string) {
  const rows = await sql`UPDATE oauth_initial_access_tokens SET revoked_at = ${now}
    WHERE id = ${id} AND principal_id = ${principalId} AND revoked_at IS NULL RETURNING 1`;
  return rows.length > 0;
}

// Clients -----------------------------------------------------------------------------------------------------

export interface ClientRow {
  client_id: string;
  /** The account that registered it; null for the deployment's own clients and metadata-document ones. */
  principal_id: string | null;
  kind: 'registered' | 'first_party' | 'metadata_document';
  /** A metadata-document client's client_id (its document's URL); null otherwise. */
  metadata_url: string | null;
  client_name: string | null;
  redirect_uris: string[];
  grant_types: string[];
  scopes: string[];
  created_at: Date;
  revoked_at: Date | null;
}

/** A client and the agent it is, in one transaction. */
export async function insertClient(
  sql: Sql,
  c: {
    clientId: string;
    principalId: string;
    clientName: string | null;
    redirectUris: string[];
    grantTypes: string[];
    scopes: string[];
    at: string;
  },
): Promise<void> {
  await sql.begin((tx) => insertClientRows(tx, c));
}

/** The client's agent row and its client row (inside the caller's transaction). */
async function insertClientRows(
  tx: postgres.TransactionSql<Record<string, never>>,
  c: Parameters<typeof insertClient>[1],
): Promise<void> {
  await tx`INSERT INTO agents (id, principal_id, name, sandbox, created_at)
           VALUES (${c.clientId}, ${c.principalId}, ${c.clientName}, false, ${c.at})`;
  await tx`INSERT INTO oauth_clients (client_id, principal_id, client_name, redirect_uris, grant_types, scopes, created_at)
           VALUES (${c.clientId}, ${c.principalId}, ${c.clientName}, ${c.redirectUris}, ${c.grantTypes}, ${c.scopes},
                   ${c.at})`;
}

/**
 * Register a client with an initial access token, spending the token: one conditional UPDATE claims it, so of two
 * registrations racing with one token exactly one inserts its client. Null (and nothing inserted) when the token is
 * not live: unknown, revoked, expired, or spent already.
 */
export async function insertClientSpendingToken(
  sql: Sql,
  tokenHash: string,
  now: string,
  c: Omit<Parameters<typeof insertClient>[1], 'principalId'>,
): Promise<string | null> {
  return sql.begin(async (tx) => {
    const [claimed] = await tx<{ principal_id: string }[]>`
      UPDATE oauth_initial_access_tokens SET used_at = ${now}, used_by_client = ${c.clientId}
      WHERE token_hash = ${tokenHash} AND revoked_at IS NULL AND expires_at > ${now} AND used_at IS NULL
      RETURNING principal_id`;
    if (!claimed) return null;
    await insertClientRows(tx, { ...c, principalId: claimed.principal_id });
    return claimed.principal_id;
  });
}

/** A registered client that is not revoked, or null. */
export async function liveClient(sql: Sql, clientId: string): Promise<ClientRow | null> {
  const rows = await sql<ClientRow[]>`SELECT * FROM oauth_clients WHERE client_id = ${clientId} AND revoked_at IS NULL`;
  return rows[0] ?? null;
}

/** The live client whose client_id is a metadata document's URL, or null. */
export async function clientByMetadataUrl(sql: Sql, url: string): Promise<ClientRow | null> {
  const rows = await sql<ClientRow[]>`SELECT * FROM oauth_clients WHERE metadata_url = ${url} AND revoked_at IS NULL`;
  return rows[0] ?? null;
}

/**
 * A metadata-document client as its document says now: made on first use, its name, redirect URIs, grants and scopes
 * replaced by each fresh fetch (the row keeps its uuid, so its grants stay).
 */
export async function upsertMetadataDocumentClient(
  sql: Sql,
  c: {
    clientId: string;
    url: string;
    clientName: string | null;
    redirectUris: string[];
    grantTypes: string[];
    scopes: string[];
    at: string;
  },
): Promise<ClientRow> {
  const rows = await sql<ClientRow[]>`
    INSERT INTO oauth_clients (client_id, principal_id, kind, metadata_url, client_name, redirect_uris, grant_types,
                               scopes, created_at)
    VALUES (${c.clientId}, NULL, 'metadata_document', ${c.url}, ${c.clientName}, ${c.redirectUris}, ${c.grantTypes},
            ${c.scopes}, ${c.at})
    ON CONFLICT (metadata_url) DO UPDATE SET client_name = excluded.client_name,
      redirect_uris = excluded.redirect_uris, grant_types = excluded.grant_types, scopes = excluded.scopes
    RETURNING *`;
  return rows[0]!;
}

/** One of the deployment's own clients, made or brought up to date at start-up (idempotent). */
export async function ensureFirstPartyClient(
  sql: Sql,
  c: { clientId: string; clientName: string; grantTypes: string[]; scopes: string[]; at: string },
): Promise<void> {
  await sql`
    INSERT INTO oauth_clients (client_id, principal_id, kind, client_name, redirect_uris, grant_types, scopes, created_at)
    VALUES (${c.clientId}, NULL, 'first_party', ${c.clientName}, '{}', ${c.grantTypes}, ${c.scopes}, ${c.at})
    ON CONFLICT (client_id) DO UPDATE SET client_name = excluded.client_name, grant_types = excluded.grant_types,
      scopes = excluded.scopes, revoked_at = NULL`;
}

export async function clientsOf(sql: Sql, principalId: string): Promise<ClientRow[]> {
  return sql<ClientRow[]>`SELECT * FROM oauth_clients WHERE principal_id = ${principalId} AND revoked_at IS NULL
                          ORDER BY created_at DESC`;
}

/** Revoke a client and every grant it holds; returns the grants revoked (for the revocation list). */
export async function revokeClient(sql: Sql, principalId: string, clientId: string, now: string): Promise<string[]> {
  return sql.begin(async (tx) => {
    const found = await tx`UPDATE oauth_clients SET revoked_at = ${now}
      WHERE client_id = ${clientId} AND principal_id = ${principalId} AND revoked_at IS NULL RETURNING 1`;
    if (found.length === 0) return [];
    const grants = await tx<
      { id: string }[]
    >`UPDATE oauth_grants SET revoked_at = ${now}, revoked_reason = 'client_revoked'
      WHERE client_id = ${clientId} AND revoked_at IS NULL RETURNING id`;
    return grants.map((g) => g.id);
  });
}

// Grants --------------------------------------------------------------------------------------------------------

export interface GrantRow {
  id: string;
  principal_id: string;
  client_id: string;
  scopes: string[];
  resource: string;
  created_at: Date;
  revoked_at: Date | null;
}

export async function insertGrant(
  sql: Sql,
  g: { id: string; principalId: string; clientId: string; scopes: string[]; resource: string; at: string },
): Promise<void> {
  await sql`INSERT INTO oauth_grants (id, principal_id, client_id, scopes, resource, created_at)
            VALUES (${g.id}, ${g.principalId}, ${g.clientId}, ${g.scopes}, ${g.resource}, ${g.at})`;
}

export async function liveGrant(sql: Sql, id: string): Promise<GrantRow | null> {
  const rows = await sql<GrantRow[]>`SELECT * FROM oauth_grants WHERE id = ${id} AND revoked_at IS NULL`;
  return rows[0] ?? null;
}

/** Revoke a grant (with why); false when it was revoked already or is not the principal's (when given). */
export async function revokeGrant(
  sql: Sql,
  id: string,
  reason: string,
  now: string,
  principalId?: string,
): Promise<boolean> {
  const rows = await sql`UPDATE oauth_grants SET revoked_at = ${now}, revoked_reason = ${reason}
    WHERE id = ${id} AND revoked_at IS NULL ${principalId === undefined ? sql`` : sql`AND principal_id = ${principalId}`}
    RETURNING 1`;
  return rows.length > 0;
}

/** The principal's live grants with their clients and unexpired, unrevoked access tokens, newest first. */
export async function grantsOf(sql: Sql, principalId: string, now: string) {
  return sql<
    (GrantRow & {
      client_name: string | null;
      tokens: { jti: string; expires_at: string; exchanged: boolean }[];
    })[]
  >`
    SELECT g.*, c.client_name,
      coalesce((SELECT json_agg(json_build_object('jti', t.jti, 'expires_at', t.expires_at, 'exchanged', t.exchanged)
                                ORDER BY t.expires_at)
                FROM oauth_access_tokens t
                WHERE t.grant_id = g.id AND t.revoked_at IS NULL AND t.expires_at > ${now}), '[]') AS tokens
    FROM oauth_grants g JOIN oauth_clients c USING (client_id)
    WHERE g.principal_id = ${principalId} AND g.revoked_at IS NULL
    ORDER BY g.created_at DESC`;
}

// Authorization codes -----------------------------------------------------------------------------------------------

export async function insertCode(
  sql: Sql,
  c: {
    codeHash: string;
    grantId: string;
    clientId: string;
    redirectUri: string;
    codeChallenge: string;
    expiresAt: string;
  },
): Promise<void> {
  await sql`INSERT INTO oauth_codes (code_hash, grant_id, client_id, redirect_uri, code_challenge, expires_at)
            VALUES (${c.codeHash}, ${c.grantId}, ${c.clientId}, ${c.redirectUri}, ${c.codeChallenge}, ${c.expiresAt})`;
}

export interface CodeRow {
  grant_id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  expires_at: Date;
  used_at: Date | null;
}

/**
 * Spend a code: it is marked used whatever happens next. Returns the code as it was before, so the caller tells a
 * first use (used_at null) from a replay; null for a code that never existed.
 */
export async function spendCode(sql: Sql, codeHash: string, now: string): Promise<CodeRow | null> {
  const rows = await sql<CodeRow[]>`
    UPDATE oauth_codes c SET used_at = coalesce(c.used_at, ${now})
    FROM (SELECT code_hash, used_at AS was_used FROM oauth_codes WHERE code_hash = ${codeHash} FOR UPDATE) old
    WHERE c.code_hash = old.code_hash
    RETURNING c.grant_id, c.client_id, c.redirect_uri, c.code_challenge, c.expires_at, old.was_used AS used_at`;
  return rows[0] ?? null;
}

// Refresh tokens --------------------------------------------------------------------------------------------------

export async function insertRefreshToken(
  sql: Sql,
  r: { tokenHash: string; grantId: string; at: string; expiresAt: string },
): Promise<void> {
  await sql`INSERT INTO oauth_refresh_tokens (token_hash, grant_id, created_at, expires_at)
            VALUES (${r.tokenHash}, ${r.grantId}, ${r.at}, ${r.expiresAt})`;
}

/** Spend a refresh token (as spendCode): the row before, or null when unknown. */
export async function spendRefreshToken(sql: Sql, tokenHash: string, now: string) {
  const rows = await sql<{ grant_id: string; expires_at: Date; used_at: Date | null }[]>`
    UPDATE oauth_refresh_tokens r SET used_at = coalesce(r.used_at, ${now})
    FROM (SELECT token_hash, used_at AS was_used FROM oauth_refresh_tokens WHERE token_hash = ${tokenHash} FOR UPDATE) old
    WHERE r.token_hash = old.token_hash
    RETURNING r.grant_id, r.expires_at, old.was_used AS used_at`;
  return rows[0] ?? null;
}

/** The grant of a refresh token, for revocation (RFC 7009) without spending it. */
export async function refreshTokenGrant(sql: Sql, tokenHash: string): Promise<string | null> {
  const rows = await sql<
    { grant_id: string }[]
  >`SELECT grant_id FROM oauth_refresh_tokens WHERE token_hash = ${tokenHash}`;
  return rows[0]?.grant_id ?? null;
}

// Access tokens ---------------------------------------------------------------------------------------------------

export async function insertAccessToken(
  sql: Sql,
  t: {
    jti: string;
    grantId: string;
    scopes: string[];
    audience: string;
    /** The subject token of an exchange: the token this one was exchanged from. */
    parentJti: string | null;
    at: string;
    expiresAt: string;
  },
): Promise<void> {
  await sql`INSERT INTO oauth_access_tokens (jti, grant_id, scopes, audience, exchanged, parent_jti, issued_at, expires_at)
            VALUES (${t.jti}, ${t.grantId}, ${t.scopes}, ${t.audience}, ${t.parentJti !== null}, ${t.parentJti},
                    ${t.at}, ${t.expiresAt})`;
}

/** Whether an access token was issued and is not revoked (an exchange must not revive a revoked one). */
export async function accessTokenLive(sql: Sql, jti: string): Promise<boolean> {
  const rows = await sql`SELECT 1 FROM oauth_access_tokens WHERE jti = ${jti} AND revoked_at IS NULL`;
  return rows.length > 0;
}

/**
 * Revoke one access token and every token exchanged from it, however deep (RFC 8693: an exchanged token must not
 * outlive the right it was made from). Each revoked token's id and expiry (for how long the revocation must be
 * remembered); empty if the token is unknown, revoked already, or (with `principalId`) another principal's.
 */
export async function revokeAccessToken(
  sql: Sql,
  jti: string,
  now: string,
  principalId?: string,
): Promise<{ jti: string; expiresAt: Date }[]> {
  const rows = await sql<{ jti: string; expires_at: Date }[]>`
    WITH RECURSIVE root AS (
      SELECT t.jti FROM oauth_access_tokens t JOIN oauth_grants g ON g.id = t.grant_id
      WHERE t.jti = ${jti} ${principalId === undefined ? sql`` : sql`AND g.principal_id = ${principalId}`}
    ), family AS (
      SELECT jti FROM root
      UNION
      SELECT c.jti FROM oauth_access_tokens c JOIN family f ON c.parent_jti = f.jti
    )
    UPDATE oauth_access_tokens t SET revoked_at = ${now}
    FROM family WHERE t.jti = family.jti AND t.revoked_at IS NULL
    RETURNING t.jti, t.expires_at`;
  return rows.map((r) => ({ jti: r.jti, expiresAt: r.expires_at }));
}

// Device codes ----------------------------------------------------------------------------------------------------

export interface DeviceCodeRow {
  device_code_hash: string;
  user_code: string;
  client_id: string;
  scopes: string[];
  resource: string;
  expires_at: Date;
  interval_seconds: number;
  last_polled_at: Date | null;
  state: 'pending' | 'approved' | 'denied';
  principal_id: string | null;
  grant_id: string | null;
  used_at: Date | null;
}

/** False when the user code is taken (draw another). */
export async function insertDeviceCode(
  sql: Sql,
  d: {
    deviceCodeHash: string;
    userCode: string;
    clientId: string;
    scopes: string[];
    resource: string;
    at: string;
    expiresAt: string;
    intervalSeconds: number;
  },
): Promise<boolean> {
  const rows = await sql`
    INSERT INTO oauth_device_codes
      (device_code_hash, user_code, client_id, scopes, resource, created_at, expires_at, interval_seconds, state)
    VALUES (${d.deviceCodeHash}, ${d.userCode}, ${d.clientId}, ${d.scopes}, ${d.resource}, ${d.at}, ${d.expiresAt},
            ${d.intervalSeconds}, 'pending')
    ON CONFLICT (user_code) DO NOTHING RETURNING 1`;
  return rows.length > 0;
}

export async function deviceCodeByUserCode(sql: Sql, userCode: string): Promise<DeviceCodeRow | null> {
  const rows = await sql<DeviceCodeRow[]>`SELECT * FROM oauth_device_codes WHERE user_code = ${userCode}`;
  return rows[0] ?? null;
}

/** Record the person's decision on a pending, unexpired device code; false if it was not pending any more. */
export async function decideDeviceCode(
  sql: Sql,
  userCode: string,
  d: { state: 'approved' | 'denied'; principalId: string; grantId: string | null },
  now: string,
): Promise<boolean> {
  const rows = await sql`UPDATE oauth_device_codes
    SET state = ${d.state}, principal_id = ${d.principalId}, grant_id = ${d.grantId}
    WHERE user_code = ${userCode} AND state = 'pending' AND expires_at > ${now} RETURNING 1`;
  return rows.length > 0;
}

/**
 * One poll of the token endpoint, decided under a row lock (the caller's transaction; two polls racing see each
 * other): `decide` looks at the row as it is and says whether the poll counts at all (`touch`: false leaves the row
 * as it was), whether it came too fast (the interval grows by 5 s, RFC 8628 3.5) and whether it spends an approved
 * code. Returns the row as it was, or null for an unknown code.
 */
export async function pollDeviceCode(
  tx: Sql,
  deviceCodeHash: string,
  now: string,
  decide: (row: DeviceCodeRow) => { slowDown: boolean; spend: boolean; touch: boolean },
): Promise<DeviceCodeRow | null> {
  const [row] = await tx<DeviceCodeRow[]>`
    SELECT * FROM oauth_device_codes WHERE device_code_hash = ${deviceCodeHash} FOR UPDATE`;
  if (!row) return null;
  const { slowDown, spend, touch } = decide(row);
  if (!touch) return row;
  await tx`UPDATE oauth_device_codes SET last_polled_at = ${now},
    interval_seconds = interval_seconds + ${slowDown ? 5 : 0},
    used_at = ${spend ? now : row.used_at}
    WHERE device_code_hash = ${deviceCodeHash}`;
  return row;
}
