import { z } from 'zod';
import { dateTime, uuid } from './common.ts';
import { amountInput, amountOutput, currency } from './money.ts';
import { pageQuery, pagedList } from './pagination.ts';
import { idempotencyKey } from './transactions.ts';
import { limits } from '../limits.ts';

export const historyTypes = ['deposit', 'freeze', 'unfreeze', 'expense', 'income', 'fee', 'refund', 'withdrawal'] as const;

const balance = z.object({ available: amountOutput, frozen: amountOutput, total: amountOutput, currency });
export const walletOverview = z.object({ ut: balance, cash: balance }).meta({ id: 'WalletOverview' });

export const historyItem = z
  .object({
    id: z.string(),
    movement_id: uuid.meta({
      description:
        'The money movement this entry is a leg of: the entries of one movement sum to zero across its accounts (a freeze is two legs of yours, available and frozen)',
    }),
    type: z.enum(historyTypes),
    amount: amountOutput,
    currency,
    bucket: z.enum(['available', 'frozen']),
    balance_after: amountOutput,
    description: z.string(),
    biz_ref_id: z.string().nullable(),
    created_at: dateTime,
  })
  .meta({ id: 'WalletHistoryItem' });

export const historyQuery = z.object({ type: z.enum(historyTypes).optional(), currency: currency.optional(), ...pageQuery });
export const historyList = pagedList(historyItem).meta({ id: 'WalletHistory' });

const currencyStats = z.object({
  currency,
  income: amountOutput,
  expense: amountOutput,
  deposits: amountOutput,
  frozen: amountOutput,
  settled_count: z.number().int(),
});
export const walletStats = z.object({ ut: currencyStats, cash: currencyStats }).meta({ id: 'WalletStats' });

export const walletRates = z
  .object({
    base: z.literal('UT'),
    rates: z.object({ CNY: z.string() }),
    platform_fee_bps: z.number().int(),
    auto_confirm_hours: z.number(),
    updated_at: dateTime,
  })
  .meta({ id: 'WalletRates' });

export const creditBody = z
  .strictObject({
    user_id: uuid,
    currency,
    amount: amountInput,
    note: z.string().trim().min(1).max(limits.creditNoteLengthMax).optional(),
    idempotency_key: idempotencyKey.optional(),
  })
  .refine((value) => value.amount > 0n, { path: ['amount'], message: 'must be greater than zero' })
  .meta({ id: 'CreditRequest' });

export const creditResponse = z
  .object({ user_id: uuid, currency, available: amountOutput, frozen: amountOutput, total: amountOutput, movement_id: uuid })
  .meta({ id: 'CreditResult' });

export type HistoryInput = z.output<typeof historyQuery>;
export type CreditInput = z.output<typeof creditBody>;
