import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium } from 'playwright-core';

/**
 * A Chromium driven by playwright-core, which never downloads a browser of its own. The browser
 * is, in this order: the one CHROMIUM_PATH names; Debian's `chromium` when it is installed (.ci/run
 * installs it); else the build the @sparticuz/chromium package ships inside its npm tarball,
 * unpacked into the temporary directory on first use, so that `npm ci && npm test` on a fresh
 * machine needs nothing else. The flags keep it off the network it would otherwise try (this
 * machine's is closed) and off the GPU. Each launch gets a new empty profile directory, removed
 * when it closes.
 */
const systemChromium = '/usr/bin/chromium';
const offline = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** `bundled`: the packaged build even when another is installed (the test of a fresh machine). */
export async function chromiumToLaunch(choice: 'first-found' | 'bundled' = 'first-found'): Promise<{ executablePath: string; args: string[]; source: string }> {
  if (choice === 'first-found' && process.env.CHROMIUM_PATH) return { executablePath: process.env.CHROMIUM_PATH, args: offline, source: 'CHROMIUM_PATH' };
  if (choice === 'first-found' && existsSync(systemChromium)) return { executablePath: systemChromium, args: offline, source: 'system' };
  const bundled = (await import('@sparticuz/chromium')).default;
  // Its own flags first (software rendering, one process), then ours; it runs headless only.
  const args = [...bundled.args, ...offline.filter((flag) => flag !== '--headless' && !bundled.args.includes(flag))];
  return { executablePath: await bundled.executablePath(), args, source: '@sparticuz/chromium' };
}

export async function launchChromium(
  choice: 'first-found' | 'bundled' = 'first-found',
): Promise<{ context: BrowserContext; source: string; close(): Promise<void> }> {
  const { executablePath, args, source } = await chromiumToLaunch(choice);
  const profile = mkdtempSync(path.join(tmpdir(), 'chromium-profile-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath, headless: true, args });
  return {
    context,
    source,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
