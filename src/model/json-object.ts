import { isObject } from '../portable/json-values.js';

export { copyOf, isObject } from '../portable/json-values.js';

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
  return pointer.slice(1).split('/').map(unescapePointerSegment);
}

/** A JSON pointer segment as the key it names (RFC 6901: `~1` is `/`, `~0` is `~`). */
export const unescapePointerSegment = (segment: string): string => segment.replaceAll('~1', '/').replaceAll('~0', '~');

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
