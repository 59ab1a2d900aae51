/**
 * The nulls a strict-mode client sends to mean "absent" (issue 12). OpenAI's strict mode wants
 * every property required, so `GET /?format=openai-strict` makes an optional property required
 * and nullable (src/model/exports.ts), and a model then sends `"note": null` where it means to
 * leave `note` out. The bridge drops such a null before the arguments are checked and
 * forwarded, under one rule:
 *
 *   a key whose value is `null` is dropped when no schema the object meets requires the key,
 *   and the key's own schema cannot accept `null`.
 *
 * So a call the tool's schema accepts is never changed (its nulls are all acceptable), and a
 * null the schema accepts (`"type": ["string", "null"]`) is an argument and stays. Only a call
 * the schema would certainly refuse loses keys, and then only optional ones. A null for a
 * required key stays, and is refused by the check with its path.
 *
 * Followed where the conversion makes properties nullable and where a failure below fails the
 * whole call: an object's `properties`, an array's `items`, and local `$ref`s. Not into
 * `anyOf`, `oneOf` or the like, where a branch that fails need not fail the call: nulls there
 * stay as sent. "Cannot accept null" is decided from the schema's words (`type`, `enum`,
 * `const`, and through `$ref`, `anyOf`, `oneOf` and `allOf`); where that cannot tell, the null
 * stays and the check decides.
 */
import { copyOf, isObject } from '../model/json-object.js';
import { resolveRef } from './anchors.js';

type Schema = Record<string, unknown>;
type Json = Record<string, unknown>;

/** `$ref` hops followed from one subschema (a cycle of references ends here). */
const MAX_REF_HOPS = 32;

/** The arguments without the nulls that stand for absent keys; the same object when there are none. */
export function withoutStrictNulls(schema: Schema, args: Json): Json {
  return objectWithout(schema, args, schema);
}

function objectWithout(schema: unknown, value: Json, root: Schema): Json {
  const layers = layersOf(schema, root);
  if (layers.length === 0) return value;
  let out: Json | undefined;
  for (const key of Object.keys(value)) {
    const item = value[key];
    const subschemas = propertySchemas(layers, key);
    if (subschemas.length === 0) continue;
    let replaced: unknown = item;
    if (item === null) {
      if (
        !layers.some((layer) => Array.isArray(layer['required']) && layer['required'].includes(key)) &&
        subschemas.some((s) => refusesNull(s, root, 0))
      ) {
        out ??= copyOf(value);
        delete out[key];
      }
      continue;
    }
    // Every schema listed for the key applies to its value: a certain failure under any of them fails the call.
    for (const subschema of subschemas) replaced = valueWithout(subschema, replaced, root);
    if (replaced !== item) {
      out ??= copyOf(value);
      out[key] = replaced;
    }
  }
  return out ?? value;
}

function valueWithout(schema: unknown, value: unknown, root: Schema): unknown {
  if (isObject(value)) return objectWithout(schema, value, root);
  if (!Array.isArray(value)) return value;
  // A tuple's items (draft-07 `items` as an array, 2020-12 `prefixItems`) are not followed.
  const itemSchemas = layersOf(schema, root).flatMap((layer) => (isObject(layer['items']) ? [layer['items']] : []));
  if (itemSchemas.length === 0) return value;
  let out: unknown[] | undefined;
  value.forEach((element: unknown, i) => {
    let replaced = element;
    for (const items of itemSchemas) replaced = valueWithout(items, replaced, root);
    if (replaced !== element) {
      out ??= [...value];
      out[i] = replaced;
    }
  });
  return out ?? value;
}

/**
 * The schema and the subschemas its `$ref`s lead to: all of them apply to the same value (the
 * registry's validator, Ajv 8, applies `$ref` beside its sibling keywords in draft-07 too).
 */
function layersOf(schema: unknown, root: Schema): Schema[] {
  const layers: Schema[] = [];
  let current: unknown = schema;
  for (let hops = 0; isObject(current) && hops <= MAX_REF_HOPS; hops++) {
    layers.push(current);
    const ref = current['$ref'];
    if (typeof ref !== 'string') break;
    current = resolveRef(ref, root);
  }
  return layers;
}

/** The schemas the layers give one property (own keys only: the key is the caller's). */
function propertySchemas(layers: readonly Schema[], key: string): unknown[] {
  const found: unknown[] = [];
  for (const layer of layers) {
    const properties = layer['properties'];
    if (isObject(properties) && Object.hasOwn(properties, key)) found.push(properties[key]);
  }
  return found;
}

/** True only when the schema certainly refuses `null`; false when it accepts it or cannot tell. */
function refusesNull(schema: unknown, root: Schema, hops: number): boolean {
  if (typeof schema === 'boolean') return !schema;
  if (!isObject(schema)) return false;
  const type = schema['type'];
  if (typeof type === 'string' && type !== 'null') return true;
  if (Array.isArray(type) && !type.includes('null')) return true;
  if (Array.isArray(schema['enum']) && !schema['enum'].includes(null)) return true;
  if (Object.hasOwn(schema, 'const') && schema['const'] !== null) return true;
  const ref = schema['$ref'];
  if (typeof ref === 'string' && hops < MAX_REF_HOPS && refusesNull(resolveRef(ref, root), root, hops + 1)) return true;
  for (const keyword of ['anyOf', 'oneOf'] as const) {
    const branches = schema[keyword];
    if (Array.isArray(branches) && branches.length > 0 && branches.every((branch) => refusesNull(branch, root, hops + 1))) return true;
  }
  const allOf = schema['allOf'];
  return Array.isArray(allOf) && allOf.some((branch) => refusesNull(branch, root, hops + 1));
}
