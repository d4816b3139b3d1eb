/**
 * The windows a capability's limits count in (decisions section 6): `rate_limit_per_min` counts
 * per calendar minute and `daily_limit` per UTC day. Fixed windows, so a window's end is also
 * when its count frees, which is what Retry-After tells the caller.
 */
export type UsageWindowKind = 'minute' | 'day';

export interface UsageWindow {
  kind: UsageWindowKind;
  start: Date;
  end: Date;
}

const minuteMs = 60_000;
const dayMs = 24 * 60 * 60 * 1000;

export function usageWindow(kind: UsageWindowKind, at: Date): UsageWindow {
  const length = kind === 'minute' ? minuteMs : dayMs;
  const start = Math.floor(at.getTime() / length) * length;
  return { kind, start: new Date(start), end: new Date(start + length) };
}

/** Whole seconds until the window ends, at least 1 (a Retry-After of 0 invites a busy loop). */
export const secondsUntilEnd = (window: UsageWindow, at: Date) => Math.max(1, Math.ceil((window.end.getTime() - at.getTime()) / 1000));
