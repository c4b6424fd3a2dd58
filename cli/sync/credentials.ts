// Where the command-line client keeps its login: `credentials.json` in the user's config directory
// ($ASSAY_CONFIG_DIR, else $XDG_CONFIG_HOME/assay, else ~/.config/assay), readable by the user alone (0600, in a
// 0700 directory), one entry per server. And its cache of file hashes ($XDG_CACHE_HOME/assay), which only makes a
// second sync faster.
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface ServerLogin {
  /** The client this device registered (RFC 7591), reused by later logins. */
  client_id: string;
  access_token: string | null;
  refresh_token: string | null;
  /** When the access token expires, ms since the epoch. */
  expires_at: number;
  scope: string;
}

interface CredentialsFile {
  default_server: string | null;
  servers: Record<string, ServerLogin>;
}

export function configDir(): string {
  const env = process.env;
  if (env.ASSAY_CONFIG_DIR) return env.ASSAY_CONFIG_DIR;
  return join(env.XDG_CONFIG_HOME || join(homedir(), '.config'), 'assay');
}

export function cacheDir(): string {
  const env = process.env;
  if (env.ASSAY_CACHE_DIR) return env.ASSAY_CACHE_DIR;
  return join(env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'assay');
}

const file = () => join(configDir(), 'credentials.json');

function read(): CredentialsFile {
  try {
    const parsed = JSON.parse(readFileSync(file(), 'utf8')) as CredentialsFile;
    return { default_server: parsed.default_server ?? null, servers: parsed.servers ?? {} };
  } catch {
    return { default_server: null, servers: {} };
  }
}

function write(c: CredentialsFile): void {
  const dir = configDir();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${file()}.${process.pid}.tmp`;
  // Created 0600 (the mode applies at creation), then renamed over the old file: never readable by others.
  writeFileSync(tmp, `${JSON.stringify(c, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, file());
}

export const credentials = {
  path: file,
  defaultServer(): string | null {
    return read().default_server;
  },
  get(server: string): ServerLogin | null {
    return read().servers[server] ?? null;
  },
  put(server: string, login: ServerLogin, makeDefault = true): void {
    const c = read();
    c.servers[server] = login;
    if (makeDefault) c.default_server = server;
    write(c);
  },
  /** Forget the tokens of a server (the registered client is kept, so the next login needs no new registration). */
  forgetTokens(server: string): void {
    const c = read();
    const login = c.servers[server];
    if (!login) return;
    c.servers[server] = { ...login, access_token: null, refresh_token: null, expires_at: 0 };
    write(c);
  },
};
