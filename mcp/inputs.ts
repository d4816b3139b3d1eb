import { z } from 'zod';
import { capabilityIdParams } from '../src/schemas/capabilities.ts';
import { uuid } from '../src/schemas/common.ts';
import { skillIdParams, updateSkillFields } from '../src/schemas/skills.ts';
import { transactionIdParams } from '../src/schemas/transactions.ts';

/**
 * The MCP-only argument schemas. Every tool refuses an argument it does not know (4000, naming
 * it), so the REST path parameters, which zod leaves open, are made strict here; and update_skill
 * publishes how to clear a setting without a nullable (union) type.
 */
export const getCapabilityArguments = z.strictObject(capabilityIdParams.shape);
export const getTransactionArguments = z.strictObject(transactionIdParams.shape);
export const getSkillArguments = z.strictObject(skillIdParams.shape);
export const deleteSkillArguments = z.strictObject(skillIdParams.shape);
export const noArguments = z.strictObject({});

/** The settings of a skill that can be removed (REST: the field set to null). */
const clearable = ['city', 'ut_price', 'min_duration', 'max_duration'] as const;

/**
 * update_skill: the fields to change as REST's PUT takes them, plus `clear`, the settings to
 * remove. REST clears a setting with null, which a union-free schema cannot say; null is still
 * parsed (the same parser), `clear` is what is published. The answer is the PUT's.
 */
export const updateSkillToolArguments = z
  .strictObject({
    skill_id: uuid,
    ...updateSkillFields,
    clear: z.array(z.enum(clearable)).min(1).max(clearable.length).optional().meta({
      description: 'Settings to remove: city (only for an online skill), ut_price (no price: to be agreed), min_duration, max_duration',
    }),
  })
  .superRefine((value, context) => {
    if (!Object.keys(value).some((key) => key !== 'skill_id')) context.addIssue({ code: 'custom', path: [], message: 'name at least one field to change' });
    for (const [index, field] of (value.clear ?? []).entries()) {
      if (value[field] !== undefined && value[field] !== null)
        context.addIssue({ code: 'custom', path: ['clear', index], message: `${field} is both given and cleared` });
    }
  })
  .transform(({ clear, ...patch }) => ({ ...patch, ...Object.fromEntries((clear ?? []).map((field) => [field, null])) }));
