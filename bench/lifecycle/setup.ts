import { randomBytes } from 'node:crypto';
import type { HttpClient } from './http.ts';

/**
 * Creates the market over REST, as an operator and agents would: one platform API key, 2·C
 * users signed up and linked to it, each buyer credited, each seller offering one per_use
 * capability. Client i always buys from seller i, so concurrent clients share no account.
 */
export interface Agent {
  userId: string;
  headers: Record<string, string>;
}

export interface Pair {
  buyer: Agent;
  seller: Agent;
  capabilityId: string;
}

export const capabilityPrice = '1.00';

export async function setupMarket(
  http: HttpClient,
  adminToken: string,
  pairs: number,
  lifecyclesPerBuyerMax: number,
  progress: (line: string) => void,
): Promise<Pair[]> {
  const admin = { 'x-admin-token': adminToken };
  const key = await http.call<{ id: string; api_key: string }>(
    'POST',
    '/api/v1/admin/api-keys',
    admin,
    { agent_platform_type: 'custom_mcp', name: 'lifecycle bench' },
    201,
  );

  async function agent(role: string, index: number): Promise<Agent> {
    const email = `bench-${role}-${index}-${randomBytes(3).toString('hex')}@example.com`;
    const user = await http.call<{ user_id: string }>('POST', '/api/v1/auth/signup', {}, { email, password: 'correct-horse-42' }, 201);
    await http.call('POST', `/api/v1/admin/api-keys/${key.id}/links`, admin, { user_id: user.user_id }, 201);
    return { userId: user.user_id, headers: { 'x-api-key': key.api_key, 'x-platform-user-id': user.user_id } };
  }

  const result: Pair[] = [];
  const credit = `${lifecyclesPerBuyerMax}.00`;
  for (let index = 0; index < pairs; index++) {
    const [buyer, seller] = await Promise.all([agent('buyer', index), agent('seller', index)]);
    await http.call('POST', '/api/v1/admin/wallet/credit', admin, { user_id: buyer.userId, currency: 'UT', amount: credit }, 200);
    const capability = await http.call<{ id: string }>(
      'POST',
      '/api/v1/capabilities',
      seller.headers,
      {
        title: `Bench service ${index}`,
        description: 'Echoes its input',
        category: 'ai_automation',
        capability_type: 'service',
        pricing_model: 'per_use',
        price_ut: capabilityPrice,
        callback_url: 'https://seller.example/callback',
      },
      201,
    );
    result.push({ buyer, seller, capabilityId: capability.id });
    progress(`setup: ${index + 1}/${pairs} buyer/seller pairs (buyer credited ${credit} UT, seller capability at ${capabilityPrice} UT)`);
  }
  return result;
}
