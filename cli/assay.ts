#!/usr/bin/env -S node --max-semi-space-size=32 --import tsx
// The `assay` command. Server roles: `serve` (all roles in one process), `gateway`, `actors`, `workers`.
// Operator commands: `rebuild-projections`, `mint-token`, `rotate-key`, `errata`, `plan`, `payouts`, `status`,
// `audit`. Client commands: device sync (cli/sync/) and `verify-report`. Help comes first and loads nothing but
// cli/usage.ts; a client command loads its own modules; only the server and operator commands load the server's.
import { parseArgs } from 'node:util';
import { auditModule, clientModule, serverModules, verifyModule } from './lazy.ts';
import type { Role } from './roles.ts';
import { clientCommands, commandUsage, helpOf, isCommand, usage, wantsHelp } from './usage.ts';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // Help, and a command that does not exist, are answered before any other module loads (cli/usage.ts).
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    const topic = command === 'help' ? rest[0] : undefined;
    if (topic !== undefined && !isCommand(topic)) {
      process.stderr.write(`assay: no command ${topic}; assay --help lists them\n`);
      return 2;
    }
    process.stdout.write(`${topic === undefined ? usage : helpOf(topic)}\n`);
    return 0;
  }
  if (!isCommand(command)) {
    process.stderr.write(`assay: no command ${command}; assay --help lists them\n`);
    return 2;
  }
  if (wantsHelp(rest)) {
    process.stdout.write(`${helpOf(command)}\n`);
    return 0;
  }
  if (clientCommands.has(command)) {
    // The client loads its own modules only (cli/lazy.ts says why).
    const { clientCommand } = await clientModule();
    return clientCommand(command, rest);
  }
  if (command === 'verify-report') {
    // Offline, like the client commands: contracts/ alone, no server module.
    const { values, positionals } = parseArgs({
      args: rest,
      allowPositionals: true,
      options: { keys: { type: 'string' } },
    });
    if (positionals.length !== 1 || !values.keys) {
      process.stderr.write(`${commandUsage['verify-report']}\n`);
      return 2;
    }
    return (await verifyModule()).verifyReportCommand(positionals[0]!, values.keys);
  }
  const [
    { ensureActiveKey, eventsOf, principalFactsOf, randomIds, rotateKey, signAgentToken, systemClock },
    { loadConfig, names: namesOf },
    {
      ensurePrincipal,
      healthAlerts,
      listingProjection,
      openHealthBucket,
      parkedFacts,
      rebuildProjection,
      subjectSandbox,
    },
    { errataCommand },
    { judgeCommand },
    { payoutsCommand },
    { planCommand },
    { statusCommand },
    { allRoles, makeLogger, openDatabase, openNats, StartupError, startRoles },
  ] = await serverModules();
  const config = loadConfig(process.env);
  const log = makeLogger(config);

  switch (command) {
    case 'serve':
    case 'gateway':
    case 'actors':
    case 'workers': {
      const roles: Role[] = command === 'serve' ? allRoles : [command];
      const running = await startRoles(config, roles, log);
      let stopping = false;
      const shutdown = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        log.info({ signal }, 'shutting down');
        await running.stop();
        process.exit(0);
      };
      process.on('SIGTERM', () => void shutdown('SIGTERM'));
      process.on('SIGINT', () => void shutdown('SIGINT'));
      return -1; // keep running
    }
    case 'rebuild-projections': {
      const nc = await openNats(config, 'assay-rebuild');
      const sql = await openDatabase(config);
      const names = namesOf(config.namespace);
      const alerts = healthAlerts(await openHealthBucket(nc, names, config.streamReplicas), systemClock.nowIso, (err) =>
        log.warn({ err }, 'health alert failed'),
      );
      const o = { log, alerts };
      const facts = await rebuildProjection(nc, sql, principalFactsOf(names, config), o);
      console.log(
        `ledger entries, orders, payouts, trust sums and the idempotency index rebuilt up to LEDGER sequence ${facts}`,
      );
      const events = await rebuildProjection(nc, sql, eventsOf(names), o);
      console.log(`the events store rebuilt up to LEDGER sequence ${events}`);
      const listings = await rebuildProjection(nc, sql, listingProjection(names), o);
      console.log(`listings rebuilt up to LISTINGS sequence ${listings}`);
      await nc.drain();
      await sql.end();
      return 0;
    }
    case 'migrate': {
      // The upgrade step (docs/deploy.md, Upgrades): once, before the new version's processes start.
      const sql = await openDatabase(config);
      await sql.end();
      console.log('the database has every migration');
      return 0;
    }
    case 'parked-facts': {
      const sql = await openDatabase(config);
      const rows = await parkedFacts(sql);
      for (const r of rows) {
        console.log(`${r.projection} #${r.stream_seq} parked ${r.parked_at.toISOString()}: ${r.error}\n  ${r.fact}`);
      }
      if (rows.length === 0) console.log('no parked facts');
      await sql.end();
      return 0;
    }
    case 'mint-token': {
      const { values } = parseArgs({
        args: rest,
        options: {
          principal: { type: 'string' },
          agent: { type: 'string' },
          scopes: { type: 'string', default: 'read:artifact read:trust purchase' },
          live: { type: 'boolean', default: false },
          ttl: { type: 'string', default: '3600' },
        },
      });
      if (!values.principal || !values.agent) throw new StartupError('mint-token needs --principal and --agent');
      const sql = await openDatabase(config);
      // A principal stands on one side of the sandbox line: a token of the other side would spend its credits and
      // read its orders across the line. A principal not known yet is recorded on the token's side.
      const sandbox = !values.live;
      const side = await subjectSandbox(sql, 'principal', values.principal);
      if (side !== null && side !== sandbox) {
        await sql.end();
        throw new StartupError(
          `principal ${values.principal} is on the ${side ? 'sandbox' : 'live'} side of the sandbox line: ${side ? 'leave out --live' : 'add --live'}`,
        );
      }
      if (side === null) await ensurePrincipal(sql, values.principal, sandbox, systemClock.nowIso());
      const key = await ensureActiveKey(sql, 'token', systemClock);
      const { token } = await signAgentToken(
        key,
        {
          principalId: values.principal,
          agentId: values.agent,
          scopes: values.scopes.split(' ').filter(Boolean),
          sandbox,
          issuer: config.baseUrl,
          ttlSeconds: Number(values.ttl),
          jti: randomIds.uuid(),
        },
        systemClock,
      );
      console.log(token);
      await sql.end();
      return 0;
    }
    case 'rotate-key': {
      const { values } = parseArgs({ args: rest, options: { purpose: { type: 'string', default: 'token' } } });
      if (values.purpose !== 'token' && values.purpose !== 'report') throw new StartupError('--purpose token|report');
      const sql = await openDatabase(config);
      const key = await rotateKey(sql, values.purpose, systemClock);
      console.log(`active ${values.purpose} key is now ${key.kid}`);
      await sql.end();
      return 0;
    }
    case 'errata':
      return errataCommand(config, rest);
    case 'judge':
      return judgeCommand(config, rest);
    case 'plan':
      return planCommand(config, rest);
    case 'payouts':
      return payoutsCommand(config, rest);
    case 'status':
      return statusCommand(config, rest);
    case 'audit':
      return (await auditModule()).auditCommand(config, rest);
    default:
      throw new Error(`assay: ${command} is listed in cli/usage.ts but has no case here`);
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    // StartupError (cli/roles.ts), by name: the module is loaded only for server commands.
    if (
      (err as Error)?.constructor?.name === 'StartupError' ||
      (err as Error)?.message?.startsWith('bad configuration')
    ) {
      console.error(`assay: ${(err as Error).message}`);
    } else {
      console.error(err);
    }
    process.exit(1);
  },
);
