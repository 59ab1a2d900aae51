export { copyOf } from '../portable/json-values.js';

/** A parsed JSON value that is an object (not null, not an array): its members can be read by name. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * What a local `$ref` (`#`, or `#` and a JSON pointer, RFC 6901) points to in `root`; undefined
 * for a reference to another document or to nothing.
 */
export function resolveLocal(ref: string, root: Record<string, unknown>): unknown {
  if (!ref.startsWith('#')) return undefined;
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    return undefined;
  }
  if (pointer === '') return root;
  if (!pointer.startsWith('/')) return undefined;
  let node: unknown = root;
  for (const token of pointer.slice(1).split('/')) {
    const key = token.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isObject(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}
