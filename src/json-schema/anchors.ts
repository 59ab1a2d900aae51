/**
 * Plain-name anchors (JSON Schema 2020-12, `"$anchor": "address"`) and the references that name
 * them (`"$ref": "#address"`), within one tool's schema. Ajv keeps a compiled schema's anchors
 * with that schema (its `localRefs`), never in the instance's shared `refs` where an `$id` goes,
 * so two tools with the same anchor name do not clash (test/schemas/anchors.test.ts).
 *
 * Ajv looks for anchors with json-schema-traverse, which skips the top of the schema and
 * everything under `prefixItems`: a reference to an anchor there does not compile, so the check
 * refuses it (check.ts) and says how to refer to it instead.
 */
import { dialectOf, forEachSubschema } from './dialects.js';
import { isObject, resolveLocal } from '../model/json-object.js';

/** The 2020-12 meta-schema's grammar of an anchor (`anchorString`). */
const ANCHOR_NAME = /^[A-Za-z_][-A-Za-z0-9._]*$/;

/** The anchor a `$ref` names (`#address` is `address`); undefined for a JSON pointer or anything else. */
export function anchorRefName(ref: string): string | undefined {
  const name = ref.slice(1);
  return ref.startsWith('#') && ANCHOR_NAME.test(name) ? name : undefined;
}

export interface AnchorSite {
  name: string;
  node: Record<string, unknown>;
  /** Where the subschema sits, from the top. */
  path: (string | number)[];
  /** Where Ajv does not look for anchors, if the subschema sits there. */
  unreachable?: 'top' | 'prefixItems';
}

export interface Anchors {
  byName: ReadonlyMap<string, AnchorSite>;
  /** A second subschema with an anchor name already taken, and the first. */
  duplicates: { site: AnchorSite; first: AnchorSite }[];
}

const NONE: Anchors = { byName: new Map(), duplicates: [] };
/** By schema: a tool's schema is not changed once registered, and is resolved on every call. */
const known = new WeakMap<object, Anchors>();

/**
 * The anchors of a schema's subschemas (where check.ts walks: the dialect's subschema keywords),
 * none in a dialect without `$anchor`. Iterative: tolerant of any nesting and any shape.
 */
export function anchorsOf(root: Record<string, unknown>): Anchors {
  const found = known.get(root);
  if (found) return found;
  const dialect = dialectOf(root);
  if ('unsupported' in dialect || !dialect.anchors) return NONE;
  const byName = new Map<string, AnchorSite>();
  const duplicates: Anchors['duplicates'] = [];
  const stack: { node: unknown; path: (string | number)[]; underPrefixItems: boolean }[] = [
    { node: root, path: [], underPrefixItems: false },
  ];
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    const { node, path, underPrefixItems } = frame;
    if (!isObject(node)) continue;
    const name = node['$anchor'];
    if (typeof name === 'string' && ANCHOR_NAME.test(name)) {
      const site: AnchorSite = { name, node, path };
      if (path.length === 0) site.unreachable = 'top';
      else if (underPrefixItems) site.unreachable = 'prefixItems';
      const first = byName.get(name);
      if (first) duplicates.push({ site, first });
      else byName.set(name, site);
    }
    const children: typeof stack = [];
    for (const keyword in node) {
      forEachSubschema(dialect, keyword, node[keyword], (value, segment) =>
        children.push({
          node: value,
          path: segment === undefined ? [...path, keyword] : [...path, keyword, segment],
          underPrefixItems: underPrefixItems || keyword === 'prefixItems',
        }),
      );
    }
    // Pushed in reverse, so that the first in document order is the one a duplicate names.
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as (typeof stack)[number]);
  }
  const anchors = { byName, duplicates };
  known.set(root, anchors);
  return anchors;
}

/**
 * What a `$ref` of a tool's schema points at in `root`: a subschema by JSON pointer
 * (`#/$defs/a`) or by anchor (`#a`); undefined for a reference to another document or to nothing.
 */
export function resolveRef(ref: string, root: Record<string, unknown>): unknown {
  const name = anchorRefName(ref);
  return name === undefined ? resolveLocal(ref, root) : anchorsOf(root).byName.get(name)?.node;
}
