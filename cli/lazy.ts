// The modules `assay` loads on demand (cli/assay.ts): the client commands load theirs alone, because the server's
// (actors, storage, OpenTelemetry, ...) take seconds to load, which every `assay sync`, even of an unchanged folder,
// would spend before its first request (docs/sync.md, Measured). The dynamic imports live here and not in assay.ts:
// tsx cannot transform an import() in a file that starts with a shebang line.
export const clientModule = () => import('./sync/commands.ts');

/** `assay verify-report`: offline, contracts/ alone. */
export const verifyModule = () => import('./verify.ts');

/** `assay audit`, loaded only when asked for. */
export const auditModule = () => import('./audit.ts');

export const serverModules = () =>
  Promise.all([
    import('../actors/index.ts'),
    import('../contracts/index.ts'),
    import('../storage/index.ts'),
    import('./errata.ts'),
    import('./judge.ts'),
    import('./payouts.ts'),
    import('./plan.ts'),
    import('./status.ts'),
    import('./roles.ts'),
  ]);
