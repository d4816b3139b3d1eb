import type { Leg } from './ledger.ts';

/**
 * An application accepted inside a change statement (store/change.ts; engine/work/task-acceptance.ts;
 * docs/decisions/money-and-escrow.md "Task money and group commit"). The change's own row write is
 * the escrow transaction inserted already frozen, as an invoke's hold; an acceptance adds:
 * - the task's compare-and-set to matched on the status and version read (change-tasks.ts's task
 *   update, with the task's id), which gates the insert: no transaction without its matched task;
 * - the hold's release by the task's reference, a movement of its own before the freeze's;
 * - the accepted application and the task's other pending ones decided (accepted_applications,
 *   rejected_applications);
 * - what the task was charged to an agent budget moved to the transaction (moved_charges), in one
 *   insert with the take of the part of the price beyond the hold (budget_charged).
 *
 * Why no application needs a compare-and-set of its own: every path that changes a task's
 * applications (an application, a withdrawal, a rejection) writes the task row as it locks it
 * (store/tasks.ts lockTaskRenewingVersion), so the task's version covers them. The task row is
 * locked before the applications, as on every task path, so none of them is changing while the
 * statement holds it; the task events were made from the applications as read, which the version
 * says are the applications now.
 */
export interface AcceptanceParts {
  taskId: string;
  fromVersion: string;
  /** The task row's columns after the match (status, matched_skill_id, transaction_id, bounty_held, ended_at, updated_at). */
  taskSet: Record<string, unknown>;
  applicationId: string;
  decidedAt: Date;
  /** The hold's release, frozen -> available in the publisher's account, referring to the task. */
  releasedHold: Leg[];
}

interface Numbered {
  change: { transactionId: string; acceptance?: AcceptanceParts };
  ordinal: number;
}

/** The acceptances of the statement (`acceptance_input`): its allowed changes only, as every input. */
export function acceptanceInputClause(numbered: Numbered[], bindings: unknown[]): string {
  const records = numbered.flatMap(({ change, ordinal }) =>
    change.acceptance
      ? [
          {
            ordinal,
            transaction_id: change.transactionId,
            task_id: change.acceptance.taskId,
            application_id: change.acceptance.applicationId,
            decided_at: change.acceptance.decidedAt,
          },
        ]
      : [],
  );
  bindings.push(JSON.stringify(records));
  return `acceptance_input AS (SELECT * FROM jsonb_to_recordset(?::jsonb)
      AS input(ordinal int, transaction_id uuid, task_id uuid, application_id uuid, decided_at timestamptz)
    WHERE input.ordinal IN (SELECT ordinal FROM allowed))`;
}

/**
 * The written acceptances' applications: the accepted one, then every other pending one of the
 * task rejected. They run last, holding the task row (see above for why nothing else is changing them).
 */
export const applicationClauses = [
  `accepted_applications AS (UPDATE task_applications AS application SET status = 'accepted', decided_at = input.decided_at
      FROM acceptance_input AS input
     WHERE input.ordinal IN (SELECT ordinal FROM changed) AND application.id = input.application_id AND application.status = 'pending'
    RETURNING input.ordinal)`,
  `rejected_applications AS (UPDATE task_applications AS application SET status = 'rejected', decided_at = input.decided_at
      FROM acceptance_input AS input
     WHERE input.ordinal IN (SELECT ordinal FROM changed) AND application.task_id = input.task_id
       AND application.id <> input.application_id AND application.status = 'pending'
    RETURNING input.ordinal)`,
];

/**
 * What a written acceptance's task was charged becomes its transaction's (the hold became the
 * freeze), inserted with the statement's budget takes (budget_input, when `budgeted`) as one
 * INSERT, summed per charge row: two writes of one row in one statement are not allowed. A
 * release of the transaction then gives back both.
 */
export function acceptanceChargeClauses(budgeted: boolean): string[] {
  const takes = budgeted ? 'SELECT ref_id, api_key_id, currency, day, amount FROM budget_input WHERE ordinal IN (SELECT ordinal FROM changed) UNION ALL ' : '';
  return [
    `moved_charges AS (DELETE FROM agent_budget_charges AS charge USING acceptance_input AS input
      WHERE input.ordinal IN (SELECT ordinal FROM changed) AND charge.ref_id = input.task_id
     RETURNING input.transaction_id, charge.api_key_id, charge.currency, charge.day, charge.amount)`,
    `budget_charged AS (INSERT INTO agent_budget_charges (ref_id, api_key_id, currency, day, amount)
       SELECT ref_id, api_key_id, currency, day, sum(amount) FROM (
         ${takes}SELECT transaction_id, api_key_id, currency, day, amount FROM moved_charges) AS charge (ref_id, api_key_id, currency, day, amount)
        GROUP BY ref_id, api_key_id, currency, day ORDER BY ref_id, api_key_id, currency, day
     ON CONFLICT (ref_id, api_key_id, currency, day) DO UPDATE SET amount = agent_budget_charges.amount + excluded.amount
     RETURNING ref_id)`,
  ];
}
