import { privateAddressesAllowed, publicAddressesOnly } from '../../callbacks/addresses.ts';
import { type CallbackNetwork, systemResolver } from '../../callbacks/client.ts';
import type { EngineDependencies } from './dependencies.ts';

/**
 * The network every outbound request of the product goes through (invoke's callbacks, webhook and
 * push deliveries, OAuth client metadata documents): the address guard, with the operator's
 * CALLBACK_ALLOW_PRIVATE setting, and the system resolver, each replaceable by a test.
 */
export const outboundNetwork = ({ config, callbackNetwork }: Pick<EngineDependencies, 'config' | 'callbackNetwork'>): CallbackNetwork => ({
  allowAddress: callbackNetwork?.allowAddress ?? (config.CALLBACK_ALLOW_PRIVATE ? privateAddressesAllowed : publicAddressesOnly),
  resolve: callbackNetwork?.resolve ?? systemResolver,
});
