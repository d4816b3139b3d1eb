/**
 * The lifecycle chart of docs/benchmarks.md as a small SVG: latency (p50 and p99 of one full
 * lifecycle) against the throughput reached, one point per offered load (concurrent clients).
 */
export interface LoadPoint {
  concurrency: number;
  throughput: number;
  p50: number;
  p99: number;
}

const width = 640;
const height = 360;
const margin = { left: 64, right: 24, top: 32, bottom: 48 };

/** A round step for about five ticks up to `max`. */
function tickStep(max: number): number {
  const raw = max / 5;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((factor) => factor * power).find((step) => step >= raw)!;
}

export function lifecycleChart(points: LoadPoint[]): string {
  const sorted = [...points].sort((left, right) => left.concurrency - right.concurrency);
  const maxX = Math.max(...sorted.map((point) => point.throughput)) * 1.1;
  const maxY = Math.max(...sorted.map((point) => point.p99)) * 1.1;
  const x = (value: number) => margin.left + (value / maxX) * (width - margin.left - margin.right);
  const y = (value: number) => height - margin.bottom - (value / maxY) * (height - margin.top - margin.bottom);
  const line = (pick: (point: LoadPoint) => number) => sorted.map((point) => `${x(point.throughput).toFixed(1)},${y(pick(point)).toFixed(1)}`).join(' ');
  const ticks = (max: number, place: (value: number) => string) => {
    const step = tickStep(max);
    return Array.from({ length: Math.floor(max / step) + 1 }, (_, index) => place(index * step)).join('');
  };
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="14">Escrow lifecycle latency against offered load</text>`,
    ticks(
      maxX,
      (value) =>
        `<line x1="${x(value)}" y1="${margin.top}" x2="${x(value)}" y2="${height - margin.bottom}" stroke="#eee"/><text x="${x(value)}" y="${height - margin.bottom + 16}" text-anchor="middle">${value}</text>`,
    ),
    ticks(
      maxY,
      (value) =>
        `<line x1="${margin.left}" y1="${y(value)}" x2="${width - margin.right}" y2="${y(value)}" stroke="#eee"/><text x="${margin.left - 6}" y="${y(value) + 4}" text-anchor="end">${value}</text>`,
    ),
    `<text x="${width / 2}" y="${height - 10}" text-anchor="middle">lifecycles per second reached</text>`,
    `<text x="16" y="${height / 2}" text-anchor="middle" transform="rotate(-90 16 ${height / 2})">latency of one lifecycle (ms)</text>`,
    `<polyline points="${line((point) => point.p50)}" fill="none" stroke="#1f77b4" stroke-width="2"/>`,
    `<polyline points="${line((point) => point.p99)}" fill="none" stroke="#d62728" stroke-width="2"/>`,
    ...sorted.map(
      (point) =>
        `<circle cx="${x(point.throughput)}" cy="${y(point.p99)}" r="3" fill="#d62728"/><text x="${x(point.throughput) + 5}" y="${y(point.p99) - 6}">${point.concurrency} clients</text>`,
    ),
    ...sorted.map((point) => `<circle cx="${x(point.throughput)}" cy="${y(point.p50)}" r="3" fill="#1f77b4"/>`),
    `<text x="${width - margin.right - 4}" y="${margin.top + 12}" text-anchor="end" fill="#d62728">p99</text>`,
    `<text x="${width - margin.right - 4}" y="${margin.top + 28}" text-anchor="end" fill="#1f77b4">p50</text>`,
    '</svg>',
    '',
  ].join('\n');
}
