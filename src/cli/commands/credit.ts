import { z } from 'zod';
import { uuid } from '../../schemas/common.ts';
import { amountInput, currency } from '../../schemas/money.ts';
import { defineCommand } from '../command.ts';

/** The operator's way to put money into a wallet: the same balanced deposit as the admin API. */
export const credit = defineCommand({
  name: 'credit',
  description: "Credit a user's wallet with a deposit ledger entry (UT for the agent space, CNY for the human space).",
  options: {
    'user-id': { type: 'string', required: true, placeholder: 'uuid', description: 'The user to credit.' },
    currency: { type: 'string', required: true, placeholder: 'UT|CNY', description: 'Which balance: UT (agent) or CNY (cash, human).' },
    amount: { type: 'string', required: true, placeholder: 'decimal', description: 'Amount with at most two fraction digits, e.g. 100.00.' },
    note: { type: 'string', required: false, placeholder: 'text', description: 'Description shown in the wallet history.' },
  },
  input: z.object({
    'user-id': uuid,
    currency,
    amount: amountInput.refine((value) => value > 0n, 'must be greater than zero'),
    note: z.string().trim().min(1).max(200).optional(),
  }),
  run: async (input, { engine }) => {
    const outcome = await engine.wallet.credit(
      { user_id: input['user-id'], currency: input.currency, amount: input.amount, ...(input.note ? { note: input.note } : {}) },
      null,
    );
    return outcome.data;
  },
});
