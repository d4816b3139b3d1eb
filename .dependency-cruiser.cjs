/**
 * The house's import rules (docs/architecture.md, "Rooms"), checked by `npm run lint` in CI.
 * test/architecture/dependency-rules.test.ts proves each rule fails on a deliberately wrong import.
 *
 * - The engine is rooms (src/engine/<room>/). A file outside a room reaches it only through the
 *   room's door, src/engine/<room>/index.ts; files inside one room import each other directly.
 * - Rooms point one way: common at the bottom, then access and identity, then money, then market,
 *   then work and a2a, then deliveries; an arrow against that order is refused.
 * - No import circle anywhere, and no engine file outside a room but the composition root.
 */
const room = (name) => `^src/engine/${name}/`;
/** For each room, the rooms it may import (through their doors). */
const allowedRooms = {
  common: [],
  access: ['common'],
  identity: ['common'],
  money: ['common', 'access'],
  market: ['common', 'access', 'money'],
  work: ['common', 'access', 'money', 'market'],
  a2a: ['common', 'access', 'money', 'market'],
  deliveries: ['common', 'access', 'money', 'market', 'a2a'],
};
const rooms = Object.keys(allowedRooms);

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'An import circle makes load order matter and hides which part depends on which.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'door-of-another-room',
      severity: 'error',
      comment: 'A room is entered through its index.ts: import what another room offers from its door.',
      from: { path: '^src/engine/([^/]+)/' },
      to: { path: '^src/engine/[^/]+/', pathNot: ['^src/engine/$1/', '^src/engine/[^/]+/index\\.ts$'] },
    },
    {
      name: 'door-from-outside',
      severity: 'error',
      comment: 'Adapters, stores, tests and benchmarks reach the engine through src/engine/index.ts or a room door.',
      from: { pathNot: '^src/engine/[^/]+/' },
      to: { path: '^src/engine/[^/]+/', pathNot: '^src/engine/[^/]+/index\\.ts$' },
    },
    {
      name: 'file-outside-a-room',
      severity: 'error',
      comment: 'Every engine file lives in a room; src/engine/index.ts (the composition root) is the only file beside them.',
      from: { path: '^src/engine/[^/]+\\.ts$', pathNot: '^src/engine/index\\.ts$' },
      to: {},
    },
    ...rooms.map((name) => ({
      name: `room-order-${name}`,
      severity: 'error',
      comment: `The ${name} room may import ${allowedRooms[name].length ? allowedRooms[name].join(', ') : 'no other room'}; an arrow the other way would tangle the layers.`,
      from: { path: room(name) },
      to: { path: '^src/engine/[^/]+/', pathNot: [room(name), ...allowedRooms[name].map(room)] },
    })),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)node_modules/|^test/architecture/fixture/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { extensions: ['.ts', '.mts', '.js', '.mjs'] },
  },
};
