import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isSupportedNode, nodeSupportNotice, supportedNodeRange } from '../../src/node-support.ts';

/**
 * On a Node line the product does not support, `npm start` and `npm test` say in one line which
 * Node to use, and go on (issue 28, point 17). The version is faked: in the function by its
 * argument, in a process by redefining process.versions.node before the program loads.
 */
describe('the Node version check', () => {
  it('accepts exactly the lines of package.json engines', () => {
    expect(JSON.parse(readFileSync('package.json', 'utf8')).engines.node).toBe(supportedNodeRange);
    for (const version of ['22.12.0', '22.20.1', 'v22.12.0', '24.0.0', '24.11.1', '25.2.0']) expect(isSupportedNode(version), version).toBe(true);
    for (const version of ['18.20.8', '20.20.2', '21.7.3', '22.11.0', '22.0.0', '23.11.1', 'v20.19.0']) expect(isSupportedNode(version), version).toBe(false);
  });

  it('names the version, the Node to use and that it goes on, in one line', () => {
    expect(nodeSupportNotice('22.12.0', 'the server')).toBeNull();
    expect(nodeSupportNotice('20.20.2', 'the server')).toBe(
      'Node 20.20.2 is not supported (package.json engines: ^22.12.0 || >=24.0.0): use Node 22.12 or later, or 24; the server goes on anyway, unsupported.',
    );
  });

  const underFakeNode = (version: string, entry: string, environment: Record<string, string>) =>
    spawnSync(
      process.execPath,
      ['--import', `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${version}"})`, '--import', 'tsx', entry],
      {
        encoding: 'utf8',
        timeout: 100_000,
        env: { ...process.env, ...environment },
      },
    );

  it('is the first thing the server says on Node 20, before its configuration is even read', () => {
    // Production without secrets stops at the configuration: the check must already have spoken.
    const started = underFakeNode('20.20.2', 'src/main.ts', {
      NODE_ENV: 'production',
      JWT_SECRET: '',
      ADMIN_TOKEN: '',
      DATABASE_URL: '',
      npm_lifecycle_event: 'start',
    });
    expect(started.status).toBe(1);
    const [first, ...rest] = started.stderr.trim().split('\n');
    expect(first).toBe(nodeSupportNotice('20.20.2', 'the server'));
    expect(rest.join('\n')).not.toContain('not supported');
  }, 120_000);

  it('says it for npm test in one line, and says nothing on a supported Node', () => {
    const pretest = underFakeNode('20.20.2', 'src/node-support.ts', { npm_lifecycle_event: 'pretest' });
    expect(pretest.status).toBe(0);
    expect(pretest.stderr).toBe(`${nodeSupportNotice('20.20.2', 'npm test')}\n`);
    const supported = underFakeNode('24.0.0', 'src/node-support.ts', { npm_lifecycle_event: 'pretest' });
    expect({ status: supported.status, stderr: supported.stderr }).toEqual({ status: 0, stderr: '' });
  }, 120_000);
});
