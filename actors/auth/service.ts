// The auth service: serves the public keys agent tokens are verified with (to gateways), and the report-signing keys
// (to anyone, for offline verification).
import { okReply, type ServiceHandlers } from '../../contracts/index.ts';
import type { Sql } from '../../storage/index.ts';
import { publicJwks } from './keys.ts';

export function authService(sql: Sql): ServiceHandlers<'auth'> {
  return {
    'auth.token_jwks': async () => okReply(200, await publicJwks(sql, 'token')),
    // Public: the report-signing keys, current and retired (GET /.well-known/report-keys).
    reportKeys: async () => okReply(200, await publicJwks(sql, 'report')),
  };
}
