/**
 * The money room: everything that moves or holds money. Transactions and their state machine
 * (transitions, with the ledger entries and outbox row of each move in one database transaction),
 * wallets, buyer ceilings, capability usage limits, agent budgets, task bounty holds, idempotency of every paid
 * request, the sweeper that expires and auto-confirms, and the transaction streams. It stands on
 * access and common; the market, work and A2A rooms spend through this door.
 */
export {
  chargeAcceptance,
  chargeAgentBudget,
  chargeBounty,
  planFreezeCharge,
  type FreezeCharge,
  planPurchaseCharge,
  planAcceptanceCharge,
  planBountyCharge,
  checkAgentBudget,
  giveBackAgentBudget,
} from './budgets.ts';
export { type BudgetCharge } from './budget-bounds.ts';
export { agentBudgetView, createAgentBudgets, type AgentBudgets } from './budget-settings.ts';
export { giveBackUnlessWritten, takeCapabilityUsage, type TakenUsage, wroteNothing } from './capability-limits.ts';
export { assertBuyerCeiling, priceUnder, purchaseRead, splitPurchaseRead } from './ceilings.ts';
export { createIdempotency, fingerprintOf, type Idempotency, type IdempotencyRequest, type Outcome } from './idempotency.ts';
export { createStreams } from './streams.ts';
export { createSweeper } from './sweeper.ts';
export { bountyHoldLegs, changeHold } from './task-money.ts';
export { balanceRefusal, checkDemandLink, newTransactionRow, untouchedLifecycle, type CreateTransactionCommand } from './new-transactions.ts';
export { overdueInvoke } from './transaction-sweeps.ts';
export { createTransactionEngine, type PartyAction, type TransactionEngine } from './transactions.ts';
export { createTransitions, type ActionExtra, type Transitions } from './transitions.ts';
export { transactionView, withLargeFieldsLeftOut } from './views.ts';
export { createWalletEngine } from './wallet.ts';
export { type BatcherOptions, createBatcher, isChangesOwnFailure, splitBatch } from './batcher.ts';
export { type WaitTrialOptions, createWaitTrials } from './wait-trials.ts';
