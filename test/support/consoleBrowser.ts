// The console in a real browser: Debian's Chromium driven by playwright-core, the console built when its
// sources are newer than dist/console (so a suite never tests stale files), and the sign-in.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { build } from 'vite';
import { CONSOLE_DIR } from '../../src/console/consoleRoute.ts';
import { packagePath } from '../../src/packageRoot.ts';

/** The Chromium to drive, or undefined (a suite then says so and skips). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find((file) => existsSync(file));

/** Where console suites write their screenshots. */
export const CONSOLE_ARTIFACTS = packagePath('test-artifacts', 'console');
const AXE = packagePath('node_modules', 'axe-core', 'axe.min.js');

/** What a console suite does first: the screenshot folder made, the console built if stale. */
export async function prepareConsole(): Promise<void> {
  await mkdir(CONSOLE_ARTIFACTS, { recursive: true });
  await ensureConsoleBuilt();
}

/**
 * axe-core's serious and critical WCAG 2.1 A/AA and best-practice violations on `page`, one line each. axe is
 * injected as a script: the page must bypass the console's Content-Security-Policy (`bypassCSP`).
 */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: await readFile(AXE, 'utf8') });
  const result = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    return axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
  });
  return result.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.impact} ${violation.id}: ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

/** Builds the console when dist/console is missing or older than its sources. */
export async function ensureConsoleBuilt(): Promise<void> {
  const built = path.join(CONSOLE_DIR, 'index.html');
  const newest = (dir: string): number =>
    Math.max(...readdirSync(dir, { withFileTypes: true }).map((entry) => (entry.isDirectory() ? newest(path.join(dir, entry.name)) : statSync(path.join(dir, entry.name)).mtimeMs)));
  if (existsSync(built) && statSync(built).mtimeMs >= newest(packagePath('console'))) return;
  await build({ configFile: packagePath('console', 'vite.config.ts'), logLevel: 'error' });
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Signs in to the console at `baseUrl` with a pasted token. */
export async function signIn(page: Page, baseUrl: string, token: string): Promise<void> {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel('API token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
