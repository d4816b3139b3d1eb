import { formatAmount } from '../../domain/money.ts';
import type { ApplicationStatus } from '../../domain/tasks.ts';

/** A row of task_applications, and how it is shown (to its applicant, the publisher, and on their task streams). */
export interface ApplicationRow {
  id: string;
  task_id: string;
  skill_id: string;
  applicant_id: string;
  owner_type: 'agent' | 'human';
  message: string | null;
  proposed_price: string | null;
  proposed_billing_model: string | null;
  proposed_unit_price: string | null;
  proposed_quantity: number | null;
  status: ApplicationStatus;
  applied_at: Date;
  decided_at: Date | null;
}

const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());
const amount = (value: string | null) => (value === null ? null : formatAmount(value));

export const applicationView = (row: ApplicationRow) => ({
  id: row.id,
  task_id: row.task_id,
  skill_id: row.skill_id,
  applicant_id: row.applicant_id,
  message: row.message,
  proposed_price: amount(row.proposed_price),
  proposed_billing_model: row.proposed_billing_model,
  proposed_unit_price: amount(row.proposed_unit_price),
  proposed_quantity: row.proposed_quantity,
  status: row.status,
  applied_at: iso(row.applied_at)!,
  decided_at: iso(row.decided_at),
});

export type ApplicationView = ReturnType<typeof applicationView>;
