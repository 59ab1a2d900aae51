/** A parsed JSON value that is an object (not null, not an array): its members can be read by name. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A copy of a parsed JSON object that keeps every own key as data (`__proto__` included: it came from JSON). */
export function copyOf(value: Record<string, unknown>): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value))
    Object.defineProperty(copy, key, { value: value[key], writable: true, enumerable: true, configurable: true });
  return copy;
}
