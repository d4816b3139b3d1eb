import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { startTestApp } from '../test/helpers/app.ts';
import { signUpHuman } from '../test/helpers/actors.ts';
import { launchChromium } from '../test/helpers/browser.ts';
import { freePort } from '../test/helpers/processes.ts';
import { consoleScreenshots } from './screenshots-console.ts';

/**
 * Screenshots of the device verification page for docs/screenshots/, at a desktop and a phone
 * width: signing in, the request to approve, and the outcome with the key list; then every page
 * of the web console (scripts/screenshots-console.ts). Run with
 * `npx tsx scripts/screenshots.ts`; it starts its own server on an in-memory database and uses
 * the browser setup of the tests (Debian's chromium through playwright-core).
 */
const outputDirectory = path.resolve('docs/screenshots');
const viewports = { desktop: { width: 1280, height: 900 }, phone: { width: 390, height: 844 } } as const;

async function main() {
  mkdirSync(outputDirectory, { recursive: true });
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const test = await startTestApp({ PUBLIC_BASE_URL: base });
  const server = createServer(test.app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const browser = await launchChromium();
  try {
    const human = await signUpHuman(test, 'ada@example.com');
    for (const [name, viewport] of Object.entries(viewports)) {
      const flow = (await test.http.post('/api/v1/auth/device-auth').send({ agent_platform_type: 'claude_code' })).body.data;
      const page = await browser.context.newPage();
      await page.setViewportSize(viewport);
      await page.goto(flow.verification_url_complete);
      await page.getByLabel('Email').fill(human.email);
      await page.screenshot({ path: path.join(outputDirectory, `device-${name}-sign-in.png`), fullPage: true });
      await page.getByLabel('Password').fill(human.password);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByRole('heading', { name: 'Approve this application?' }).waitFor();
      await page.screenshot({ path: path.join(outputDirectory, `device-${name}-request.png`), fullPage: true });
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByRole('heading', { name: 'Approved' }).waitFor();
      // The client collects its key, and the list then shows it.
      test.clock.advanceMs(10_000);
      await test.http.post('/api/v1/auth/device-auth/poll').send({ device_code: flow.device_code });
      await page.getByRole('button', { name: 'Refresh the list' }).click();
      await page
        .getByRole('button', { name: /^Revoke Claude Code/ })
        .first()
        .waitFor();
      await page.screenshot({ path: path.join(outputDirectory, `device-${name}-approved.png`), fullPage: true });
      await page.close();
    }
    await consoleScreenshots(test, base, viewports, outputDirectory);
    console.log(`screenshots written to ${outputDirectory}`);
  } finally {
    await browser.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await test.close();
  }
}

await main();
