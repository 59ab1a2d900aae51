/**
 * The JSON Schema dialects a tool's schema may be written in, each checked and compiled by the
 * matching Ajv class: draft 2020-12 (the default, and MCP's) and draft-07, which a schema must
 * declare with `$schema` (what the MCP TypeScript SDK's servers send). Both have the formats of
 * ajv-formats and Ajv's strict schema mode: an unknown keyword or format is an error, not
 * silently ignored. Strict types, tuples and `required` stay off: they refuse common, valid
 * schemas (`"type": ["string", "null"]`).
 */
import { Ajv, type Options } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { isObject } from '../model/json-object.js';
import { ajvRegExp } from './regex.js';
import { UNIQUE_ITEMS } from './unique-items.js';

/** An instance of either dialect's Ajv class. */
export type AnyAjv = Ajv | Ajv2020;

// ajv-formats is CommonJS with `exports.default`, which NodeNext types as the module itself.
const addFormats = ajvFormats.default;

/** Where a keyword's value holds subschemas. */
type SubschemaShape = 'schema' | 'schemas' | 'schema-map' | 'schema-or-schemas' | 'dependencies';

export interface Dialect {
  name: '2020-12' | 'draft-07';
  /** Keywords whose values hold subschemas, and how. */
  subschemas: ReadonlyMap<string, SubschemaShape>;
  /** Whether `$anchor` is a keyword (2020-12; draft-07's anchors are `$id`s, which are refused). */
  anchors: boolean;
  create: (options: Options) => AnyAjv;
}

const COMMON: [string, SubschemaShape][] = [
  ['not', 'schema'],
  ['if', 'schema'],
  ['then', 'schema'],
  ['else', 'schema'],
  ['propertyNames', 'schema'],
  ['additionalProperties', 'schema'],
  ['contains', 'schema'],
  ['contentSchema', 'schema'],
  ['allOf', 'schemas'],
  ['anyOf', 'schemas'],
  ['oneOf', 'schemas'],
  ['properties', 'schema-map'],
  ['patternProperties', 'schema-map'],
  ['$defs', 'schema-map'],
  ['definitions', 'schema-map'],
  ['dependencies', 'dependencies'],
];

const DRAFT_2020_12: Dialect = {
  name: '2020-12',
  subschemas: new Map([
    ...COMMON,
    ['items', 'schema'],
    ['prefixItems', 'schemas'],
    ['unevaluatedProperties', 'schema'],
    ['unevaluatedItems', 'schema'],
    ['dependentSchemas', 'schema-map'],
  ]),
  anchors: true,
  create: (options) => {
    const ajv = new Ajv2020(options);
    // Ajv resolves anchors (compile/resolve.ts) but lists no `$anchor` keyword, so strict mode
    // would refuse it; known, it validates nothing, as in the spec.
    ajv.addKeyword('$anchor');
    return ajv;
  },
};

const DRAFT_07: Dialect = {
  name: 'draft-07',
  subschemas: new Map([...COMMON, ['items', 'schema-or-schemas'], ['additionalItems', 'schema']]),
  anchors: false,
  create: (options) => new Ajv(options),
};

/** `$schema` values and their dialects; no `$schema` means draft 2020-12. */
const DIALECTS: ReadonlyMap<string, Dialect> = new Map([
  ['https://json-schema.org/draft/2020-12/schema', DRAFT_2020_12],
  ['https://json-schema.org/draft/2020-12/schema#', DRAFT_2020_12],
  ['http://json-schema.org/draft-07/schema#', DRAFT_07],
  ['http://json-schema.org/draft-07/schema', DRAFT_07],
]);

/** The dialect a schema declares, or why it is not one the registry takes. */
export function dialectOf(schema: Record<string, unknown>): Dialect | { unsupported: string } {
  const declared = schema['$schema'];
  if (declared === undefined) return DRAFT_2020_12;
  const dialect = typeof declared === 'string' ? DIALECTS.get(declared) : undefined;
  return (
    dialect ?? {
      unsupported:
        'must be "https://json-schema.org/draft/2020-12/schema" or "http://json-schema.org/draft-07/schema#" (or left out, meaning draft 2020-12)',
    }
  );
}

/** Calls `child` with each subschema a keyword's value holds (and its index or name), if it holds any. */
export function forEachSubschema(
  dialect: Dialect,
  keyword: string,
  value: unknown,
  child: (value: unknown, segment?: string | number) => void,
): void {
  switch (dialect.subschemas.get(keyword)) {
    case 'schema':
      child(value);
      break;
    case 'schemas':
      if (Array.isArray(value)) value.forEach((v, i) => child(v, i));
      break;
    case 'schema-or-schemas':
      if (Array.isArray(value)) value.forEach((v, i) => child(v, i));
      else child(value);
      break;
    case 'schema-map':
      if (isObject(value)) for (const name in value) child(value[name], name);
      break;
    case 'dependencies':
      // A schema, or an array of property names.
      if (isObject(value)) for (const name in value) if (!Array.isArray(value[name])) child(value[name], name);
      break;
  }
}

/**
 * Keywords Ajv knows but a tool's schema may not use: a tool's schema is one document whose
 * references are local, JSON pointers or its own plain-name anchors (anchors.ts). An `$id` would
 * also register the schema in the shared Ajv instance, where a second tool with the same `$id`
 * would clash; dynamic and recursive references resolve across documents at run time; `$async`
 * makes Ajv's validator return a promise; `id` is draft-04's `$id`, which Ajv refuses at compile time.
 */
export const REFUSED_KEYWORDS: ReadonlySet<string> = new Set([
  '$id',
  'id',
  '$dynamicAnchor',
  '$dynamicRef',
  '$recursiveAnchor',
  '$recursiveRef',
  '$vocabulary',
  '$async',
]);

/** What every instance shares: the checks at registration and the validators of calls agree. */
const OPTIONS: Options = {
  strict: false,
  strictSchema: true,
  // `properties` and `patternProperties` that both match a name are fine in JSON Schema.
  allowMatchingProperties: true,
  allErrors: true,
  logger: false,
  // Patterns run on the linear-time engine (regex.ts), never on V8's backtracking one.
  code: { regExp: ajvRegExp },
  // A referenced schema is inlined at each `$ref` only when it is small: inlining a large one
  // at each of a thousand references would compile a thousand copies of it.
  inlineRefs: 16,
};

/** A new Ajv instance of the dialect, with formats. */
export function newAjv(dialect: Dialect, options: Options = {}): AnyAjv {
  const ajv = dialect.create({ ...OPTIONS, ...options });
  // The formats only: ajv-formats' `formatMaximum` and friends are not JSON Schema keywords.
  addFormats(ajv, { mode: 'full' });
  // Ajv's `uniqueItems` compares every pair of items; this one hashes each item once.
  ajv.removeKeyword('uniqueItems');
  ajv.addKeyword(UNIQUE_ITEMS);
  return ajv;
}

/**
 * One instance per dialect for the checks at registration. It only runs `validateSchema`,
 * which compiles nothing per schema, so it does not grow; its meta-schema is compiled on first
 * use (about 200 ms, once per process).
 */
const checkers = new Map<Dialect, AnyAjv>();

export function checkerFor(dialect: Dialect): AnyAjv {
  let ajv = checkers.get(dialect);
  if (!ajv) checkers.set(dialect, (ajv = newAjv(dialect)));
  return ajv;
}

/** Whether a dialect's Ajv knows a keyword (what strict mode would otherwise refuse). */
export function knowsKeyword(ajv: AnyAjv, keyword: string): boolean {
  return Object.hasOwn(ajv.RULES.keywords, keyword) && ajv.RULES.keywords[keyword] === true;
}

/** Whether a dialect's Ajv knows a format. */
export function knowsFormat(ajv: AnyAjv, format: string): boolean {
  return Object.hasOwn(ajv.formats, format);
}
