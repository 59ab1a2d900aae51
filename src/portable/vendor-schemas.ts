/**
 * A tool's input schema as OpenAI's and Anthropic's tool lists take it, and the discovery
 * article's prompt lines: the conversions `GET /?format=` serves (src/model/exports.ts) and
 * the fetch-only client makes (src/client/conversions.ts). Pure and without imports, so both
 * run the same code and give the same bytes.
 *
 * The registry keeps a schema as it was registered and checks every call against it. The
 * vendors take less than JSON Schema allows, and one tool they refuse fails the whole request
 * (`400 invalid_function_parameters` from OpenAI, `400 invalid_request_error` from Anthropic),
 * so each vendor's export is rewritten into what it takes:
 *
 * - **draft-07 to 2020-12** (both; Anthropic refuses anything but 2020-12): a tuple's
 *   `items: [...]` becomes `prefixItems`, its `additionalItems` becomes `items`, `dependencies`
 *   becomes `dependentRequired` and `dependentSchemas`, and the `$schema` goes. The same
 *   values pass.
 * - **`items` on every array** (OpenAI: "array schema missing items"): `items: {}`, which
 *   allows what no `items` (or `items: true`) allowed; `items: false` becomes a `maxItems`.
 * - **no `anyOf`, `oneOf`, `allOf`, `not`, `enum` or `const` at the root** (both refuse them
 *   there): they go, and the object branches' properties join the root's. `required` keeps the
 *   names every branch of an `anyOf`/`oneOf` requires, and all that an `allOf` does. This one
 *   loosens the schema: a call that breaks the dropped rule is refused by the registry's check
 *   with the rule's path, as any call that breaks the schema is.
 *
 * A schema that needs none of these is returned as it is (the same object).
 */

import { copyOf, isObject as isSchema } from './json-values.js';

type Schema = Record<string, unknown>;

export type Vendor = 'openai' | 'anthropic';

const DRAFT_07 = /^https?:\/\/json-schema\.org\/draft-07\/schema#?$/u;

/** Keywords whose value is one subschema. */
const ONE = [
  'additionalProperties',
  'items',
  'additionalItems',
  'contains',
  'not',
  'if',
  'then',
  'else',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
];
/** Keywords whose value is a list of subschemas (draft-07 `items` as a tuple too). */
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems', 'items'];
/** Keywords whose value maps names to subschemas (draft-07 `dependencies` maps some to lists). */
const MAP = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies'];
/** What the vendors refuse at the root of a tool's input schema. */
const NOT_AT_ROOT = ['anyOf', 'oneOf', 'allOf', 'not', 'enum', 'const'];

const converted: Record<Vendor, WeakMap<Schema, Schema>> = { openai: new WeakMap(), anthropic: new WeakMap() };

/** `schema` (a tool's input schema) as `vendor`'s tool list takes it; remembered per schema object. */
export function vendorSchema(schema: Schema, vendor: Vendor): Schema {
  const cache = converted[vendor];
  let out = cache.get(schema);
  if (out === undefined) {
    const draft07 = typeof schema['$schema'] === 'string' && DRAFT_07.test(schema['$schema']);
    out = liftRoot(convert(schema, vendor, draft07) as Schema);
    if (draft07 && out['$schema'] !== undefined) {
      out = { ...out };
      delete out['$schema'];
    }
    cache.set(schema, out);
  }
  return out;
}

/** The subschema converted; the same value when nothing in it changes. */
function convert(node: unknown, vendor: Vendor, draft07: boolean): unknown {
  if (!isSchema(node)) return node;
  let out: Schema | undefined;
  const set = (keyword: string, value: unknown) => {
    out ??= { ...node };
    if (value === undefined) delete out[keyword];
    else out[keyword] = value;
  };
  for (const keyword of ONE) {
    const value = node[keyword];
    if (isSchema(value)) {
      const next = convert(value, vendor, draft07);
      if (next !== value) set(keyword, next);
    }
  }
  for (const keyword of LIST) {
    const value = node[keyword];
    if (!Array.isArray(value)) continue;
    const next = value.map((item) => convert(item, vendor, draft07));
    if (next.some((item, i) => item !== value[i])) set(keyword, next);
  }
  for (const keyword of MAP) {
    const value = node[keyword];
    if (!isSchema(value)) continue;
    let next: Schema | undefined;
    for (const [name, item] of Object.entries(value)) {
      const changed = convert(item, vendor, draft07);
      if (changed === item) continue;
      next ??= copyOf(value);
      next[name] = changed;
    }
    if (next) set(keyword, next);
  }
  const current = (): Schema => out ?? node;
  if (draft07) {
    const items = current()['items'];
    if (Array.isArray(items)) {
      set('prefixItems', items);
      set('items', current()['additionalItems']);
      set('additionalItems', undefined);
    } else if (current()['additionalItems'] !== undefined) {
      // Draft-07 ignores additionalItems beside a single items schema.
      set('additionalItems', undefined);
    }
    const dependencies = current()['dependencies'];
    if (isSchema(dependencies)) {
      const required: Schema = {};
      const schemas: Schema = {};
      for (const [name, value] of Object.entries(dependencies)) {
        if (Array.isArray(value)) required[name] = value;
        else schemas[name] = value;
      }
      set('dependencies', undefined);
      if (Object.keys(required).length > 0) set('dependentRequired', required);
      if (Object.keys(schemas).length > 0) set('dependentSchemas', schemas);
    }
  }
  if (vendor === 'openai' && typesOf(current()).includes('array')) {
    const items = current()['items'];
    if (items === false) {
      // No items past the tuple's: the same as a maximum length.
      const prefix = current()['prefixItems'];
      const length = Array.isArray(prefix) ? prefix.length : 0;
      const max = current()['maxItems'];
      set('maxItems', typeof max === 'number' ? Math.min(max, length) : length);
      set('items', {});
    } else if (items === undefined || items === true) set('items', {});
  }
  return current();
}

/** The root without what the vendors refuse there, its object branches' properties merged in. */
function liftRoot(root: Schema): Schema {
  if (!NOT_AT_ROOT.some((keyword) => root[keyword] !== undefined) && root['type'] === 'object') return root;
  const out: Schema = {};
  for (const [keyword, value] of Object.entries(root)) if (!NOT_AT_ROOT.includes(keyword)) out[keyword] = value;
  out['type'] = 'object';
  const properties: Schema = isSchema(root['properties']) ? copyOf(root['properties']) : {};
  const required = new Set(Array.isArray(root['required']) ? (root['required'] as unknown[]) : []);
  const merge = (branches: unknown, all: boolean) => {
    if (!Array.isArray(branches)) return;
    let common: Set<unknown> | undefined;
    for (const branch of branches) {
      if (!isSchema(branch)) continue;
      if (isSchema(branch['properties'])) {
        for (const [name, value] of Object.entries(branch['properties'])) if (!Object.hasOwn(properties, name)) properties[name] = value;
      }
      const names = Array.isArray(branch['required']) ? (branch['required'] as unknown[]) : [];
      if (all) for (const name of names) required.add(name);
      else common = common === undefined ? new Set(names) : new Set(names.filter((name) => common?.has(name)));
    }
    // A name every alternative requires is required whichever one holds.
    if (!all && branches.length > 0 && branches.every(isSchema)) for (const name of common ?? []) required.add(name);
  };
  merge(root['allOf'], true);
  merge(root['anyOf'], false);
  merge(root['oneOf'], false);
  if (Object.keys(properties).length > 0 || isSchema(root['properties'])) out['properties'] = properties;
  const names = [...required].filter((name) => typeof name === 'string' && Object.hasOwn(properties, name));
  if (names.length > 0) out['required'] = names;
  else delete out['required'];
  return out;
}

/** The types a schema's `type` names (none when it names none). */
export function typesOf(schema: Schema): string[] {
  const type = schema['type'];
  if (typeof type === 'string') return [type];
  return Array.isArray(type) ? type.filter((t): t is string => typeof t === 'string') : [];
}

/** The heading of the article's tool context. */
const PROMPT_HEADING = 'Available tools:';

/**
 * The article's prompt line: `- calculator(expression): Perform mathematical calculations`.
 * A parameter name with anything but letters, digits, `_`, `-` and `.` is written as a JSON
 * string, so that a name holding `, ` or `)` cannot pass for more parameters or a new line's text.
 */
export function promptLine(name: string, parameterNames: readonly string[], description: string): string {
  const names = parameterNames.map((p) => (/^[\w.-]+$/u.test(p) ? p : JSON.stringify(p)));
  // One tool per line, whatever the description holds.
  return `- ${name}(${names.join(', ')}): ${description.replace(/\s+/gu, ' ').trim()}`;
}

/** The article's tool context: the heading, a line per tool, a final newline; empty for no tools, as the article's agent then adds no tool message. */
export function promptText(lines: readonly string[]): string {
  return lines.length === 0 ? '' : `${[PROMPT_HEADING, ...lines].join('\n')}\n`;
}
