import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nextTaskState, taskActions, taskStatuses, taskTransitionTable } from '../../src/domain/tasks.ts';
import { AppError } from '../../src/errors.ts';

/** Written out by hand from docs/tasks.md, not read from the code: a wrong row in the table fails here. */
const expected: Record<string, [string, string] | undefined> = {
  'draft publish': ['open', 'hold'],
  'draft update': ['draft', 'none'],
  'draft close': ['closed', 'none'],
  'open update': ['open', 'adjust'],
  'open close': ['closed', 'release'],
  'open cancel': ['cancelled', 'release'],
  'open expire': ['expired', 'release'],
  'open match': ['matched', 'to_transaction'],
};

describe('the task status table', () => {
  it.each(taskStatuses.flatMap((from) => taskActions.map((action) => [from, action] as const)))(
    '%s + %s moves as docs/tasks.md says, or is 4090',
    (from, action) => {
      const move = expected[`${from} ${action}`];
      if (move) {
        expect(nextTaskState(from, action)).toMatchObject({ to: move[0], money: move[1] });
        return;
      }
      let thrown: unknown = null;
      try {
        nextTaskState(from, action);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(AppError);
      expect(thrown).toMatchObject({ code: 4090, data: { status: from, action } });
    },
  );

  it('is the table docs/tasks.md shows', () => {
    const doc = readFileSync(new URL('../../docs/tasks.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('## Task status'), doc.indexOf('## Bounty money'));
    const rows = [...section.matchAll(/^\| (\w+) \| (\w+) \| (\w+) \| (\w+)[^|]* \| (\w+) \|$/gm)]
      .filter(([, from]) => from !== 'From')
      .map(([, from, action, to, actor, money]) => ({ from, action, to, actor: actor === 'publisher' ? 'owner' : actor, money }));
    expect(rows).toEqual(taskTransitionTable);
  });
});
