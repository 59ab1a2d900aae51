/**
 * A write's preconditions (RFC 9110 section 13.1): `If-Match` and `If-None-Match` of
 * `PUT`/`DELETE /tools/{name}` and `PUT`/`DELETE /tool-services/{id}`, as data, so that they are checked inside the
 * write's batch against the record it would replace, and in replicated mode travel the topic and
 * are checked where the write is applied, on every replica alike.
 */
import { z } from 'zod';
import { RegistryError } from './errors.js';

const EntityTags = z.array(z.string().min(1).max(200)).min(1).max(32);

export const WriteConditionSchema = z.object({
  /** `*`: the target must exist; entity tags: its current one must be among them (strong comparison). */
  ifMatch: z.union([z.literal('*'), EntityTags]).optional(),
  /** `*`: the target must not exist; entity tags: its current one must not be among them (weak comparison). */
  ifNoneMatch: z.union([z.literal('*'), EntityTags]).optional(),
});
export type WriteCondition = z.infer<typeof WriteConditionSchema>;

const opaque = (tag: string) => tag.replace(/^W\//, '');

/**
 * Throws TR_ERR_PRECONDITION_FAILED (412) when the condition does not hold for the target's
 * current entity tag (undefined when it does not exist, or is deleted).
 */
export function checkWriteCondition(what: string, condition: WriteCondition | undefined, current: string | undefined): void {
  if (condition === undefined) return;
  const { ifMatch, ifNoneMatch } = condition;
  if (ifMatch !== undefined) {
    // Strong comparison: a weak tag never matches (section 8.8.3.2).
    const holds = current !== undefined && (ifMatch === '*' || ifMatch.includes(current));
    if (!holds)
      throw failed(
        current === undefined ? `${what} does not exist (If-Match)` : `${what} has changed: its entity tag is ${current} (If-Match)`,
      );
  }
  if (ifNoneMatch !== undefined && current !== undefined) {
    if (ifNoneMatch === '*' || ifNoneMatch.some((tag) => opaque(tag) === current)) throw failed(`${what} exists (If-None-Match)`);
  }
}

function failed(detail: string): RegistryError {
  return new RegistryError('TR_ERR_PRECONDITION_FAILED', detail);
}
