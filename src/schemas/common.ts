import { z } from 'zod';

/** Building blocks shared by every resource schema. */
// Lower-cased on the way in: ids are compared and hashed as text (account ids, client task ids).
export const uuid = z.uuid({ error: 'must be a UUID' }).toLowerCase();
export const dateTime = z.iso.datetime({ offset: true });

export const envelope = <T extends z.ZodType>(data: T) =>
  z.object({
    code: z.number().int().meta({ description: '0 on success; see the error table otherwise' }),
    message: z.string(),
    data,
    timestamp: z.number().int().meta({ description: 'Unix seconds' }),
  });

export const errorEnvelope = z
  .object({
    code: z.number().int(),
    message: z.string(),
    data: z.record(z.string(), z.unknown()).nullable(),
    timestamp: z.number().int(),
  })
  .meta({ id: 'ErrorEnvelope' });
