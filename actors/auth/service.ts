// The auth service: serves the public keys the gateway verifies agent tokens with.
import type { BusReply, BusRequest } from '../../contracts/index.ts';
import { errorReply, okReply } from '../../contracts/index.ts';
import type { Sql } from '../../storage/index.ts';
import { publicJwks } from './keys.ts';

export const tokenJwksOp = 'auth.token_jwks';

export function authService(sql: Sql) {
  return async (req: BusRequest): Promise<BusReply> => {
    if (req.op === tokenJwksOp) return okReply(200, await publicJwks(sql, 'token'));
    // Public: the report-signing keys, current and retired, for offline verification (GET /.well-known/report-keys).
    if (req.op === 'reportKeys') return okReply(200, await publicJwks(sql, 'report'));
    return errorReply('not_found', `the auth service has no operation ${req.op}`);
  };
}
