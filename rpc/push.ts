import { randomUUID } from 'node:crypto';
import type { PushConfig, PushConfigInput, PushGeneration, PushRenderer } from '../src/engine/deliveries/index.ts';
import type { Principal } from '../src/engine/common/index.ts';
import type { Engine } from '../src/engine/index.ts';
import { parse } from './params.ts';
import * as schemas from './push-params.ts';
import { artifactEvent, statusEvent } from './shapes.ts';
import { nameFor, renderTaskEvent } from './tasks.ts';

/**
 * A2A push notifications over JSON-RPC (docs/webhooks.md "A2A push notifications"): the config
 * methods of every generation, the configs given inside a send, and how a push body looks in
 * each generation. The configs are stored and delivered by the engine's webhook pipeline.
 */
type Method = (params: unknown, context: { principal: Principal }) => Promise<unknown>;

/** What a push POSTs: v0.1 and v0.3 the whole task; v1.0 one stream response (the task, a status update or the delivered artifact). */
export const renderPush: PushRenderer = (task, generation, taskName, view, part) => {
  const name = nameFor(task, taskName);
  if (part === 'artifact' && view) return artifactEvent(view, generation, name);
  if (part === 'status' && view) return statusEvent(view, generation, name);
  return renderTaskEvent(task, generation, name, {}, view);
};

const v0Auth = (config: PushConfig) => (config.scheme ? { authentication: { schemes: [config.scheme] } } : {});
const tokenOf = (config: PushConfig) => (config.token ? { token: config.token } : {});

/** A stored config in each generation's shape, named by the task id the caller used. Credentials are never echoed. */
export const configShapes = {
  'v0.1': (taskName: string, config: PushConfig) => ({ id: taskName, pushNotificationConfig: { url: config.url, ...tokenOf(config), ...v0Auth(config) } }),
  'v0.3': (taskName: string, config: PushConfig) => ({
    taskId: taskName,
    pushNotificationConfig: { id: config.configId, url: config.url, ...tokenOf(config), ...v0Auth(config) },
  }),
  'v1.0': (taskName: string, config: PushConfig) => ({
    id: config.configId,
    taskId: taskName,
    url: config.url,
    ...tokenOf(config),
    ...(config.scheme ? { authentication: { scheme: config.scheme } } : {}),
  }),
};

/** A push config as every generation writes it: url, token, authentication, and an id when the client chose one. */
export interface PushConfigGiven {
  id?: string | null;
  url: string;
  token?: string | null;
  authentication?: Parameters<typeof schemas.authOf>[0];
}

const stored = (generation: PushGeneration, taskName: string, configId: string, config: PushConfigGiven): PushConfigInput => ({
  taskName,
  generation,
  configId,
  url: config.url,
  token: config.token || null,
  ...schemas.authOf(config.authentication),
});

/**
 * Stores a config given inside a send, on the task the send made or continued, and waits (bounded)
 * for its first push, the task as it is now, so that the client's receiver has it before the
 * client reads the answer.
 */
export async function registerInline(engine: Engine, principal: Principal, generation: PushGeneration, taskName: string, config: PushConfigGiven) {
  const configId = config.id || (generation === 'v1.0' ? randomUUID() : taskName);
  const { snapshotId } = await engine.webhooks.a2aPush.set(principal, stored(generation, taskName, configId, config), { snapshot: true });
  if (snapshotId) await engine.webhooks.a2aPush.awaitFirstAttempt(snapshotId);
}

/** Before a send with an inline config buys anything: the caller must have room for one more config (4092 otherwise). */
export async function ensureInlineRoom(engine: Engine, principal: Principal, config: PushConfigGiven | null | undefined) {
  if (config) await engine.webhooks.a2aPush.ensureRoomForOne(principal);
}

function v01Methods(engine: Engine): Record<string, Method> {
  const push = engine.webhooks.a2aPush;
  return {
    // One config per task in v0.1; a null config clears it.
    'tasks/pushNotification/set': async (params, { principal }) => {
      const input = parse(schemas.setV01, params);
      if (input.pushNotificationConfig === null) {
        await push.remove(principal, input.id, input.id);
        return { id: input.id, pushNotificationConfig: null };
      }
      const { config } = await push.set(principal, stored('v0.1', input.id, input.id, input.pushNotificationConfig), { snapshot: false });
      return configShapes['v0.1'](input.id, config);
    },
    'tasks/pushNotification/get': async (params, { principal }) => {
      const input = parse(schemas.getV01, params);
      const [config] = await push.list(principal, input.id);
      return config ? configShapes['v0.1'](input.id, config) : { id: input.id, pushNotificationConfig: null };
    },
  };
}

function v03Methods(engine: Engine): Record<string, Method> {
  const push = engine.webhooks.a2aPush;
  return {
    // Without an id the config is the task's own (its id is the task id), as the v0.3 reference server does.
    'tasks/pushNotificationConfig/set': async (params, { principal }) => {
      const input = parse(schemas.setV03, params);
      const configId = input.pushNotificationConfig.id || input.taskId;
      const { config } = await push.set(principal, stored('v0.3', input.taskId, configId, input.pushNotificationConfig), { snapshot: false });
      return configShapes['v0.3'](input.taskId, config);
    },
    'tasks/pushNotificationConfig/get': async (params, { principal }) => {
      const input = parse(schemas.getV03, params);
      return configShapes['v0.3'](input.id, await push.get(principal, input.id, input.pushNotificationConfigId ?? null, true));
    },
    'tasks/pushNotificationConfig/list': async (params, { principal }) => {
      const input = parse(schemas.listV03, params);
      return (await push.list(principal, input.id)).map((config) => configShapes['v0.3'](input.id, config));
    },
    'tasks/pushNotificationConfig/delete': async (params, { principal }) => {
      const input = parse(schemas.deleteV03, params);
      await push.remove(principal, input.id, input.pushNotificationConfigId);
      return null;
    },
  };
}

function v10Methods(engine: Engine): Record<string, Method> {
  const push = engine.webhooks.a2aPush;
  const list: Method = async (params, { principal }) => {
    const input = parse(schemas.listV10, params);
    const configs = (await push.list(principal, input.taskId)).map((config) => configShapes['v1.0'](input.taskId, config));
    const from = Number(input.pageToken || 0);
    const size = input.pageSize || configs.length;
    const page = configs.slice(from, from + size);
    return { configs: page, ...(from + size < configs.length ? { nextPageToken: String(from + size) } : {}) };
  };
  return {
    CreateTaskPushNotificationConfig: async (params, { principal }) => {
      const input = parse(schemas.createV10, params);
      const { config } = await push.set(principal, stored('v1.0', input.taskId, input.id || randomUUID(), input), { snapshot: false });
      return configShapes['v1.0'](input.taskId, config);
    },
    // Strict: an id the task does not have is not found (v1.0 section 3.1.8).
    GetTaskPushNotificationConfig: async (params, { principal }) => {
      const input = parse(schemas.getV10, params);
      return configShapes['v1.0'](input.taskId, await push.get(principal, input.taskId, input.id, false));
    },
    ListTaskPushNotificationConfigs: list,
    // The v1.0 release candidate's singular name, which clients of that draft still send.
    ListTaskPushNotificationConfig: list,
    DeleteTaskPushNotificationConfig: async (params, { principal }) => {
      const input = parse(schemas.deleteV10, params);
      await push.remove(principal, input.taskId, input.id);
      return null;
    },
  };
}

export const pushMethods = (engine: Engine): Record<string, Method> => ({ ...v01Methods(engine), ...v03Methods(engine), ...v10Methods(engine) });
