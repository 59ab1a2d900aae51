/** A parsed JSON value that is an object (not null, not an array): its members can be read by name. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
