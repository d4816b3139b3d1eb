import { performance } from 'node:perf_hooks';
import type { Knex } from 'knex';
import type { Database } from './database.ts';
import * as identity from './migrations/001_identity.ts';
import * as money from './migrations/002_money.ts';
import * as clientTaskIds from './migrations/003_client_task_ids.ts';
import * as idempotencyClaims from './migrations/004_idempotency_claims.ts';
import * as transactionTerms from './migrations/005_transaction_terms.ts';
import * as systemAccounts from './migrations/006_system_accounts.ts';
import * as ledgerIntegrity from './migrations/007_ledger_integrity.ts';
import * as outboxRetention from './migrations/008_outbox_retention.ts';
import * as capabilitySecrets from './migrations/009_capability_secrets.ts';
import * as demandsMatching from './migrations/012_demands_matching.ts';
import * as capabilityListing from './migrations/010_capability_listing.ts';
import * as invoke from './migrations/011_invoke.ts';
import * as a2aConversations from './migrations/013_a2a_conversations.ts';
import * as deviceAuthorization from './migrations/014_device_authorization.ts';
import * as purchaseCeilings from './migrations/015_purchase_ceilings.ts';
import * as a2aRetention from './migrations/016_a2a_retention.ts';
import * as autoAcceptFailure from './migrations/017_auto_accept_failure.ts';
import * as termVectors from './migrations/018_term_vectors.ts';
import * as autoAcceptJobs from './migrations/019_auto_accept_jobs.ts';
import * as rowEmbeddings from './migrations/020_row_embeddings.ts';
import * as skills from './migrations/021_skills.ts';
import * as tasks from './migrations/022_tasks.ts';
import * as taskTransactions from './migrations/023_task_transactions.ts';
import * as taskPushes from './migrations/024_task_pushes.ts';
import * as taskEvents from './migrations/025_task_events.ts';
import * as webhooks from './migrations/026_webhooks.ts';
import * as a2aPush from './migrations/027_a2a_push.ts';
import * as demandEvents from './migrations/028_demand_events.ts';
import * as mcpOAuth from './migrations/029_mcp_oauth.ts';
import * as taskPushWithdrawal from './migrations/030_task_push_withdrawal.ts';
import * as ratingCost from './migrations/031_rating_cost.ts';
import * as subscriptionCaps from './migrations/032_subscription_caps.ts';
import * as linearSearchText from './migrations/033_linear_search_text.ts';
import * as webhookTurns from './migrations/035_webhook_turns.ts';
import * as agentBudgets from './migrations/040_agent_budgets.ts';
import * as apiKeyUse from './migrations/050_api_key_use.ts';
import * as transactionApiKey from './migrations/060_transaction_api_key.ts';
import * as transactionDeadlines from './migrations/070_transaction_deadlines.ts';
import * as transactionMovesHot from './migrations/071_transaction_moves_hot.ts';
import * as eventQueues from './migrations/072_event_queues.ts';
import * as eventRowsUntouched from './migrations/073_event_rows_untouched.ts';
import * as draftsClose from './migrations/074_drafts_close.ts';
import * as transactionDeliveryHours from './migrations/075_transaction_delivery_hours.ts';
import * as endedTaskApplications from './migrations/076_ended_task_applications.ts';
import * as transactionCountedDay from './migrations/077_transaction_counted_day.ts';

/**
 * Migrations are listed here explicitly instead of being discovered on disk, so they load the
 * same way under tsx, vitest and any bundler, on PostgreSQL and on PGlite alike.
 */
const migrations: Record<string, { up(knex: Knex): Promise<void>; down(knex: Knex): Promise<void>; config?: { transaction?: boolean } }> = {
  '001_identity': identity,
  '002_money': money,
  '003_client_task_ids': clientTaskIds,
  '004_idempotency_claims': idempotencyClaims,
  '005_transaction_terms': transactionTerms,
  '006_system_accounts': systemAccounts,
  '007_ledger_integrity': ledgerIntegrity,
  '008_outbox_retention': outboxRetention,
  '009_capability_secrets': capabilitySecrets,
  '012_demands_matching': demandsMatching,
  '010_capability_listing': capabilityListing,
  '011_invoke': invoke,
  '013_a2a_conversations': a2aConversations,
  '014_device_authorization': deviceAuthorization,
  '015_purchase_ceilings': purchaseCeilings,
  '016_a2a_retention': a2aRetention,
  '017_auto_accept_failure': autoAcceptFailure,
  '018_term_vectors': termVectors,
  '019_auto_accept_jobs': autoAcceptJobs,
  '020_row_embeddings': rowEmbeddings,
  '021_skills': skills,
  '022_tasks': tasks,
  '023_task_transactions': taskTransactions,
  '024_task_pushes': taskPushes,
  '025_task_events': taskEvents,
  '026_webhooks': webhooks,
  '027_a2a_push': a2aPush,
  '028_demand_events': demandEvents,
  '029_mcp_oauth': mcpOAuth,
  '030_task_push_withdrawal': taskPushWithdrawal,
  '031_rating_cost': ratingCost,
  '032_subscription_caps': subscriptionCaps,
  '033_linear_search_text': linearSearchText,
  '035_webhook_turns': webhookTurns,
  '040_agent_budgets': agentBudgets,
  '050_api_key_use': apiKeyUse,
  '060_transaction_api_key': transactionApiKey,
  '070_transaction_deadlines': transactionDeadlines,
  '071_transaction_moves_hot': transactionMovesHot,
  '072_event_queues': eventQueues,
  '073_event_rows_untouched': eventRowsUntouched,
  '074_drafts_close': draftsClose,
  '075_transaction_delivery_hours': transactionDeliveryHours,
  '076_ended_task_applications': endedTaskApplications,
  '077_transaction_counted_day': transactionCountedDay,
};

export const migrationSource: Knex.MigrationSource<string> = {
  getMigrations: async () => Object.keys(migrations).sort(),
  getMigrationName: (name) => name,
  getMigration: async (name) => migrations[name]!,
};

/**
 * The same migrations, each saying when it starts and how long it took: a first start on the
 * embedded database migrates for many seconds, and a newcomer should see it working, not wait in
 * silence.
 */
function reportingSource(log: (line: string) => void): Knex.MigrationSource<string> {
  return {
    ...migrationSource,
    getMigration: async (name) => {
      const migration = migrations[name]!;
      // Everything else of the migration (its `config`, such as transaction: false) is kept.
      return {
        ...migration,
        up: async (knex: Knex) => {
          log(`migrating: ${name}`);
          const startedAt = performance.now();
          await migration.up(knex);
          log(`migrated: ${name} in ${Math.round(performance.now() - startedAt)} ms`);
        },
      };
    },
  };
}

export async function migrateToLatest(db: Database, log: (line: string) => void = () => {}): Promise<string[]> {
  const startedAt = performance.now();
  const [, applied] = (await db.migrate.latest({ migrationSource: reportingSource(log) })) as [number, string[]];
  const tookMs = Math.round(performance.now() - startedAt);
  log(applied.length > 0 ? `migrations: ${applied.length} applied in ${tookMs} ms` : `migrations: the database is up to date (checked in ${tookMs} ms)`);
  return applied;
}
