import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

/**
 * The house's import rules (.dependency-cruiser.cjs, docs/architecture.md "Rooms") hold for the
 * product, and each of them refuses the wrong import it names: the fixture under ./fixture is a small
 * engine with one deliberate mistake of every kind.
 */
const root = path.resolve(import.meta.dirname, '../..');
const cruiser = path.join(root, 'node_modules/.bin/depcruise');
const run = promisify(execFile);

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
  cycle?: { name: string }[];
}

async function violationsIn(directory: string, targets: string[]): Promise<Violation[]> {
  const args = ['--config', path.join(root, '.dependency-cruiser.cjs'), '--output-type', 'json', ...targets];
  // The cruiser exits non-zero when it finds violations; its JSON report is on stdout either way.
  const output = await run(cruiser, args, { cwd: directory, maxBuffer: 64 * 1024 * 1024 }).catch((error: { stdout?: string }) => {
    if (!error.stdout) throw error;
    return { stdout: error.stdout };
  });
  const report = JSON.parse(output.stdout) as { summary: { violations: Violation[] } };
  return report.summary.violations;
}

describe('the import rules', () => {
  it('hold for the product: no circle, no import around a door, every engine file in a room, rooms in order', async () => {
    const violations = await violationsIn(root, ['src', 'rest', 'rpc', 'mcp', 'web', 'test', 'bench', 'scripts']);
    expect(violations.map((each) => `${each.rule.name}: ${each.from} -> ${each.to}`)).toEqual([]);
  });

  it('refuse each deliberately wrong import of the fixture, by name', async () => {
    const violations = await violationsIn(path.join(import.meta.dirname, 'fixture'), ['src', 'rest']);
    const found = violations.filter((each) => each.rule.name !== 'no-circular').map((each) => `${each.rule.name}: ${each.from} -> ${each.to}`);
    expect(found.sort()).toEqual([
      'door-from-outside: rest/route.ts -> src/engine/money/ledger.ts',
      'door-of-another-room: src/engine/market/buy.ts -> src/engine/money/ledger.ts',
      'file-outside-a-room: src/engine/loose.ts -> src/engine/common/index.ts',
      'room-order-money: src/engine/money/ledger.ts -> src/engine/market/index.ts',
    ]);
    const circles = violations.filter((each) => each.rule.name === 'no-circular').map((each) => each.from);
    expect(circles).toContain('src/engine/common/clock.ts');
    // The correct imports of the fixture (market/buy.ts through the money door) are not reported.
    expect(violations.some((each) => each.to === 'src/engine/money/index.ts' && each.rule.name !== 'no-circular')).toBe(false);
  });
});
