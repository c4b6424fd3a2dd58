// Revocations every gateway must learn of: a grant (all its tokens) or one access token, written to the
// `<ns>_revoked` KV bucket before the revoking call answers. Gateways watch the bucket (gateway/revocations.ts).
// Entries outlive every token they could stop: the bucket's max age is revokedRetentionMs (contracts/oauth.ts).
import type { KV } from '@nats-io/kv';
import { revokedKeys } from '../../contracts/index.ts';

export class RevocationList {
  constructor(private readonly kv: KV) {}

  async grants(ids: readonly string[]): Promise<void> {
    for (const id of ids) await this.kv.put(revokedKeys.grant(id), '1');
  }

  /** Access tokens, each until it expires (what `revokeAccessToken` returns: the token and its exchanged family). */
  async tokens(revoked: readonly { jti: string; expiresAt: Date }[]): Promise<void> {
    for (const t of revoked)
      await this.kv.put(revokedKeys.token(t.jti), String(Math.ceil(t.expiresAt.getTime() / 1000)));
  }
}
