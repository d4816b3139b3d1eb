import { createHash } from 'node:crypto';
import type { TransactionStatus } from './escrow.ts';
import { isUuid } from './ids.ts';

/**
 * The pure rules of the A2A gateway's conversations (docs/decisions/a2a.md, the
 * "Conversations" sections and "Context ids and message ids"): how client ids map to stored ids and keys, how a buyer's words are read, and which
 * states a transaction has been through.
 */

/** Names the context uuids made from clients' free-text ids (a fixed, random namespace). */
const contextNamespace = Buffer.from('9b0e4c52d1f84e7a8f3c6a1d2e5b7c90', 'hex');

/**
 * The stored uuid of a client's contextId / sessionId: a uuid is used as is (lower-cased);
 * anything else (32 hex digits, free text) becomes the name-based uuid (RFC 9562 version 5) of
 * the string, so the same string always lands in the same context, on every instance.
 */
export function contextIdOf(clientContextId: string): string {
  if (isUuid(clientContextId)) return clientContextId.toLowerCase();
  const hash = createHash('sha1').update(contextNamespace).update(clientContextId, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const keyLengthMax = 64;
const printableAscii = /^[\x21-\x7e]+$/;
const hashed = (prefix: string, text: string) => `${prefix}:${createHash('sha256').update(text, 'utf8').digest('base64url')}`;

/**
 * The idempotency key of a message: its messageId as sent when that is a valid key (at most 64
 * printable ASCII characters, as REST keys), otherwise a hash of it, so any id A2A allows works.
 */
export const messageKeyOf = (messageId: string) =>
  messageId.length <= keyLengthMax && printableAscii.test(messageId) ? messageId : hashed('msg-sha256', messageId);

/**
 * v0.1 messages have no id. A follow-up on a v0.1 task is identified by its task id and content:
 * an identical resend is the same message (replayed, stored once).
 */
export const v01MessageIdOf = (taskId: string, parts: unknown) => hashed('v01', `${taskId}\n${JSON.stringify(parts)}`);

/** A text part or a data part, in no generation's spelling (each renders its own). */
export type NeutralPart = { kind: 'text'; text: string } | { kind: 'data'; data: Record<string, unknown> };

/**
 * The parts of a message as history keeps them: at most `bytesMax` of JSON in all. A part that
 * would go over is kept as a marker saying what was left out (a text part: its beginning and the
 * size cut), so a buyer's 900 kB data part costs the history a few bytes, while the purchase it
 * made keeps its whole input on the transaction.
 */
export function partsForHistory(parts: readonly NeutralPart[], bytesMax: number): NeutralPart[] {
  let used = 0;
  return parts.map((part) => {
    const bytes = Buffer.byteLength(JSON.stringify(part));
    if (used + bytes <= bytesMax) {
      used += bytes;
      return part;
    }
    const note = { history_omitted_bytes: bytes, reason: `history keeps at most ${bytesMax} bytes of parts per message` };
    if (part.kind === 'data') return { kind: 'data', data: note };
    // A character takes at most 4 bytes of UTF-8 (6 as a JSON escape, rare in words), and the marker about 100.
    const keptCharacters = Math.max(0, Math.floor((bytesMax - used - 200) / 6));
    const text = `${part.text.slice(0, keptCharacters)}… [${bytes} bytes cut: ${note.reason}]`;
    used += Buffer.byteLength(text);
    return { kind: 'text', text };
  });
}

/** A demand's title: the text's first line, cut at a word boundary within `lengthMax`. */
export function titleOf(text: string, lengthMax: number): string {
  const line = text.trim().split('\n')[0]!.trim();
  if (line.length <= lengthMax) return line;
  const cut = line.slice(0, lengthMax - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > lengthMax / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** How a buyer's words choose a candidate: by its number or by (a unique prefix of) its capability id. */
export type Pick = { number: number } | { capabilityId: string };

const pickVerbs = '(?:buy|take|pick|choose|select|order|number|no\\.?|nr\\.?|选|选择|要|买|购买|第)';
const numberPick = new RegExp(`^(?:${pickVerbs}\\s*)?#?\\s*(\\d{1,3})\\s*(?:个|号)?[.!。！]?$`, 'iu');
const idPick = new RegExp(`^(?:${pickVerbs}\\s*)?([0-9a-f][0-9a-f-]{7,35})[.!。！]?$`, 'iu');
const idPrefixLengthMin = 8;

/**
 * A pick, or null when the words are something else (then they refine the demand). `1`, `#1`,
 * `buy 1`, `take 2`, `选 1` pick by number; a capability id, or its first 8 or more characters,
 * picks by id.
 */
export function pickOf(text: string): Pick | null {
  const words = text.trim();
  const byNumber = numberPick.exec(words);
  if (byNumber) return { number: Number(byNumber[1]) };
  const byId = idPick.exec(words);
  if (!byId) return null;
  const id = byId[1]!.toLowerCase();
  if (isUuid(id)) return { capabilityId: id };
  return id.replace(/-/g, '').length >= idPrefixLengthMin ? { capabilityId: id } : null;
}

/** The buyer's answer to a delivery in words: `confirm` / `确认`, or `dispute <reason>` / `争议 <reason>`. */
export type ActionWords = { action: 'confirm' } | { action: 'dispute'; reason?: string };

const confirmWords = /^(?:confirm(?:ed)?|accept(?:ed)?|确认|确认收货)[.!。！]?$/iu;
const disputeWords = /^(?:dispute|争议)(?:[\s:：,，-]+([\s\S]*))?$/iu;

export function actionOf(text: string): ActionWords | null {
  const words = text.trim();
  if (confirmWords.test(words)) return { action: 'confirm' };
  const dispute = disputeWords.exec(words);
  if (!dispute) return null;
  const reason = dispute[1]?.trim();
  return reason ? { action: 'dispute', reason } : { action: 'dispute' };
}

/** One state a transaction reached, and when (for ordering a task's history). */
export interface Milestone {
  status: TransactionStatus;
  at: string;
}

/** The timestamps a transaction view carries, enough to tell the states it went through. */
export interface MilestoneSource {
  status: TransactionStatus;
  created_at: string;
  updated_at: string;
  frozen_at: string | null;
  accepted_at: string | null;
  delivered_at: string | null;
  settled_at: string | null;
  dispute_reason: string | null;
}

const finalStatuses: ReadonlySet<TransactionStatus> = new Set(['settled', 'cancelled_by_buyer', 'rejected_by_seller', 'failed', 'refunded']);

/**
 * The states a transaction went through, oldest first, read from its own timestamps. pending_freeze
 * shows only when the price was never frozen (a purchase freezes at once otherwise); `delivered`
 * only after an accept (an invoke settles without one); `disputed` when the transaction is, or
 * ended after, a dispute (a settlement after a dispute without a reason is indistinguishable from
 * a confirm and shows none). A dispute that ended has no own time: it is placed right before the end.
 */
export function milestonesOf(view: MilestoneSource): Milestone[] {
  const reached: Milestone[] = [];
  if (view.frozen_at === null) reached.push({ status: 'pending_freeze', at: view.created_at });
  else reached.push({ status: 'frozen', at: view.frozen_at });
  if (view.accepted_at) reached.push({ status: 'accepted', at: view.accepted_at });
  if (view.accepted_at && view.delivered_at) reached.push({ status: 'delivered', at: view.delivered_at });
  const disputed = view.status === 'disputed' || view.status === 'refunded' || (view.status === 'settled' && view.dispute_reason !== null);
  if (disputed) reached.push({ status: 'disputed', at: view.updated_at });
  if (finalStatuses.has(view.status)) reached.push({ status: view.status, at: view.settled_at ?? view.updated_at });
  return reached;
}
