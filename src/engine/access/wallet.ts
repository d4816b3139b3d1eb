import { type Currency, currencyOfSpace } from '../../domain/money.ts';
import { userAccountId } from '../../store/accounts.ts';
import type { Caller } from './rules.ts';

/**
 * Whose money a caller may look at: its own accounts only, chosen from the credentials, never
 * from the request. Balances and statistics show both of the user's accounts; the history shows
 * only the caller's space's currency (an agent UT, a human CNY), like its transactions, so a
 * filter on the other currency finds nothing. Deposits are the operator's (admin routes).
 */
const currencies: readonly Currency[] = ['UT', 'CNY'];

export const ownAccountIds = (caller: Caller) => currencies.map((currency) => userAccountId(caller.user_id, currency));

export function historyAccountIds(caller: Caller, currencyFilter?: Currency): string[] {
  const ownCurrency = currencyOfSpace(caller.caller_type);
  return currencyFilter && currencyFilter !== ownCurrency ? [] : [userAccountId(caller.user_id, ownCurrency)];
}
