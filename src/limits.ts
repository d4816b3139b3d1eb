/**
 * Every limit of the service lives here, with its unit in its name, so that a reader can find
 * and reason about all bounds in one place instead of hunting for magic numbers.
 */
export const limits = {
  requestBodyBytesMax: 1024 * 1024,
  resultPayloadBytesMax: 256 * 1024,
  /**
   * An `input` or `result_payload` whose JSON is larger than this is left out of events and
   * stored idempotency responses (named in `omitted_fields`); GET returns it, replays restore it.
   */
  eventFieldInlineBytesMax: 16 * 1024,
  pageSizeDefault: 20,
  pageSizeMax: 100,
  /** A2A v1.0 ListTasks without pageSize (the protocol's default; its maximum is pageSizeMax). */
  a2aListTasksPageSizeDefault: 50,
  pageNumberMax: 1_000_000,
  idempotencyKeyLengthMax: 64,
  idempotencyRetentionMs: 24 * 60 * 60 * 1000,
  passwordLengthMin: 8,
  passwordLengthMax: 200,
  emailLengthMax: 254,
  displayNameLengthMax: 100,
  /** A buyer's note (REST, or A2A text parts) or dispute reason. */
  noteLengthMax: 4000,
  creditNoteLengthMax: 200,
  capabilityDescriptionLengthMax: 10_000,
  capabilityTagsMax: 20,
  capabilityTagLengthMax: 50,
  capabilityDailyLimitMax: 1_000_000,
  capabilityRatePerMinuteMax: 100_000,
  urlLengthMax: 2000,
  /** A2A task ids chosen by clients, and opaque tokens echoed back to us. */
  clientTaskIdLengthMax: 200,
  rpcMessagePartsMax: 50,
  cursorPartLengthMax: 100,
  apiKeyNameLengthMax: 100,
  /** Keys one person keeps live (not revoked), whatever made them; the next create is 4092. */
  ownApiKeysPerUserMax: 50,
  /** How often one instance writes a key's last_used_at at most: "last used" is told to the minute. */
  apiKeyLastUsedResolutionMs: 60_000,
  /** The capabilities an agent budget may name (docs/decisions/money-and-escrow.md "Agent budgets"). */
  agentBudgetCapabilitiesMax: 100,
  jwtLifetimeSeconds: 24 * 60 * 60,
  capabilityTitleLengthMax: 200,
  capabilityCategoryLengthMax: 50,
  callbackTimeoutSecondsMin: 5,
  callbackTimeoutSecondsMax: 120,
  callbackTimeoutSecondsDefault: 30,
  bookedHoursMin: 1,
  bookedHoursMax: 24 * 365,
  /** Largest amount in minor units (hundredths) accepted in a request: 10^15, far below 2^63. */
  amountMinorUnitsMax: 1_000_000_000_000_000n,
  /** A compare-and-set that lost a race is decided again at most this many times. */
  compareAndSetAttemptsMax: 3,
  /**
   * Group commit (engine/money/batcher.ts): state changes that arrive while a batch is in the
   * database wait and are written together, at most this many in one statement and commit.
   */
  moneyBatchChangesMax: 64,
  /** Batches one instance has in the database at once; changes arriving meanwhile wait for the next. */
  moneyBatchesInFlightMax: 1,
  /** How long the first change of a batch waits for others when no batch waits (0: the next turn of the event loop). */
  moneyBatchLingerMs: 0,
  /**
   * After a batch is answered, the changes already waiting wait at most this long more for the
   * callers just answered to send their next change, so both go in one statement (0: never wait).
   * Only while fewer than moneyBatchRejoinBelowChanges wait: a batch that large already spreads
   * the statement's fixed cost, and waiting would only idle the database.
   */
  moneyBatchRejoinWaitMs: 1,
  moneyBatchRejoinBelowChanges: 16,
  /**
   * Whether that wait pays is tried (engine/money/wait-trials.ts): a trial of
   * moneyBatchWaitTrialEpochs epochs of moneyBatchWaitTrialEpochMs, half waiting and half not,
   * then the choice under which more changes were answered a second holds for
   * moneyBatchWaitSettledMs. The other choice is taken only when it answered more by
   * moneyBatchWaitSwitchMarginRatio, and a trial of fewer than moneyBatchWaitTrialChangesMin
   * changes decides nothing. About 2 s of every 34 s runs the choice not taken. The first trial
   * starts once moneyBatchWaitFirstTrialAfterChanges changes were answered. Sixteen epochs, not
   * eight: a trial of eight spread about 6 % on a machine where the two choices were equal, and
   * one picked against a 5-10 % lead; twice the epochs narrow that by about a third.
   */
  moneyBatchWaitTrialEpochMs: 250,
  moneyBatchWaitTrialEpochs: 16,
  moneyBatchWaitSettledMs: 30_000,
  moneyBatchWaitSwitchMarginRatio: 0.03,
  moneyBatchWaitTrialChangesMin: 400,
  /** The first trial waits for this many changes answered: the JIT's warm-up made one trial see a 14 % lead where none can be (one client, which never waits). */
  moneyBatchWaitFirstTrialAfterChanges: 2_000,
  /** The cluster primary gives up when workers exit more often than this (src/cluster.ts). */
  workerRestartsPerWindowMax: 5,
  workerRestartWindowMs: 60_000,
  workerRestartDelayMs: 1_000,
  /** A worker still running this long after its own shutdown grace period is killed. */
  workerStopMarginMs: 5_000,
  /** Rows an instance wrote are kept this long for the next move (engine/money/transitions.ts). */
  transactionRowCacheTtlMs: 10_000,
  transactionRowCacheEntriesMax: 2_000,
  /** A row whose input and result_payload take more JSON than this is not kept. */
  transactionRowCachePayloadBytesMax: 16_384,
  /**
   * A buyer's purchase read of a capability is kept this long for the next purchase under a key
   * (engine/money/transactions.ts), which its write statement checks; a row with more JSON than
   * the bytes bound (a long description) is not kept.
   */
  purchaseReadCacheTtlMs: 60_000,
  purchaseReadCacheEntriesMax: 2_000,
  purchaseReadCacheRowBytesMax: 8_192,
  /** An in-flight idempotency claim younger than this is never taken over. */
  idempotencyClaimTakeoverAfterMs: 60_000,
  /** Published outbox rows are kept this long by default (OUTBOX_RETENTION_HOURS); then deleted. */
  outboxRetentionHoursDefault: 168,
  /** The retention job (engine/common/retention.ts) runs this often, deleting rows in batches of this size. */
  retentionIntervalMs: 60_000,
  retentionBatchSize: 1000,
  /** A run stops after this many batches; the next run goes on where it stopped. */
  retentionBatchesPerRunMax: 100,
  sweepBatchSizeMax: 500,
  /**
   * Due rows the sweeper moves at once (auto-confirms, overdue invokes' failures, expiries of open
   * tasks), each one change of the batcher, so that they share statements
   * (engine/money/transaction-sweeps.ts, engine/work/task-expiry.ts).
   */
  sweepMovesAtOnceMax: 32,
  /** Published outbox rows are marked in one batch this often. */
  publishedMarkFlushMs: 200,
  /** Serialization failures and deadlocks are retried this many times before giving up. */
  transactionRetriesMax: 5,
  transactionRetryBackoffMs: 5,
  shutdownGraceMs: 10_000,
  readinessCheckTimeoutMs: 2_000,
  databasePoolSizeMax: 10,
  /** Connections for writes that need no durable commit (idempotency claims, published marks). */
  asyncCommitPoolSizeMax: 4,
  /**
   * Connections for the named statements of db/prepared.ts (the hot path: change statements,
   * point reads), each planned once per connection (`plan_cache_mode = force_generic_plan`).
   */
  statementPoolSizeMax: 10,
  /** How long a request waits for a database connection before it is answered 503 (knex's default is 60 s). */
  databaseAcquireTimeoutMs: 5_000,
  /** How long opening one connection to PostgreSQL may take. */
  databaseConnectTimeoutMs: 3_000,
  /**
   * Successful credential lookups (API key, key-to-user link, user of a token) are remembered
   * this long: two database round trips fewer per request. A revoked key is forgotten at once on
   * every instance (engine/identity/identity.ts); this bounds only a revocation whose announcement was lost.
   */
  credentialCacheTtlMs: 10_000,
  credentialCacheEntriesMax: 10_000,
  /**
   * How long revoking an API key waits for every instance to say it forgot the key before it
   * answers anyway (engine/identity/key-revocations.ts); an instance that did not answer forgets
   * it when its cache entry ends.
   */
  apiKeyRevocationAcknowledgementWaitMs: 2_000,
  /**
   * Reconciled rate-limit buckets (reads and JSON-RPC calls; engine/identity/reconciled-buckets.ts)
   * send what this instance took to Redis this often, in one write for every key.
   */
  rateLimitReconcileIntervalMs: 100,
  /**
   * The share of a reconciled bucket's limit one instance admits on its own before it waits for a
   * reconciliation (at least one request): across N instances a window admits at most its limit
   * plus this share once per instance.
   */
  rateLimitUnreconciledShareMax: 0.05,
  /** A stream with nothing written for this long gets a heartbeat comment, which keeps proxies from closing it as idle. */
  streamHeartbeatMs: 15_000,
  /**
   * The heartbeat timer's tick: a quiet stream gets its heartbeat at the first tick a whole
   * interval after its last write, so streams opened at different moments are written at
   * different ticks (events/sse.ts). At most this many ticks per interval, however long it is.
   */
  streamHeartbeatTickMs: 1_000,
  streamHeartbeatTicksMax: 60,
  /** A subscriber whose unsent output grows past this is disconnected; it resumes with Last-Event-ID. */
  streamBufferedBytesMax: 256 * 1024,
  /** Out-of-order live events a subscriber may hold while its gap is filled from the database. */
  streamPendingEventsMax: 1_000,
  streamCatchUpBatchSize: 500,
  /** Streams opening at once read their starting points together, this many per query at most (events/sources.ts). */
  streamHeadsPerQueryMax: 500,
  /** The relay republishes outbox rows still unpublished this long after their commit. */
  relayGraceMs: 2_000,
  relayIntervalMs: 1_000,
  relayBatchSize: 500,
  busReconnectSecondCatchUpMs: 1_000,
  rpcBatchLengthMax: 50,
  /** Deeper JSON than this is refused: PostgreSQL's jsonb and recursive code both have limits. */
  jsonDepthMax: 32,
  rpcSubscriptionsPerSocketMax: 100,
  /**
   * Rate limits (decisions section 6, docs/decisions/limits-and-storage.md "Buckets and defaults"): at most
   * `requests` per bucket in each window of `windowSeconds`, counted in Redis when there is one.
   * RATE_LIMIT_<NAME> overrides one ("<requests>/<seconds>" or "off", e.g. RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS=30/300).
   */
  rateLimits: {
    /** Anonymous and admin routes, by client address. */
    requestsPerAddress: { requests: 1_200, windowSeconds: 60 },
    /** Strict: each answer costs a scrypt hash, and a 4092 tells that an email has an account. */
    signupPerAddress: { requests: 10, windowSeconds: 3_600 },
    /**
     * Login failure buckets: only a wrong password (4010) takes a token, a successful login clears
     * the account's two buckets, and a login is refused only while one of them is empty.
     */
    loginFailuresPerAddress: { requests: 30, windowSeconds: 300 },
    /** Strict, so that an attacker on other addresses cannot lock the owner's address out. */
    loginFailuresPerAccountAndAddress: { requests: 10, windowSeconds: 300 },
    /** Looser, by the email tried from any address: bounds guessing one password from many addresses. */
    loginFailuresPerAccount: { requests: 100, windowSeconds: 900 },
    /** Requests whose credentials were refused (4010), by address; when spent, credentials are not looked up. */
    authenticationFailuresPerAddress: { requests: 60, windowSeconds: 60 },
    /** MCP sign-in client registrations (RFC 7591, anonymous) by address: each is kept a week unless it signs in. */
    oauthRegistrationsPerAddress: { requests: 20, windowSeconds: 3_600 },
    /**
     * MCP sign-in requests stored by address. A window is a request's lifetime (10 minutes), so
     * at most twice this many wait for a person at once.
     */
    oauthSignInRequestsPerAddress: { requests: 30, windowSeconds: 600 },
    /** GET routes (lists, history, single resources) by credential. */
    readsPerCredential: { requests: 1_200, windowSeconds: 60 },
    writesPerCredential: { requests: 600, windowSeconds: 60 },
    /** JSON-RPC calls (HTTP and WebSocket), a batch counting as its length. */
    rpcCallsPerCredential: { requests: 1_200, windowSeconds: 60 },
    /** Stream opens (REST SSE, JSON-RPC SSE, WebSocket subscriptions) by credential. */
    streamOpensPerCredential: { requests: 120, windowSeconds: 60 },
    /**
     * Drafts streamed by POST /skills/ai-create and /tasks/ai-create, by credential: each may be
     * a paid language-model call, so this bucket stays exact where stream opens are reconciled.
     */
    aiDraftsPerCredential: { requests: 120, windowSeconds: 60 },
    /**
     * The same, for all the users of one API key together (ten times a credential's): an
     * auto-provisioning key gets a new credential with every new user id.
     */
    readsPerApiKey: { requests: 12_000, windowSeconds: 60 },
    writesPerApiKey: { requests: 6_000, windowSeconds: 60 },
    rpcCallsPerApiKey: { requests: 12_000, windowSeconds: 60 },
    streamOpensPerApiKey: { requests: 1_200, windowSeconds: 60 },
    aiDraftsPerApiKey: { requests: 1_200, windowSeconds: 60 },
    /** Device authorization requests a client address may start (each is a row until it expires). */
    deviceAuthorizationsPerAddress: { requests: 60, windowSeconds: 3_600 },
    /**
     * User codes a person may try on the verification page (look up or confirm, right or wrong), by
     * client address and by the code tried, from any address: guessing a code is bounded both ways.
     */
    userCodeAttemptsPerAddress: { requests: 30, windowSeconds: 900 },
    userCodeAttemptsPerCode: { requests: 10, windowSeconds: 900 },
    /**
     * Wrong user codes (no such code) one signed-in person may try, from any address: one holder
     * of many addresses (an IPv6 /48 is 65,536 /64 buckets) still guesses this slowly.
     */
    userCodeFailuresPerAccount: { requests: 30, windowSeconds: 900 },
  },
  /** Open SSE streams (REST and JSON-RPC) of one credential, of one API key's users together, and of all, per instance. */
  sseStreamsPerCredentialMax: 20,
  sseStreamsPerApiKeyMax: 200,
  sseStreamsPerInstanceMax: 20_000,
  /** Open JSON-RPC WebSocket connections of one credential, of one API key, and of all, per instance. */
  webSocketsPerCredentialMax: 20,
  webSocketsPerApiKeyMax: 200,
  webSocketsPerInstanceMax: 20_000,
  /** A socket closed for its credentials (1008) that has not finished the closing handshake by then is cut. */
  webSocketCloseGraceMs: 2_000,
  /** Password hashes (scrypt) running at once per process, and waiting for a turn; more are refused (4290). */
  passwordHashesConcurrentMax: 2,
  passwordHashesQueuedMax: 32,
  /** What a refused stream or connection is told to wait before trying again. */
  connectionCapRetryAfterSeconds: 10,
  // Demands and matching (issue 9, docs/matching.md).
  demandDescriptionLengthMax: 10_000,
  demandTitleLengthMax: 200,
  matchTopKDefault: 10,
  matchTopKMax: 50,
  /** The database's candidate stage returns at most this many rows for the engine to rerank. */
  matchCandidatesMax: 200,
  /**
   * The newest offered capabilities sharing a term with the demand that the database ranks at
   * most: the bound that keeps matching's cost flat as the market grows (store/demands.ts).
   */
  matchCandidatePoolMax: 1_000,
  /** Terms of one text sent to the database's search; the rest of a very long text adds little. */
  matchQueryTermsMax: 64,
  /** Terms kept in a row's stored term vector (the heaviest): a 10,000-character text costs a match no more than a short one. */
  matchTermsPerTextMax: 200,
  alignmentCapabilitiesMax: 50,
  /** An auto-accept attempt holds its demand at most this long; a crashed attempt frees it then. */
  autoAcceptClaimStaleMs: 60_000,
  /**
   * A demand's create whose auto-accept found the demand held by another attempt of this instance
   * (a capability's job) waits at most this long for it, so that its answer says what was bought.
   */
  autoAcceptHeldWaitMs: 5_000,
  /** A new or re-offered capability is scored against at most this many auto-accept demands. */
  autoAcceptDemandsPerCapabilityMax: 100,
  /** A capability offered tells at most this many open demands it matches (demand.matched), the ones the text search ranks first. */
  demandMatchEventsPerCapabilityMax: 100,
  /** Candidates one demand tries to buy in turn before it waits for the next capability. */
  autoAcceptAttemptsPerRunMax: 3,
  /** Auto-accept jobs (a capability offered anew) one run claims at once, and how often every instance looks for due ones. */
  autoAcceptJobsPerRunMax: 20,
  autoAcceptJobIntervalMs: 1_000,
  /** A job claimed this many times without finishing (its instance kept dying) is given up, with a log line. */
  autoAcceptJobAttemptsMax: 5,
  // Capabilities surface (issue 9): list filters and batch registration.
  /** The list's text query `q`: its length, and the words in it (each must match). */
  capabilitySearchQueryLengthMax: 200,
  capabilitySearchWordsMax: 10,
  /** Capabilities registered by one POST /capabilities/batch call (the specification's 50). */
  capabilityBatchItemsMax: 50,
  // Invoke (issue 9): the outbound callback and the hold it runs under.
  /** A callback's answer body is read up to this many bytes; more fails the invoke (decisions 7). */
  callbackResponseBytesMax: 1024 * 1024,
  /** Redirects (307 and 308 only) a callback may take; each hop's address is judged again. */
  callbackRedirectsMax: 3,
  /**
   * An invoke's deadline is its callback timeout plus this: past it the call has certainly ended
   * (or its server died), and the sweeper or a waiting retry releases the hold.
   */
  invokeDeadlineMarginMs: 15_000,
  /** A retry that finds its invoke's hold still being written (4091) tries again this often. */
  invokeWaitPollMs: 100,
  /**
   * A retry that finds its invoke still running waits for the transaction's next event on the bus,
   * and reads the row again after this long at the latest, doubling up to the maximum: a lost bus
   * message costs latency, never an answer, and a hundred waiting retries cost a few reads each.
   */
  invokeWaitCheckMinMs: 100,
  invokeWaitCheckMaxMs: 2_000,
  /** How long a retry waits for the first request's hold to commit (4091 while it does) before giving up. */
  invokeClaimWaitMs: 10_000,
  /** Counts of capability usage windows are kept this long after the window started, then pruned. */
  capabilityUsageRetentionMs: 2 * 24 * 60 * 60 * 1000,
  /** Agent budgets' usage and charges of a day are kept this long after it, then pruned (only today's usage is read). */
  agentBudgetDaysRetentionMs: 30 * 24 * 60 * 60 * 1000,
  /**
   * AI provider, clarity and pricing suggestion (docs/decisions/matching.md "The AI
   * provider"). Calls to the OpenAI-compatible endpoint are never retried; a failed
   * call makes the next ones fall back at once for a cool-down, so an endpoint that is down costs
   * requests nothing but a log line instead of a timeout each.
   */
  aiChatTimeoutMs: 20_000,
  /** A stream must send its first delta within aiChatTimeoutMs and finish within this. */
  aiChatStreamTimeoutMs: 120_000,
  aiEmbeddingTimeoutMs: 10_000,
  /** A request refused because PostgreSQL or Redis cannot be reached says to retry after this long (503). */
  dependencyRetryAfterSeconds: 2,
  /** Every chat call asks for at most this many tokens (max_tokens) unless its caller asks for fewer: answers here are a paragraph or a small JSON object. */
  aiChatMaxTokens: 1_024,
  aiFailureCooldownMs: 30_000,
  aiChatResponseBytesMax: 256 * 1024,
  aiChatStreamBytesMax: 1024 * 1024,
  aiEmbeddingResponseBytesMax: 8 * 1024 * 1024,
  aiEmbeddingTextsMax: 100,
  /** Longer texts are cut before they are sent: models have input limits and we pay per token. */
  aiEmbeddingTextLengthMax: 8_000,
  /**
   * Stored embeddings (docs/decisions/matching.md "Stored embeddings"): rows written on this instance wait
   * here to be embedded after their commit, at most this many (more are left to the periodic sweep,
   * which looks for rows without a present embedding every embeddingSweepIntervalMs, a few batches
   * at a time, so a model change re-embeds a large catalogue over minutes, not in one burst).
   */
  embeddingPendingRowsMax: 10_000,
  embeddingSweepIntervalMs: 60_000,
  embeddingSweepBatchesPerRunMax: 10,
  /** The longest a vector may be (dimensions) to be stored: 8,192 float32 are 32 KiB a row. */
  embeddingDimensionsMax: 8_192,
  aiPromptTextLengthMax: 8_000,
  /** What a model's clarity answer or pricing explanation may hold before it is refused as invalid. */
  aiAnswerItemsMax: 10,
  aiAnswerItemLengthMax: 500,
  aiExplanationLengthMax: 2_000,
  clarityTextLengthMax: 10_000,
  pricingDescriptionLengthMax: 2_000,
  /** The newest this many capabilities and settled transactions of a category are the sample. */
  pricingSampleRowsMax: 1_000,
  // Device authorization (docs/decisions/identity-and-access.md "Device authorization"), after RFC 8628.
  /** How long a device request can be approved and redeemed. */
  deviceCodeLifetimeSeconds: 15 * 60,
  /** The polling interval a request starts with; each poll that comes too early adds the step. */
  devicePollIntervalSeconds: 5,
  devicePollIntervalStepSeconds: 5,
  devicePollIntervalSecondsMax: 60,
  /**
   * A poll this much earlier than the interval still counts as on time: a client polling on a
   * fixed timer (its timer and network jitter, instances' clocks a little apart) is not answered
   * slow_down, and its interval does not grow, for arriving a few milliseconds early.
   */
  devicePollGraceMs: 1_000,
  /** Random user codes may collide with a live one; a new one is drawn at most this many times. */
  userCodeDrawsMax: 5,
  /** Requests past their expiry are kept this long (a late poll still hears 4803), then deleted. */
  deviceAuthorizationRetentionMs: 24 * 60 * 60 * 1000,
  /**
   * Characters of an `A2A-Version` this server does not speak that its -32009 echoes back: the
   * value is repeated in every refused call's error, so an 8 KiB header in a batch of 50 would
   * otherwise come back as megabytes.
   */
  a2aVersionEchoLengthMax: 32,
  // A2A conversations, ids and history (docs/decisions/a2a.md "Context ids and message ids").
  /** A client's contextId / sessionId; longer ones are refused (-32602). */
  a2aContextIdLengthMax: 256,
  /** A message's messageId; up to 64 printable ASCII characters it is the idempotency key as sent, longer ones are hashed into it. */
  a2aMessageIdLengthMax: 256,
  /** Candidates a conversation offers in one answer. */
  a2aCandidatesMax: 5,
  /** A conversation's demand title is the head of the buyer's text, cut at a word within this. */
  a2aDemandTitleLengthMax: 80,
  /** Messages a task's history answers at most (the newest ones), whatever historyLength asks. */
  a2aHistoryLengthMax: 100,
  /** A message's parts are stored up to this many bytes of JSON; a part beyond is kept as a marker of its size. */
  a2aStoredPartsBytesMax: 16 * 1024,
  /** One task's history in one answer: the newest messages up to this many bytes of JSON, older ones cut. */
  a2aHistoryAnswerBytesMax: 256 * 1024,
  /** All the histories of one ListTasks page together (shared out evenly between its tasks). */
  a2aListHistoryBytesMax: 1024 * 1024,
  /** Stored messages one ListTasks page reads, shared out between its tasks (each at most a2aStoredPartsBytesMax of parts). */
  a2aListHistoryMessagesMax: 1_000,
  /** A pick that finds the same pick still buying waits this long for it, checking this often. */
  a2aPickWaitMs: 10_000,
  a2aPickWaitPollMs: 100,
  // Skills (issue 17, docs/skills.md).
  skillNameLengthMax: 100,
  skillDescriptionLengthMax: 5_000,
  skillCityLengthMax: 100,
  skillTagsMax: 10,
  skillTagLengthMax: 30,
  /** The specification's "at most 3 images", each an https URL. */
  skillImagesMax: 3,
  /** min_duration and max_duration are whole hours, up to a year. */
  skillDurationHoursMax: 24 * 365,
  /** The hall's text query `q`, and the matches the database hands the matcher to rank (its best by text rank). */
  skillSearchQueryLengthMax: 200,
  skillHallCandidatesMax: 500,
  /** Text one extraction reads (a CV or portfolio of several pages), and the candidates it stores at most. */
  skillExtractTextLengthMax: 20_000,
  skillCandidatesPerExtractMax: 10,
  /** Evidence kept per candidate: sentences of the text, each cut to this length. */
  skillEvidenceSentencesMax: 3,
  skillEvidenceLengthMax: 300,
  /** Unconfirmed candidates one user keeps; a new extraction drops the oldest beyond this. */
  skillPendingCandidatesMax: 100,
  /** An ai-create prompt, and the pause between the built-in generator's steps (so a client sees them arrive). */
  skillPromptLengthMax: 2_000,
  skillDraftStepDelayMs: 20,
  ratingCommentLengthMax: 2_000,
  /**
   * Live (undeleted) skills one user keeps per space (issue 28): each is a row in the hall and a
   * way to apply, so one account cannot flood either. Counted under a lock on the user's row.
   */
  skillsPerUserMax: 50,
  /**
   * A rating moves a skill's quality score only when it rates a settled transaction that moved at
   * least this many minor units, and only one rating per rater and skill counts within the window:
   * a loop of free or small tasks between two accounts cannot raise a score (docs/skills.md
   * "Ratings and quality"). The others are stored and shown, marked not counted.
   */
  skillRatingCountedAmountMinorUnitsMin: 1,
  skillRatingCountedWindowMs: 30 * 24 * 60 * 60 * 1000,
  // Tasks (issue 18, docs/tasks.md).
  taskTitleLengthMax: 200,
  taskDescriptionLengthMax: 10_000,
  taskContactTypeLengthMax: 30,
  taskContactValueLengthMax: 200,
  taskEstimatedQuantityMax: 1_000_000,
  /** An open task leaves the hall (expires, its bounty released) this long after publishing unless it says otherwise, and at most this long. */
  taskLifetimeDaysDefault: 30,
  taskLifetimeDaysMax: 90,
  /** The expiry job: how often every instance looks for open tasks past their deadline, and how many one run expires at most. */
  taskExpiryIntervalMs: 10_000,
  taskExpiryBatchSize: 200,
  /**
   * Pending applications one task takes at most: every move of the task is an event for each of
   * their applicants, so this bounds what one close, update or accept writes. Checked under the
   * task's shared lock, so parallel applies may pass it by at most their number.
   */
  taskPendingApplicationsMax: 200,
  /**
   * Pending applications one applicant (user and space) holds on one task, whatever skills it
   * has, and on all tasks together (issue 28): no single account takes more than a small share
   * of a task's places. Both counted under a lock on the applicant's user row, so parallel
   * applies cannot pass them.
   */
  taskApplicationsPerApplicantMax: 2,
  liveApplicationsPerApplicantMax: 50,

  // Webhooks (issue 19, docs/webhooks.md).
  /** Live subscriptions one user has at most, per space. */
  webhookSubscriptionsPerUserMax: 20,
  /**
   * Live webhooks made with one API key, all its users together (ten times a user's): an
   * auto-provisioning key gets a new user with every new user id (issue 28 point 5).
   */
  webhookSubscriptionsPerApiKeyMax: 200,
  webhookDescriptionLengthMax: 500,
  /** One delivery attempt: the receiver answers within this or the attempt failed (and is retried). */
  webhookTimeoutMs: 10_000,
  /** Retries: after the n-th failure, wait firstDelay * 2^(n-1), at most delayMax, with jitter; give up once past the window. */
  webhookRetryFirstDelayMs: 10_000,
  webhookRetryDelayMaxMs: 2 * 60 * 60 * 1000,
  webhookDeliveryWindowMs: 24 * 60 * 60 * 1000,
  /** A delivery being sent is this instance's for this long; after it, a crash is assumed and another instance sends it again. */
  webhookLeaseMs: 30_000,
  /** Deliveries waiting for one subscription at most: past it, new events for it are recorded as failed (queue_full) instead of queued. */
  webhookPendingPerSubscriptionMax: 10_000,
  /** Sends in flight per instance, and per subscription on one instance: a slow receiver holds at most its share. */
  webhookSendsInFlightMax: 32,
  webhookSendsInFlightPerSubscriptionMax: 4,
  /**
   * Sends in flight per owner (a user, all its webhooks and push configs) on one instance, well
   * below the instance's 32: one owner's receivers that never answer hold a quarter of the slots
   * at most, and the rest go to other owners, taken in turn (issue 28, point 6).
   */
  webhookSendsInFlightPerOwnerMax: 8,
  /** The dispatcher and sender look for work this often, and at once when kicked (a ping, a push config's first send, a send settled). */
  webhookPollIntervalMs: 1_000,
  /**
   * After a dispatch that caught up with the commits (less than a full batch), the next one waits
   * this long, so that under load one pass takes the events of this long instead of a few each.
   */
  webhookDispatchLingerMs: 50,
  /**
   * Outbox rows one dispatch reads, and due deliveries one claim takes: a claim is one round of
   * the owners' turns, so it is small, and a worker claims again at once while slots are free.
   */
  webhookDispatchBatchSize: 500,
  webhookClaimBatchSize: 8,
  /** Finished deliveries (and their attempts) are kept this long for their owner to read, then deleted. */
  webhookDeliveryRetentionMs: 7 * 24 * 60 * 60 * 1000,
  /** A received answer's body is kept (in the attempt) up to this many characters, for the owner to see why it failed. */
  webhookErrorLengthMax: 500,
  /** After a rotation, deliveries carry the old secret's signature beside the new one's this long. */
  webhookPreviousSecretValidMs: 24 * 60 * 60 * 1000,
  /** runOnce (tests, tools) gives up after this many passes, so a receiver that keeps failing cannot hold it. */
  webhookRunOnceRoundsMax: 1_000,
  // A2A push notification configs (issue 19 point 2): subscriptions of the same pipeline.
  /** Live configs one caller may keep on one A2A task (one page of a list holds them all). */
  a2aPushConfigsPerTaskMax: 10,
  /**
   * Live configs one user keeps per space, on all its tasks, and all the users of one API key
   * together (ten times a user's). At the cap, a config whose task is finished and which has
   * nothing left to send is retired to make room (docs/webhooks.md "Bounds", issue 28 point 5).
   */
  a2aPushConfigsPerUserMax: 1_000,
  a2aPushConfigsPerApiKeyMax: 10_000,
  /** Configs are deleted this long after they were made, whatever their task did (a task's life is days, its auto-confirm 72 hours). */
  a2aPushConfigRetentionMs: 30 * 24 * 60 * 60 * 1000,
  /**
   * A send that registers a config answers once its first push was answered, or after this long at
   * most: the one place a receiver can delay the API, so it is short (docs/webhooks.md).
   */
  a2aPushFirstAttemptWaitMs: 500,
  a2aPushFirstAttemptPollMs: 20,
  a2aPushConfigIdLengthMax: 200,
  a2aPushTokenLengthMax: 1_000,
  a2aPushUrlLengthMax: 2_048,
  // MCP sign-in (issue 20, docs/mcp.md "Signing in").
  /** A client_id (a metadata document's https URL at most) and a resource indicator, in characters. */
  oauthUriLengthMax: 2_048,
  /**
   * A registered redirect, client or logo URI, in characters; with the counts below a registered
   * client is stored in under 8 kB (issue 28 point 9).
   */
  oauthClientUriLengthMax: 1_000,
  oauthRedirectUrisMax: 5,
  oauthClientNameLengthMax: 200,
  oauthScopeLengthMax: 200,
  /** A PKCE S256 challenge is the base64url SHA-256 of the verifier: always 43 characters (RFC 7636 section 4.2). */
  oauthCodeChallengeLength: 43,
  /** The client's state, kept with a waiting sign-in request and echoed back, in characters. */
  oauthStateLengthMax: 500,
  /** A form posted to the authorization endpoint, in bytes (every field it may carry fits several times). */
  oauthAuthorizationFormBytesMax: 16_384,
  /** A client metadata document is fetched again after this long. */
  oauthMetadataDocumentTtlMs: 24 * 60 * 60 * 1000,
  /** A client_id whose document could not be read is not fetched again for this long (per instance). */
  oauthMetadataDocumentFailureTtlMs: 60_000,
  oauthMetadataDocumentFailuresCachedMax: 1_000,
  oauthMetadataDocumentTimeoutMs: 5_000,
  /** How long a sign-in request waits for the person to decide. */
  oauthRequestLifetimeMs: 10 * 60 * 1000,
  oauthCodeLifetimeMs: 60_000,
  oauthAccessTokenLifetimeMs: 60 * 60 * 1000,
  oauthRefreshTokenLifetimeMs: 30 * 24 * 60 * 60 * 1000,
  /** Registered clients that never got a token are forgotten after this long. */
  oauthIdleClientRetentionMs: 7 * 24 * 60 * 60 * 1000,
} as const;
