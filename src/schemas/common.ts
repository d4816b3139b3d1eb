import { z } from 'zod';
import { errorTable } from '../errors.ts';
// The words of validation messages, for every schema (installed on import).
import './messages.ts';

/** Building blocks shared by every resource schema. */
// Lower-cased on the way in: ids are compared and hashed as text (account ids, client task ids).
export const uuid = z.uuid({ error: 'must be a UUID' }).toLowerCase();
export const dateTime = z.iso.datetime({ offset: true });

export const envelope = <T extends z.ZodType>(data: T) =>
  z.object({
    code: z.literal(0).meta({ description: '0 on success; a failure is an ErrorEnvelope' }),
    message: z.string(),
    data,
    timestamp: z.number().int().meta({ description: 'Unix seconds' }),
  });

/**
 * A failure's envelope. Its code is one of the error table's, never 0, so that a client (or a
 * validator of a oneOf, as under the device poll's HTTP 200) tells it from a success by the schema.
 */
export const errorEnvelope = z
  .object({
    code: z
      .literal(Object.values(errorTable).map((row) => row.code))
      .meta({ description: 'A code of the error table (docs/decisions/api-surface.md, "Error codes")' }),
    message: z.string(),
    data: z.record(z.string(), z.unknown()).nullable(),
    timestamp: z.number().int(),
  })
  .meta({ id: 'ErrorEnvelope' });
