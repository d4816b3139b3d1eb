import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { actionTowards, hallSortOf, nextSkillStatus, skillActions, skillStatuses, skillTransitionTable } from '../../src/domain/skills.ts';
import { AppError } from '../../src/errors.ts';

/** Written out by hand from docs/skills.md, not read from the code: a wrong row in the table fails here. */
const expected: Record<string, string | null> = {
  'active deactivate': 'inactive',
  'active activate': null,
  'inactive activate': 'active',
  'inactive deactivate': null,
};

describe('the skill status table', () => {
  it.each(skillStatuses.flatMap((from) => skillActions.map((action) => [from, action] as const)))(
    '%s + %s moves as the table says, or is 4090',
    (from, action) => {
      const to = expected[`${from} ${action}`];
      if (to) {
        expect(nextSkillStatus(from, action)).toBe(to);
      } else {
        const error = (() => {
          try {
            nextSkillStatus(from, action);
          } catch (thrown) {
            return thrown;
          }
          return null;
        })();
        expect(error).toBeInstanceOf(AppError);
        expect((error as AppError).code).toBe(4090);
      }
    },
  );

  it('is the table docs/skills.md shows', () => {
    const doc = readFileSync(new URL('../../docs/skills.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Skill status'), doc.indexOf('## The hall'));
    const rows = [...section.matchAll(/^\| (\w+) \| (\w+) \(`status: "\w+"`\) \| (\w+) \|$/gm)].map(([, from, action, to]) => ({ from, action, to }));
    expect(rows).toEqual(skillTransitionTable);
  });

  it('reads a PUT status as the action towards it, and the same status as no action', () => {
    expect(actionTowards('active', 'inactive')).toBe('deactivate');
    expect(actionTowards('inactive', 'active')).toBe('activate');
    expect(actionTowards('active', 'active')).toBeNull();
    expect(actionTowards('inactive', 'inactive')).toBeNull();
  });

  it('orders the hall by relevance only with a text query', () => {
    expect(hallSortOf(undefined, true)).toBe('relevance');
    expect(hallSortOf(undefined, false)).toBe('newest');
    expect(hallSortOf('price_asc', true)).toBe('price_asc');
    expect(() => hallSortOf('relevance', false)).toThrow(AppError);
  });
});
