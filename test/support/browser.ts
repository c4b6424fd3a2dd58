// Headless Chromium for tests of the web pages, driven by playwright-core with Debian's chromium (CI installs it in
// .ci/run). Pages under test only ever come from this machine: every context refuses requests to any other host.
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Browser, type BrowserContext, type BrowserContextOptions, chromium, type Page } from 'playwright-core';

export const chromiumPath = '/usr/bin/chromium';
export const artifactsDir = new URL('../../test-artifacts/', import.meta.url).pathname;

/**
 * Chromium, or null when it is not installed on a developer's machine (the test then skips with a message). In CI a
 * missing Chromium is a failure, not a skip.
 */
export async function launchBrowser(): Promise<Browser | null> {
  if (!existsSync(chromiumPath)) {
    if (process.env['CI'] === 'true') throw new Error(`${chromiumPath} is missing: CI installs chromium in .ci/run`);
    return null;
  }
  return chromium.launch({
    executablePath: chromiumPath,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

const loopbackHosts = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);

/** True for URLs a test may load: loopback hosts, and the blank and data pages that need no network. */
export function isLoopbackUrl(url: string): boolean {
  const u = new URL(url);
  if (u.protocol === 'about:' || u.protocol === 'data:') return true;
  return loopbackHosts.has(u.hostname);
}

/** A browser context whose requests to anything but loopback are aborted (and listed, for a test to assert on). */
export async function loopbackContext(
  browser: Browser,
  options: BrowserContextOptions = {},
): Promise<{ context: BrowserContext; refused: string[] }> {
  const context = await browser.newContext(options);
  const refused: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (isLoopbackUrl(url)) return route.fallback();
    refused.push(url);
    return route.abort('blockedbyclient');
  });
  return { context, refused };
}

/** Saves a full-page PNG as test-artifacts/<name>.png, to look at after the run; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Sign in through the sign-in form as a person would, and wait for the account page. */
export async function signInToAccount(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(`${baseUrl}/signin?next=/account`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: /sign in/i }).click();
  await page.getByRole('heading', { name: 'Your account' }).waitFor();
}
