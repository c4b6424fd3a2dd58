// What `assay --help` and `assay <command> --help` print. This module imports nothing: help is printed before any
// other module loads, so it costs only Node and tsx starting (docs/sync.md, Measured).

/** Each command's usage, by command name: what `assay <command> --help` prints. */
export const commandUsage = {
  serve: `usage: assay serve
  every role in one process (what npm start runs): the gateway, an actor host, the stateless services and the
  projectors. Configuration comes from the environment (README, Configuration); SIGTERM or SIGINT drains and stops`,
  gateway: `usage: assay gateway
  the HTTP gateway only (REST, MCP, OAuth and web pages, the context-file API); several may run behind a balancer`,
  actors: `usage: assay actors
  an actor host only; several hosts share the shards through leases (docs/architecture.md)`,
  workers: `usage: assay workers
  the stateless services and projectors only`,
  'rebuild-projections': `usage: assay rebuild-projections
  drop the PostgreSQL projections (ledger entries, orders, payouts, trust sums from settlements, the idempotency
  index, subscriptions, the events store, listings) and rebuild them by replaying the streams; parked facts are
  tried again`,
  migrate: `usage: assay migrate
  create the database if it is missing and apply the migrations not applied yet, then exit (every gateway and
  worker also does at start; docs/deploy.md, Upgrades)`,
  'parked-facts': `usage: assay parked-facts
  list the facts a projection could not write and set aside, with their errors`,
  'mint-token': `usage: assay mint-token --principal <uuid> --agent <uuid> [--scopes "a b"] [--live] [--ttl <seconds>]
  sign an agent token with the service's key (operator use and tests); --scopes defaults to
  "read:artifact read:trust purchase", --ttl to 3600; without --live the token is a sandbox one`,
  'rotate-key': `usage: assay rotate-key --purpose token|report
  make a new signing key active; tokens, reports and download links signed by older keys still verify`,
  errata: `usage: assay errata open --title <text> --judge-versions <v1,v2> [--description <text>] [--judge-model <name>]
       assay errata close <id>
       assay errata list
  open, close and list judge errata (operator only; writes the database directly)`,
  plan: `usage: assay plan set <principal id> free|pro|enterprise
       assay plan show <principal id>
  put a principal on a plan (its agent-route rate limits and daily quotas), or show its plan`,
  status: `usage: assay status [--json]
  the deployment as it runs: processes alive and the shards and jobs each holds, leases about to lapse, streams
  (replicas, leader), projection and verifier lag`,
  audit: `usage: assay audit [--json] [--wait-seconds <n>]
  replay the LEDGER and LISTINGS streams and check every money and state invariant against the PostgreSQL
  projections, without stopping the service; lists each violation and exits 2 if there is any
  (docs/operations.md, Audit)`,
  payouts: `usage: assay payouts run [<principal id>]
  transfer released, unpaid live accruals to enabled sellers (or one) through the payment processor; prints a
  summary of the run (exit 2 if a seller failed; sellers whose payouts wait on a chargeback are listed as held,
  not failed)`,
  judge: `usage: assay judge eval <file.jsonl> [--version <judge version>]
  judge labelled claims (JSON lines: passage, claim, label, kind) with the configured judge (ASSAY_JUDGE) and print
  one line per claim, then balanced accuracy, sensitivity and specificity, overall and by kind; exit 2 on a bad
  line. Needs no running service`,
  'verify-report': `usage: assay verify-report <report.json> --keys <jwks file or URL>
  check a report's (or a compliance bundle's) digest and ES256 signature offline`,
  login: `usage: assay login [--server URL] [--initial-access-token asyi_...] [--json]
  sign this device in with the OAuth device grant: open the URL shown (Enter opens it in your browser), enter the
  code. The CLI is a client every server knows; with an initial access token from the account page it registers a
  client of its own instead. Tokens are kept in ~/.config/assay/credentials.json (mode 0600)`,
  logout: `usage: assay logout [--server URL] [--json]
  revoke this device's login and forget its tokens`,
  sync: `usage: assay sync <folder> [--server URL] [--locator NAME] [--jobs N] [--quiet] [--json]
  upload the folder's changed files (honouring .gitignore and .assayignore), N at once (default 8), and commit a
  revision; run it again after an interruption and it resumes. Progress goes to stderr; --quiet turns it off`,
  revisions: `usage: assay revisions <locator> [--server URL] [--limit N] [--json]
  the revisions the server holds for a synced folder, newest first`,
  restore: `usage: assay restore <locator> <dir> [--server URL] [--revision R] [--jobs N] [--quiet] [--json]
  download a revision (the latest by default) into an empty directory, checking every file against its digest`,
  forget: `usage: assay forget <locator> --keep N [--server URL] [--json]
  delete all but the newest N revisions of a synced folder, and the uploaded files no remaining revision uses
  (frees quota)`,
} as const;

export type CommandName = keyof typeof commandUsage;

export function isCommand(name: string): name is CommandName {
  return Object.hasOwn(commandUsage, name);
}

/** The device sync client's exit codes, as every client command's usage ends with them. */
export const clientExitCodes = `exit codes: 0 ok, 1 failed, 2 usage, 3 synced with content findings flagged, 4 not logged in or login
  expired, 5 refused (quota, unsafe paths, not found, a revision unsafe to restore), 6 server unreachable,
  7 a restored file did not match its digest, 130 interrupted`;

/** The client commands (cli/sync/): they talk HTTP only and load none of the server's modules. */
export const clientCommands: ReadonlySet<string> = new Set([
  'login',
  'logout',
  'sync',
  'revisions',
  'restore',
  'forget',
]);

/** What `assay <command> --help` prints: its usage, and for a client command the exit codes they share. */
export const helpOf = (command: CommandName): string =>
  clientCommands.has(command) ? `${commandUsage[command]}\n  ${clientExitCodes}` : commandUsage[command];

/** `assay --help`. */
export const usage = `usage: assay <command> [options]
       assay <command> --help    that command's usage

server roles (configuration from the environment; see README):
  serve                 every role in one process (what npm start runs)
  gateway               the HTTP gateway only
  actors                an actor host only (several share the shards)
  workers               stateless services and projectors only

operator commands:
  rebuild-projections   drop the PostgreSQL projections and rebuild them by replaying the streams
  migrate               create the database if it is missing and apply the migrations not applied yet
  parked-facts          list the facts a projection could not write and set aside
  mint-token            sign an agent token with the service's key (operator use and tests)
  rotate-key            make a new signing key active
  errata                open, close and list judge errata
  plan                  put a principal on a plan, or show its plan
  status                the deployment as it runs: processes, shards, leases, streams, lag
  audit                 check every money and state invariant against the projections
  payouts               transfer released accruals to sellers through the payment processor
  judge                 judge labelled claims with the configured judge (needs no running service)

client commands (talk HTTP only; --json prints one JSON document for scripts):
  verify-report         check a report's digest and ES256 signature offline
  login                 sign this device in with the OAuth device grant
  logout                revoke this device's login and forget its tokens
  sync                  upload a folder's changed files and commit a revision
  revisions             the revisions the server holds for a synced folder
  restore               download a revision into an empty directory
  forget                delete all but the newest N revisions of a synced folder

client commands' ${clientExitCodes}`;

/** Whether the arguments after the command ask for its usage (`--help` or `-h`, before any `--`). */
export function wantsHelp(args: readonly string[]): boolean {
  for (const a of args) {
    if (a === '--') return false;
    if (a === '--help' || a === '-h') return true;
  }
  return false;
}
