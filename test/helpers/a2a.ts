import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Actor } from './actors.ts';
import type { TestApp } from './app.ts';

type Json = Record<string, any>;

/** JSON-RPC calls as an A2A client makes them, for the conversation, id and history tests. */
export function rpcCaller(test: TestApp) {
  async function call(actor: Actor | null, method: string, params: unknown, headers: Record<string, string> = {}) {
    const response = await test.http
      .post('/api/v1/rpc')
      .set(actor?.headers ?? {})
      .set(headers)
      .send({ jsonrpc: '2.0', id: randomUUID(), method, params });
    return response.body as { result?: Json; error?: { code: number; message: string; data?: Json } };
  }
  /** The result, failing the test with the error when there is one. */
  async function ok(actor: Actor, method: string, params: unknown, headers: Record<string, string> = {}): Promise<Json> {
    const body = await call(actor, method, params, headers);
    expect(body.error, JSON.stringify(body.error)).toBeUndefined();
    return body.result!;
  }
  return { call, ok };
}

/** A v1.0 message with text parts only (what generic A2A clients send). */
export const v10Text = (text: string, extra: Json = {}) => ({ message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...extra } });

/** A v0.3 message with text parts only. */
export const v03Text = (text: string, extra: Json = {}) => ({
  message: { kind: 'message', messageId: randomUUID(), role: 'user', parts: [{ kind: 'text', text }], ...extra },
});

/** A v0.1 tasks/send exactly as the v0.1 samples send it: uuid4().hex ids, acceptedOutputModes, nulls. */
export const hex = () => randomUUID().replace(/-/g, '');
export const v01Text = (id: string, sessionId: string, text: string) => ({
  id,
  sessionId,
  acceptedOutputModes: ['text'],
  pushNotification: null,
  historyLength: null,
  metadata: null,
  message: { role: 'user', parts: [{ type: 'text', text, metadata: null }], metadata: null },
});

/** The candidates data part of a conversation's status message, in any generation. */
export function candidatesOf(task: Json): { demand_id: string; candidates: Json[] } & Json {
  const parts = task.status.message.parts as Json[];
  const data = parts.find((part) => part.data !== undefined)!;
  return data.data;
}

export const textOf = (task: Json) => (task.status.message.parts as Json[]).find((part) => typeof part.text === 'string')!.text as string;

/**
 * The marketplace code a JSON-RPC error carries: in `data.code`, or for an A2A error of a v1.0 call
 * in the `google.protobuf.Struct` after the ErrorInfo in the `data` array (rpc/errors.ts inV10Shape).
 */
export function marketplaceCodeOf(error: { data?: unknown } | undefined): unknown {
  const data = error?.data;
  if (!Array.isArray(data)) return (data as { code?: unknown } | undefined)?.code;
  return (data as { value?: { code?: unknown } }[]).find((detail) => detail.value !== undefined)?.value?.code;
}

/** A matcher for a v1.0 call's A2A error data: the ErrorInfo of `reason`, then the envelope of `code`. */
export const v10Details = (reason: string, code: number) => [
  { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'a2a-protocol.org' },
  { '@type': 'type.googleapis.com/google.protobuf.Struct', value: { code } },
];
