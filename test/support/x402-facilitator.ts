// A loopback x402 facilitator for tests and the benchmark: `POST /verify`, `POST /settle` and `GET /supported` of
// the x402 v2 facilitator API, for the `exact` scheme on one EVM network, against an in-memory chain (token
// balances and used EIP-3009 nonces). Signatures are checked for real: viem recovers the EIP-712
// TransferWithAuthorization signer with the token's domain (name, version, chain id, contract), as the token
// contract would. It stands in for a paid outside service (a facilitator that submits transactions), speaking its
// wire protocol; nothing here leaves 127.0.0.1.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { authorizationTypes } from '@x402/evm';
import { getAddress, keccak256, toHex, verifyTypedData } from 'viem';

interface Authorization {
  from: `0x${string}`;
  to: `0x${string}`;
  value: string;
  validAfter: string;
  validBefore: string;
  nonce: `0x${string}`;
}

export interface LoopbackFacilitator {
  url: string;
  /** Token balances in atomic units, by lower-case address. */
  balances: Map<string, bigint>;
  /** `from:nonce` of every authorization the chain executed. */
  usedNonces: Set<string>;
  calls: { verify: number; settle: number };
  /** Wall time spent answering /verify and /settle, in ms (the facilitator's own share of a purchase). */
  busyMs: number;
  /** While down, every request's connection is cut before an answer (a facilitator that is unreachable). */
  down: boolean;
  /** The chain's clock, in seconds (tests move it to expire authorizations). */
  nowS: () => number;
  fund(address: string, atomic: bigint): void;
  balanceOf(address: string): bigint;
  close(): Promise<void>;
}

export async function startFacilitator(o: { network: string; asset: string }): Promise<LoopbackFacilitator> {
  const chainId = Number(o.network.split(':')[1]);
  const f: LoopbackFacilitator = {
    url: '',
    balances: new Map(),
    usedNonces: new Set(),
    calls: { verify: 0, settle: 0 },
    busyMs: 0,
    down: false,
    nowS: () => Math.floor(Date.now() / 1000),
    fund(address, atomic) {
      const a = address.toLowerCase();
      f.balances.set(a, (f.balances.get(a) ?? 0n) + atomic);
    },
    balanceOf: (address) => f.balances.get(address.toLowerCase()) ?? 0n,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };

  /** The exact scheme's checks, in the order a token contract and a careful facilitator apply them. */
  async function check(body: any): Promise<{ ok: true; auth: Authorization } | { ok: false; reason: string }> {
    const payload = body?.paymentPayload;
    const req = body?.paymentRequirements;
    if (!payload || !req) return { ok: false, reason: 'invalid_payload' };
    if (payload.x402Version !== 2) return { ok: false, reason: 'invalid_x402_version' };
    if (req.scheme !== 'exact' || payload.accepted?.scheme !== 'exact')
      return { ok: false, reason: 'unsupported_scheme' };
    if (req.network !== o.network || payload.accepted?.network !== o.network)
      return { ok: false, reason: 'invalid_network' };
    if (String(req.asset).toLowerCase() !== o.asset.toLowerCase()) return { ok: false, reason: 'invalid_asset' };
    const auth: Authorization | undefined = payload.payload?.authorization;
    const signature: `0x${string}` | undefined = payload.payload?.signature;
    if (!auth || typeof signature !== 'string') return { ok: false, reason: 'invalid_exact_evm_payload' };
    if (auth.to.toLowerCase() !== String(req.payTo).toLowerCase()) {
      return { ok: false, reason: 'invalid_exact_evm_payload_recipient_mismatch' };
    }
    if (BigInt(auth.value) < BigInt(req.amount)) {
      return { ok: false, reason: 'invalid_exact_evm_payload_authorization_value' };
    }
    const now = BigInt(f.nowS());
    if (BigInt(auth.validBefore) < now + 6n) {
      return { ok: false, reason: 'invalid_exact_evm_payload_authorization_valid_before' };
    }
    if (BigInt(auth.validAfter) > now)
      return { ok: false, reason: 'invalid_exact_evm_payload_authorization_valid_after' };
    const valid = await verifyTypedData({
      address: getAddress(auth.from),
      domain: {
        name: req.extra?.name,
        version: req.extra?.version,
        chainId,
        verifyingContract: getAddress(o.asset),
      },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: {
        from: getAddress(auth.from),
        to: getAddress(auth.to),
        value: BigInt(auth.value),
        validAfter: BigInt(auth.validAfter),
        validBefore: BigInt(auth.validBefore),
        nonce: auth.nonce,
      },
      signature,
    }).catch(() => false);
    if (!valid) return { ok: false, reason: 'invalid_exact_evm_payload_signature' };
    if (f.usedNonces.has(`${auth.from.toLowerCase()}:${auth.nonce.toLowerCase()}`)) {
      return { ok: false, reason: 'invalid_exact_evm_payload_authorization_nonce_used' };
    }
    if (f.balanceOf(auth.from) < BigInt(auth.value)) return { ok: false, reason: 'insufficient_funds' };
    return { ok: true, auth };
  }

  async function answer(path: string, body: any): Promise<[number, unknown]> {
    if (path === '/verify') {
      f.calls.verify++;
      const c = await check(body);
      return [200, c.ok ? { isValid: true, payer: c.auth.from } : { isValid: false, invalidReason: c.reason }];
    }
    if (path === '/settle') {
      f.calls.settle++;
      const c = await check(body);
      if (!c.ok) return [200, { success: false, errorReason: c.reason, transaction: '', network: o.network }];
      // transferWithAuthorization: the value moves and the nonce is spent, in one step.
      const { auth } = c;
      f.usedNonces.add(`${auth.from.toLowerCase()}:${auth.nonce.toLowerCase()}`);
      f.balances.set(auth.from.toLowerCase(), f.balanceOf(auth.from) - BigInt(auth.value));
      f.fund(auth.to, BigInt(auth.value));
      const transaction = keccak256(toHex(`${chainId}:${auth.from}:${auth.nonce}`));
      return [200, { success: true, payer: auth.from, transaction, network: o.network }];
    }
    return [404, { error: 'not found' }];
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (f.down) {
      req.socket.destroy();
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const started = performance.now();
      const reply = (status: number, value: unknown) => {
        f.busyMs += performance.now() - started;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      if (req.method === 'GET' && req.url === '/supported') {
        reply(200, { kinds: [{ x402Version: 2, scheme: 'exact', network: o.network }], extensions: [], signers: {} });
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        reply(400, { error: 'not JSON' });
        return;
      }
      answer(req.url ?? '', body).then(
        ([status, value]) => reply(status, value),
        () => reply(500, { error: 'facilitator failed' }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  f.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return f;
}
