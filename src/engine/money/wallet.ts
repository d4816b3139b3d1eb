import { type Currency, formatAmount } from '../../domain/money.ts';
import { notFound } from '../../errors.ts';
import type { CreditInput, HistoryInput } from '../../schemas/wallet.ts';
import { type AccountRow, systemAccountId, userAccountId } from '../../store/accounts.ts';
import { prepared } from '../../db/prepared.ts';
import { applyMovement } from '../../store/ledger.ts';
import { historyAccountIds, ownAccountIds } from '../access/index.ts';
import { findUserById } from '../../store/identity.ts';
import { decodeCursor, encodeCursor, integerText, type EngineDependencies, type Principal } from '../common/index.ts';
import type { Idempotency, IdempotencyRequest } from './idempotency.ts';

/** Balances, history, statistics, rates, and the operator's credit (the only way money enters). */
export function createWalletEngine({ db, config, now }: EngineDependencies, idempotency: Idempotency) {
  const balanceView = (currency: Currency, available: bigint, frozen: bigint) => ({
    available: formatAmount(available),
    frozen: formatAmount(frozen),
    total: formatAmount(available + frozen),
    currency,
  });

  /** Read on every wallet page and by agents polling their balance, so one prepared statement (db/prepared.ts). */
  async function overview(principal: Principal) {
    const rows = await prepared<Pick<AccountRow, 'currency' | 'available' | 'frozen'>>(
      db,
      'SELECT currency, available, frozen FROM accounts WHERE id IN (?, ?)',
      ownAccountIds(principal),
    );
    const of = (currency: Currency) => {
      const row = rows.find((account) => account.currency === currency);
      return balanceView(currency, BigInt(row?.available ?? 0), BigInt(row?.frozen ?? 0));
    };
    return { ut: of('UT'), cash: of('CNY') };
  }

  async function history(principal: Principal, query: HistoryInput) {
    // Only the caller's space's currency (access/wallet.ts).
    const accountIds = historyAccountIds(principal, query.currency);
    const base = () => {
      const builder = db('ledger_entries').whereIn('account_id', accountIds);
      if (query.type) builder.where({ type: query.type });
      return builder;
    };
    const [count] = await base().count<{ count: string }[]>('* as count');
    const page = base()
      .orderBy('id', 'desc')
      .limit(query.page_size + 1);
    if (query.cursor) page.where('id', '<', decodeCursor(query.cursor, [integerText])[0]!);
    else page.offset((query.page - 1) * query.page_size);
    const rows = await page;
    const items = rows.slice(0, query.page_size);
    const hasMore = rows.length > query.page_size;
    return {
      items: items.map((row) => ({
        id: String(row.id),
        movement_id: row.movement_id,
        type: row.type,
        amount: formatAmount(row.amount),
        currency: row.currency,
        bucket: row.bucket,
        balance_after: formatAmount(row.balance_after),
        description: row.description,
        biz_ref_id: row.biz_ref_id,
        created_at: new Date(row.created_at).toISOString(),
      })),
      total: Number(count?.count ?? 0),
      page: query.page,
      page_size: query.page_size,
      has_more: hasMore,
      next_cursor: hasMore && items.length > 0 ? encodeCursor([String(items.at(-1)!.id)]) : null,
    };
  }

  /** Income, expense, fees and deposits per currency, summed from the ledger itself. */
  async function stats(principal: Principal) {
    type StatRow = { currency: Currency; type: string; bucket: string; total: string | null };
    const rows: StatRow[] = (await db('ledger_entries')
      .whereIn('account_id', ownAccountIds(principal))
      .groupBy('currency', 'type', 'bucket')
      .select('currency', 'type', 'bucket')
      .sum({ total: 'amount' })) as never;
    const balances = await overview(principal);
    // Counted from the transactions, not from income entries: a free sale settles with none.
    const sales = (await db('transactions')
      .where({ seller_user_id: principal.user_id, status: 'settled' })
      .groupBy('currency')
      .select('currency')
      .count({ count: '*' })) as { currency: Currency; count: string }[];
    const sumOf = (currency: Currency, type: string, bucket: string) =>
      BigInt(rows.find((row) => row.currency === currency && row.type === type && row.bucket === bucket)?.total ?? 0);
    const of = (currency: Currency, key: 'ut' | 'cash') => ({
      currency,
      income: formatAmount(sumOf(currency, 'income', 'available')),
      expense: formatAmount(-sumOf(currency, 'expense', 'frozen')),
      deposits: formatAmount(sumOf(currency, 'deposit', 'available')),
      frozen: balances[key].frozen,
      settled_count: Number(sales.find((row) => row.currency === currency)?.count ?? 0),
    });
    return { ut: of('UT', 'ut'), cash: of('CNY', 'cash') };
  }

  function rates() {
    return {
      base: 'UT' as const,
      rates: { CNY: config.UT_TO_CNY_RATE },
      platform_fee_bps: config.PLATFORM_FEE_BPS,
      auto_confirm_hours: config.AUTO_CONFIRM_HOURS,
      updated_at: now().toISOString(),
    };
  }

  /** Credits a user from the currency's external account: a balanced `deposit` movement. */
  function credit(input: CreditInput, request: IdempotencyRequest | null) {
    return idempotency.run(null, request, 200, async (unit) => {
      if (!(await findUserById(unit.trx, input.user_id))) throw notFound('user');
      const account = userAccountId(input.user_id, input.currency);
      const description = input.note ?? 'Credit by the operator';
      const legs = [
        {
          accountId: systemAccountId('external', input.currency),
          currency: input.currency,
          bucket: 'available' as const,
          amount: -input.amount,
          type: 'deposit' as const,
          description,
        },
        { accountId: account, currency: input.currency, bucket: 'available' as const, amount: input.amount, type: 'deposit' as const, description },
      ];
      // The external account may go below zero, so a deposit is never short of money.
      const outcome = await applyMovement(unit.trx, legs, null, now());
      const balance = outcome.balances.get(account)!;
      return { user_id: input.user_id, movement_id: outcome.movementId, ...balanceView(input.currency, balance.available, balance.frozen) };
    });
  }

  return { overview, history, stats, rates, credit };
}
