/**
 * `uniqueItems` at the cost of hashing each item once. Ajv's own keyword compares every pair of
 * items that are not all of one scalar type: 15,000 small arrays (124 KB of JSON) held the event
 * loop for 3.5 s (issue 28). Here each item is written once in a canonical form (object keys
 * sorted; JSON numbers are already equal exactly when their values are) and looked up in a Map,
 * so the cost is linear in the size of the array, plus sorting each object's keys.
 */
import type { ErrorObject, KeywordDefinition } from 'ajv';

/** JSON with object keys in order: two items are equal in JSON Schema exactly when these are. */
function canonical(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonical(record[key])}`)
    .join(',')}}`;
}

type ValidateWithErrors = ((schema: boolean, data: unknown[]) => boolean) & { errors?: Partial<ErrorObject>[] };

const validate: ValidateWithErrors = (unique, data) => {
  if (!unique) return true;
  const seen = new Map<string, number>();
  for (let j = 0; j < data.length; j++) {
    const key = canonical(data[j]);
    const i = seen.get(key);
    if (i !== undefined) {
      // Ajv's own wording and parameters, so messages read as before.
      validate.errors = [
        { keyword: 'uniqueItems', params: { i: j, j: i }, message: `must NOT have duplicate items (items ## ${i} and ${j} are identical)` },
      ];
      return false;
    }
    seen.set(key, j);
  }
  return true;
};

/** Replaces Ajv's `uniqueItems` (remove the built-in keyword first). */
export const UNIQUE_ITEMS: KeywordDefinition = {
  keyword: 'uniqueItems',
  type: 'array',
  schemaType: 'boolean',
  errors: true,
  validate,
};
