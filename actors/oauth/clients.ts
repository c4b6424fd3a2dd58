// Which client a request names, in its three kinds (docs/oauth.md): registered by an account with an initial access
// token (its client_id is a uuid), the deployment's own (the command-line client, made at start-up), or known by its
// client ID metadata document (its client_id is the document's https URL). Each is one row in oauth_clients; the
// row's uuid is what grants, codes and device codes refer to.
import { type ClientShownT, firstPartyClients, isUuid } from '../../contracts/index.ts';
import { oauthStore, type Sql } from '../../storage/index.ts';
import type { ClientMetadataDocuments } from './client-metadata.ts';
import type { Checked } from './rules.ts';

type ClientRow = oauthStore.ClientRow;

export interface Client {
  row: ClientRow;
  /** The client_id the client presents: the row's uuid, or its metadata document's URL. */
  presentedId: string;
  shown: ClientShownT;
}

export function clientOf(row: ClientRow): Client {
  const presentedId = row.metadata_url ?? row.client_id;
  return {
    row,
    presentedId,
    shown: {
      clientId: presentedId,
      clientName: row.client_name,
      known: row.kind,
      ...(row.metadata_url === null ? {} : { documentHost: new URL(row.metadata_url).host }),
    },
  };
}

/**
 * The live client a presented client_id names, without fetching anything (the token, device and revocation
 * endpoints): a metadata-document client is known here once an authorization request fetched its document. A
 * metadata-document client presented by its row's uuid is unknown: its client_id is its URL.
 */
export async function clientPresentedAs(db: Sql, presented: string | undefined): Promise<Client | null> {
  if (!presented) return null;
  const row = isUuid(presented)
    ? await oauthStore.liveClient(db, presented)
    : await oauthStore.clientByMetadataUrl(db, presented);
  if (!row || (isUuid(presented) && row.kind === 'metadata_document')) return null;
  return clientOf(row);
}

/** A metadata-document client as its document describes it, stored only once a signed-in person is asked. */
export interface DocumentClient extends Client {
  /** Makes or updates its row (the row's uuid is what the consent and the grant refer to). */
  save(): Promise<Client>;
}

/**
 * The client of an authorization request (RFC 6749 4.1.1): a known one, or for an https URL the client its metadata
 * document describes now (fetched or cached). A document client is not stored until `save`: a request nobody signed
 * in to see writes nothing, so naming documents does not fill the table.
 */
export async function clientForAuthorization(
  d: { sql: Sql; documents: ClientMetadataDocuments; newId: () => string; nowIso: () => string },
  presented: string | undefined,
): Promise<Checked<Client | DocumentClient>> {
  // Only a URL can name a metadata document; anything else is a registered client's id or nothing known.
  if (!presented || (!isUuid(presented) && !/^https?:\/\//i.test(presented))) {
    return { ok: false, refusal: { refused: 'unknown_client' } };
  }
  if (isUuid(presented)) {
    const known = await clientPresentedAs(d.sql, presented);
    return known ? { ok: true, value: known } : { ok: false, refusal: { refused: 'unknown_client' } };
  }
  const metadata = await d.documents.metadata(presented);
  if (!metadata.ok) return metadata;
  const m = metadata.value;
  const fields = {
    clientName: m.clientName,
    redirectUris: m.redirectUris,
    grantTypes: m.grantTypes,
    scopes: m.scopes,
  };
  const described = clientOf({
    client_id: '',
    principal_id: null,
    kind: 'metadata_document',
    metadata_url: presented,
    client_name: m.clientName,
    redirect_uris: m.redirectUris,
    grant_types: m.grantTypes,
    scopes: m.scopes,
    created_at: new Date(d.nowIso()),
    revoked_at: null,
  });
  const save = async () =>
    clientOf(
      await oauthStore.upsertMetadataDocumentClient(d.sql, {
        clientId: d.newId(),
        url: presented,
        ...fields,
        at: d.nowIso(),
      }),
    );
  return { ok: true, value: { ...described, save } };
}

/** The deployment's own clients, made or brought up to date (at start-up; idempotent). */
export async function ensureFirstPartyClients(sql: Sql, at: string): Promise<void> {
  for (const c of Object.values(firstPartyClients)) {
    await oauthStore.ensureFirstPartyClient(sql, {
      clientId: c.clientId,
      clientName: c.name,
      grantTypes: [...c.grantTypes],
      scopes: [...c.scopes],
      at,
    });
  }
}

/** Whether a person may authorize the client: anyone for a client no account registered, else its account only. */
export function mayAuthorize(client: Client, principalId: string): boolean {
  return client.row.principal_id === null || client.row.principal_id === principalId;
}
