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
  /** The cluster primary gives up when workers exit more often than this (src/cluster.ts). */
  workerRestartsPerWindowMax: 5,
  workerRestartWindowMs: 60_000,
  workerRestartDelayMs: 1_000,
  /** A worker still running this long after its own shutdown grace period is killed. */
  workerStopMarginMs: 5_000,
  /** Rows an instance wrote are kept this long for the next move (engine/transitions.ts). */
  transactionRowCacheTtlMs: 10_000,
  transactionRowCacheEntriesMax: 2_000,
  /** A row whose input and result_payload take more JSON than this is not kept. */
  transactionRowCachePayloadBytesMax: 16_384,
  /** An in-flight idempotency claim younger than this is never taken over. */
  idempotencyClaimTakeoverAfterMs: 60_000,
  /** Published outbox rows are kept this long by default (OUTBOX_RETENTION_HOURS); then deleted. */
  outboxRetentionHoursDefault: 168,
  /** The retention job (engine/retention.ts) runs this often, deleting rows in batches of this size. */
  retentionIntervalMs: 60_000,
  retentionBatchSize: 1000,
  /** A run stops after this many batches; the next run goes on where it stopped. */
  retentionBatchesPerRunMax: 100,
  sweepBatchSizeMax: 500,
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
   * Successful credential lookups (API key, key-to-user link, user of a token) are remembered
   * this long: two database round trips fewer per request. A revoked key or removed link stops
   * working within this time.
   */
  credentialCacheTtlMs: 10_000,
  credentialCacheEntriesMax: 10_000,
  /** One heartbeat comment to every open stream this often keeps proxies from closing idle streams. */
  streamHeartbeatMs: 15_000,
  /** A subscriber whose unsent output grows past this is disconnected; it resumes with Last-Event-ID. */
  streamBufferedBytesMax: 256 * 1024,
  /** Out-of-order live events a subscriber may hold while its gap is filled from the database. */
  streamPendingEventsMax: 1_000,
  streamCatchUpBatchSize: 500,
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
   * Rate limits (decisions section 6, docs/decisions.md "Rate limits and stream caps"): at most
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
    /** GET routes (lists, history, single resources) by credential. */
    readsPerCredential: { requests: 1_200, windowSeconds: 60 },
    writesPerCredential: { requests: 600, windowSeconds: 60 },
    /** JSON-RPC calls (HTTP and WebSocket), a batch counting as its length. */
    rpcCallsPerCredential: { requests: 1_200, windowSeconds: 60 },
    /** Stream opens (REST SSE, JSON-RPC SSE, WebSocket subscriptions) by credential. */
    streamOpensPerCredential: { requests: 120, windowSeconds: 60 },
    /**
     * The same, for all the users of one API key together (ten times a credential's): an
     * auto-provisioning key gets a new credential with every new user id.
     */
    readsPerApiKey: { requests: 12_000, windowSeconds: 60 },
    writesPerApiKey: { requests: 6_000, windowSeconds: 60 },
    rpcCallsPerApiKey: { requests: 12_000, windowSeconds: 60 },
    streamOpensPerApiKey: { requests: 1_200, windowSeconds: 60 },
  },
  /** Open SSE streams (REST and JSON-RPC) of one credential, of one API key's users together, and of all, per instance. */
  sseStreamsPerCredentialMax: 20,
  sseStreamsPerApiKeyMax: 200,
  sseStreamsPerInstanceMax: 20_000,
  /** Open JSON-RPC WebSocket connections of one credential, of one API key, and of all, per instance. */
  webSocketsPerCredentialMax: 20,
  webSocketsPerApiKeyMax: 200,
  webSocketsPerInstanceMax: 20_000,
  /** Password hashes (scrypt) running at once per process, and waiting for a turn; more are refused (4290). */
  passwordHashesConcurrentMax: 2,
  passwordHashesQueuedMax: 32,
  /** What a refused stream or connection is told to wait before trying again. */
  connectionCapRetryAfterSeconds: 10,
} as const;
