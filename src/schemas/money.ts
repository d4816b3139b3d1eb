import { z } from 'zod';
import { amountProblem, parseAmount } from '../domain/money.ts';

/** An amount in a request: a number or a string with at most two fraction digits, parsed to minor units. */
export const amountInput = z
  .union([z.string(), z.number()])
  .transform((value, context) => {
    const minor = parseAmount(value);
    if (minor === null) {
      context.addIssue({ code: 'custom', message: amountProblem(value) });
      return z.NEVER;
    }
    return minor;
  })
  .meta({ description: 'Decimal amount, e.g. "12.50" or 12.5; at most two fraction digits', examples: ['12.50'] });

export const amountOutput = z
  .string()
  .regex(/^-?\d+\.\d{2}$/)
  .meta({ description: 'Decimal amount with two fraction digits', examples: ['12.50'] });
export const currency = z.enum(['UT', 'CNY']);
