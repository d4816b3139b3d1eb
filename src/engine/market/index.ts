/**
 * The market room: what is offered and what is wanted, and how they meet. Capabilities, demands,
 * matching with stored term vectors and embeddings, invoke (buying a capability synchronously),
 * auto-accept and its jobs, demand-match events, pricing suggestions and the clarity analysis.
 * It buys through the money room's door and never touches balances itself.
 */
export { createAnalysisEngine, jsonOfAnswer } from './analysis.ts';
export { createAutoAcceptJobs } from './auto-accept-jobs.ts';
export { createAutoAccept } from './auto-accept.ts';
export { createCapabilityEngine } from './capabilities.ts';
export { createDemandMatches, toDemandEvent, type DemandEventRow } from './demand-matches.ts';
export { createDemandEngine, type DemandEngine } from './demands.ts';
export { createRowEmbeddings, type RowEmbeddings } from './embeddings.ts';
export { createInvokeEngine, type InvokeEngine } from './invoke.ts';
export { createMatchingEngine, type MatchingEngine } from './matching.ts';
export { createPricingSuggestionEngine } from './pricing-suggestion.ts';
