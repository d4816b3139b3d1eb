import { type AppError, forbidden, notFound } from '../../errors.ts';
import type { Principal } from '../common/index.ts';

/**
 * Authorization as data, the way routes are declared: each resource has one module here listing
 * who may act on what (party, space, caller type), and the engine asks it instead of checking
 * inline. A rule says in words what must hold and which refusal the caller gets otherwise.
 * Something the caller may not even see is 4040, never 4030, so that probing ids teaches nothing;
 * 4030 is only for a resource the caller can see but may not act on that way.
 */
export type Caller = Pick<Principal, 'user_id' | 'caller_type'>;

export interface Rule<Resource> {
  /** What must hold, as a sentence (also the test's name for the rule). */
  says: string;
  holds(caller: Caller, resource: Resource): boolean;
  /** 'not_found' (4040) hides the resource; a message is a 4030 with that sentence. */
  otherwise: 'not_found' | { forbidden: string };
}

/** Returns the resource when every rule holds; else throws the first failing rule's refusal. */
export function authorize<Resource, Row extends Resource>(
  rules: readonly Rule<Resource>[],
  caller: Caller,
  resource: Row | undefined | null,
  name: string,
): Row {
  if (resource === undefined || resource === null) throw notFound(name);
  for (const rule of rules) {
    if (!rule.holds(caller, resource)) throw refusal(rule, name);
  }
  return resource;
}

function refusal<Resource>(rule: Rule<Resource>, name: string): AppError {
  return rule.otherwise === 'not_found' ? notFound(name) : forbidden(rule.otherwise.forbidden);
}
