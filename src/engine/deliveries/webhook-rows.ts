/** Rows of the webhook tables (migration 026) and how their owner sees them. */
export interface SubscriptionRow {
  id: string;
  owner_user_id: string;
  owner_type: 'agent' | 'human';
  url: string;
  event_types: string[];
  transaction_id: string | null;
  task_id: string | null;
  description: string | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  created_at: Date;
  deleted_at: Date | null;
  /** The API key it was made with (migration 032), counted for that key's cap; null for a JWT or a person. */
  api_key_id: string | null;
  /** A REST webhook, or an A2A push notification config (migration 027; the a2a_ fields are set only then). */
  kind: 'webhook' | 'a2a_push';
  a2a_generation: 'v0.1' | 'v0.3' | 'v1.0' | null;
  a2a_task_id: string | null;
  a2a_task_name: string | null;
  a2a_config_id: string | null;
  a2a_token: string | null;
  a2a_auth_scheme: string | null;
  a2a_auth_credentials: string | null;
}

export interface DeliveryRow {
  id: string;
  subscription_id: string;
  source: string;
  source_event_id: string;
  /** Orders the deliveries one event made for one subscription (a v1.0 push's artifact, then its status). */
  part: number;
  ordering_key: string;
  event_type: string;
  body: Record<string, unknown>;
  status: 'pending' | 'sending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: Date;
  lease_until: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

export interface AttemptRow {
  delivery_id: string;
  number: number;
  started_at: Date;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
}

const iso = (value: Date | null) => (value === null ? null : new Date(value).toISOString());

/** The secret is never shown here: only when it is made (create, rotate). */
export const subscriptionView = (row: SubscriptionRow) => ({
  id: row.id,
  url: row.url,
  event_types: row.event_types,
  transaction_id: row.transaction_id,
  task_id: row.task_id,
  description: row.description,
  owner_type: row.owner_type,
  created_at: iso(row.created_at)!,
  previous_secret_expires_at: row.previous_secret_expires_at !== null && row.previous_secret !== null ? iso(row.previous_secret_expires_at) : null,
  kind: row.kind,
  a2a: row.kind === 'a2a_push' ? { task_id: row.a2a_task_name!, config_id: row.a2a_config_id!, generation: row.a2a_generation! } : null,
});

export const attemptView = (row: AttemptRow) => ({
  number: row.number,
  started_at: iso(row.started_at)!,
  duration_ms: row.duration_ms,
  status_code: row.status_code,
  error: row.error,
});

/** `status` sending is shown as pending: to its owner, a delivery is waiting or it is finished. */
export const deliveryView = (row: DeliveryRow, attempts: AttemptRow[]) => ({
  id: row.id,
  subscription_id: row.subscription_id,
  event_type: row.event_type,
  status: row.status === 'sending' ? 'pending' : row.status,
  attempts: row.attempts,
  next_attempt_at: row.status === 'pending' || row.status === 'sending' ? iso(row.next_attempt_at) : null,
  last_status_code: row.last_status_code,
  last_error: row.last_error,
  created_at: iso(row.created_at)!,
  finished_at: iso(row.finished_at),
  body: row.body,
  attempt_log: attempts.map(attemptView),
});
