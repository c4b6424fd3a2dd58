// Public entry of actors/: the actor runtime, the principal actor and the stateless services.
export { authService } from './auth/service.ts';
export { ensureActiveKey, publicJwks, rotateKey, signAgentToken, type TokenRequest } from './auth/keys.ts';
export { ledgerService } from './ledger/service.ts';
export { principalBehaviour } from './principal/principal.ts';
export { type Clock, type IdSource, randomIds, systemClock } from './runtime/clock.ts';
export { type ActorBehaviour, ActorHost, type Decision, type HostOptions } from './runtime/host.ts';
export { ShardLeases, type ShardRef } from './runtime/leases.ts';
export { busRequest, serveService } from './runtime/service.ts';
export { startSingleton } from './runtime/singleton.ts';
export { sandboxScopes, sandboxService } from './sandbox/service.ts';
