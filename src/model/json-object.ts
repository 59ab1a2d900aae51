export { copyOf } from '../portable/json-values.js';

/** A parsed JSON value that is an object (not null, not an array): its members can be read by name. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The segments of a local `$ref`'s JSON pointer (RFC 6901): `#` is `[]`, `#/$defs/a%20b` is
 * `['$defs', 'a b']`; undefined for a reference to another document.
 */
export function localRefSegments(ref: string): string[] | undefined {
  if (!ref.startsWith('#')) return undefined;
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return undefined;
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** What a local `$ref` points to in `root`; undefined for a reference to another document or to nothing. */
export function resolveLocal(ref: string, root: Record<string, unknown>): unknown {
  const segments = localRefSegments(ref);
  if (segments === undefined) return undefined;
  let node: unknown = root;
  for (const key of segments) {
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isObject(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}
