/**
 * The access room: who may see or do what, as data and small pure functions (rules.ts holds the
 * Caller, Rule and authorize(); one file per resource holds its policies). Every room asks here and
 * nowhere else, and this room imports nothing from the others but the common room's types.
 */
export { listKeyTransactions, manageAgentBudget } from './budgets.ts';
export { buyCapability, manageCapability, ownerTypeOf, seeCapability } from './capabilities.ts';
export { alignWith, discoverFor, linkPurchaseTo, ownDemand, seeDemand } from './demands.ts';
export { invokablePricingModels, invokeCapability } from './invoke.ts';
export { authorize, type Caller, type Rule } from './rules.ts';
export { manageSkill, ownCandidate, seeSkill } from './skills.ts';
export { manageTask, seeTask } from './tasks.ts';
export { actorOf, authorizeAction, canSee, canSeeEventOf, partyOf, seeTransaction, visibleScope } from './transactions.ts';
export { historyAccountIds, ownAccountIds } from './wallet.ts';
export { manageWebhook } from './webhooks.ts';
