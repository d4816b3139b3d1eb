import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * A V8 CPU profile of the server process (this process) while it is under load, summarized by
 * where the self time goes: which package (express, knex, pg, zod, …), which of the project's
 * directories, node internals, or the garbage collector. The raw .cpuprofile is written too and
 * opens in Chrome DevTools or speedscope.
 */
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface CpuProfileSummary {
  sampledMs: number;
  /** Share of the wall time the main thread was busy (not idle) while profiled. */
  busyShare: number;
  /** Self time by what it was for: socket writes split by peer, knex, pg, express, project, … */
  byPurpose: { purpose: string; ms: number; share: number }[];
  byArea: { area: string; ms: number; share: number }[];
  topFunctions: { function: string; area: string; ms: number; share: number }[];
}

export async function startCpuProfile(samplingIntervalUs = 500): Promise<() => Promise<CpuProfile>> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: samplingIntervalUs });
  await session.post('Profiler.start');
  return async () => {
    const { profile } = (await session.post('Profiler.stop')) as { profile: CpuProfile };
    await session.post('Profiler.disable');
    session.disconnect();
    return profile;
  };
}

export function areaOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(garbage collector)') return 'gc';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'program (native, unattributed)';
    return 'native';
  }
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (packageMatch) return packageMatch[1]!;
  if (url.startsWith('node:')) return url.startsWith('node:internal/') ? `node:${url.split('/')[1] ?? 'internal'}` : url;
  const projectMatch = /\/(src|rest|rpc|bench)\/(.+)$/.exec(url);
  if (projectMatch) return `${projectMatch[1]}/${projectMatch[2]!.split('/')[0]}`;
  return url;
}

const socketWrites = new Set(['writev', 'writeBuffer', 'writeUtf8String', 'writeLatin1String', 'writeAsciiString']);

/** What a sample was for, from its frame and (for socket writes) who asked for the write. */
function purposeOf(frame: ProfileNode['callFrame'], callers: string[]): string {
  if (socketWrites.has(frame.functionName)) {
    if (callers.some((url) => url.includes('/node_modules/pg/'))) return 'socket writes to PostgreSQL';
    if (callers.some((url) => url.includes('/node_modules/ioredis/'))) return 'socket writes to Redis';
    if (callers.some((url) => url.includes('_http_outgoing') || url.includes('/node_modules/express/'))) return 'socket writes of HTTP responses';
    return 'socket writes, other';
  }
  if (frame.functionName === '(garbage collector)') return 'garbage collection';
  const url = frame.url;
  if (url.includes('/node_modules/knex/')) return 'knex';
  if (url.includes('/node_modules/pg/') || url.includes('/node_modules/pg-protocol/')) return 'pg + pg-protocol';
  if (/\/node_modules\/(express|router|body-parser|raw-body)\//.test(url)) return 'express, router, body-parser';
  if (url.includes('/node_modules/ioredis/')) return 'ioredis';
  if (url.includes('/node_modules/zod/')) return 'zod';
  if (/\/(src|rest)\//.test(url) && !url.includes('/node_modules/')) return 'project code (src/, rest/)';
  return 'other (node internals, promises, JSON, crypto, …)';
}

export function summarizeCpuProfile(profile: CpuProfile, top = 25): CpuProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const callersOf = (id: number) => {
    const urls: string[] = [];
    for (let current = parentOf.get(id); current !== undefined; current = parentOf.get(current)) urls.push(byId.get(current)!.callFrame.url);
    return urls;
  };
  const purposes = new Map<string, number>();
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, index) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[index] ?? 0)));
  const areas = new Map<string, number>();
  const functions = new Map<string, { area: string; us: number }>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    const area = areaOf(node.callFrame.url, node.callFrame.functionName);
    if (area === 'idle') continue;
    totalUs += us;
    const purpose = purposeOf(node.callFrame, socketWrites.has(node.callFrame.functionName) ? callersOf(id) : []);
    purposes.set(purpose, (purposes.get(purpose) ?? 0) + us);
    areas.set(area, (areas.get(area) ?? 0) + us);
    const file = node.callFrame.url.split('/').slice(-1)[0] ?? '';
    const key = `${node.callFrame.functionName || '(anonymous)'} ${file}:${node.callFrame.lineNumber + 1}`;
    const entry = functions.get(key) ?? { area, us: 0 };
    entry.us += us;
    functions.set(key, entry);
  }
  const share = (us: number) => Number((us / totalUs).toFixed(3));
  return {
    sampledMs: Math.round(totalUs / 1000),
    busyShare: Number((totalUs / (profile.endTime - profile.startTime)).toFixed(3)),
    byPurpose: [...purposes].sort((a, b) => b[1] - a[1]).map(([purpose, us]) => ({ purpose, ms: Math.round(us / 1000), share: share(us) })),
    byArea: [...areas].sort((a, b) => b[1] - a[1]).map(([area, us]) => ({ area, ms: Math.round(us / 1000), share: share(us) })),
    topFunctions: [...functions]
      .sort((a, b) => b[1].us - a[1].us)
      .slice(0, top)
      .map(([name, entry]) => ({ function: name, area: entry.area, ms: Math.round(entry.us / 1000), share: share(entry.us) })),
  };
}

export function writeCpuProfile(file: string, profile: CpuProfile) {
  writeFileSync(file, JSON.stringify(profile));
}
