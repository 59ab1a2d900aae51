/**
 * The check a tool's JSON Schema passes at registration (issue 12), without compiling it:
 * compiling costs about 1.5 ms a schema with Ajv, 150 s for a 100,000-tool import, where this
 * check costs tens of microseconds. It refuses what Ajv would refuse when a call first compiles
 * the schema, so that a schema that is served can always be checked against:
 *
 * - a schema larger than MAX_SCHEMA_BYTES of JSON, or nested deeper than MAX_SCHEMA_DEPTH;
 * - a `$schema` other than draft 2020-12 or draft-07, or one below the top;
 * - a `$ref` that is not a local JSON pointer (`#` or `#/...`) or, in draft 2020-12, the name of
 *   one of the document's anchors (`#name`), or that points at no subschema of the document or
 *   names no anchor of it (remote references are never fetched); two subschemas with one anchor;
 * - keywords a tool's schema may not use (dialects.ts), and keywords and formats Ajv does not
 *   know (its strict mode), regular expressions JavaScript cannot compile with the `u` flag or
 *   the linear-time engine cannot run (backreferences, lookaround: regex.ts), and the keyword
 *   combinations Ajv's strict mode refuses (`if` without `then` or `else`...);
 * - `$ref` cycles that consume no input (`{"$ref": "#"}` at the top, or `$defs` that refer to
 *   each other through `allOf`...): checking any value against them would never end;
 * - anything the dialect's meta-schema refuses (`"type": "strnig"`), with Ajv's `validateSchema`.
 */
import type { ErrorObject } from 'ajv';
import { anchorRefName, anchorsOf, type Anchors } from './anchors.js';
import {
  checkerFor,
  dialectOf,
  forEachSubschema,
  knowsFormat,
  knowsKeyword,
  REFUSED_KEYWORDS,
  type AnyAjv,
  type Dialect,
} from './dialects.js';
import { isObject, localRefSegments, unescapePointerSegment } from '../model/json-object.js';
import { linearRegExp, NonLinearPatternError } from './regex.js';

/** The most JSON a schema may be (UTF-8 bytes): it is served to every agent that may call the tool. */
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** The deepest a subschema may sit: the root is at depth 1, its properties at 2. */
export const MAX_SCHEMA_DEPTH = 32;
/** The most problems one check (or one call's arguments) reports. */
export const MAX_PROBLEMS = 20;

export type PathSegment = string | number;

/** One problem, at a path of segments from the schema's (or the arguments') top. */
export interface SchemaProblem {
  path: PathSegment[];
  message: string;
}

/**
 * The problems of a schema whose top is an object; none when a call may compile it. Without
 * `sizeLimit` (a schema stored before the limit, about to be compiled) its size is not held
 * against it: a large schema compiles.
 */
export function schemaProblems(schema: Record<string, unknown>, { sizeLimit = true } = {}): SchemaProblem[] {
  if (sizeLimit) {
    const tooLarge = sizeProblems(schema);
    if (tooLarge.length > 0) return tooLarge;
  }
  const dialect = dialectOf(schema);
  if ('unsupported' in dialect) return [{ path: ['$schema'], message: dialect.unsupported }];
  const ajv = checkerFor(dialect);
  const walk = walkSchema(schema, dialect, ajv);
  // Too deep: the meta-schema's validator recurses, so it does not see such a schema at all.
  if (walk.tooDeep) return walk.problems;
  // Refused by the meta-schema: the walk's findings on a malformed schema would only add noise.
  if (!(ajv.validateSchema(schema) as boolean)) return problemsOf(ajv.errors ?? [], 'schema');
  return walk.problems;
}

/** Only the size limit (for schemas valid by construction, see tool-schemas.ts). */
export function sizeProblems(schema: Record<string, unknown>): SchemaProblem[] {
  let bytes: number;
  try {
    bytes = Buffer.byteLength(JSON.stringify(schema));
  } catch {
    // Nesting deeper than the stack (an upstream's JSON, not a request body, whose depth is bounded).
    return [{ path: [], message: `is nested too deeply (a schema may be at most ${MAX_SCHEMA_DEPTH} subschemas deep)` }];
  }
  return bytes > MAX_SCHEMA_BYTES
    ? [{ path: [], message: `is ${bytes} bytes of JSON; a schema may have at most ${MAX_SCHEMA_BYTES}` }]
    : [];
}

interface Frame {
  node: unknown;
  path: PathSegment[];
  /** `path` as a JSON pointer. */
  pointer: string;
  depth: number;
}

/**
 * Every subschema, iteratively (no nesting overflows it): what the meta-schema does not check.
 * Tolerant of malformed schemas: it descends only where the shapes are right. Paths are built
 * only for problems: this runs for every tool of an import.
 */
function walkSchema(root: Record<string, unknown>, dialect: Dialect, ajv: AnyAjv): { problems: SchemaProblem[]; tooDeep: boolean } {
  const problems: SchemaProblem[] = [];
  const add = (path: PathSegment[], message: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push({ path, message });
  };
  /** JSON pointers of every subschema, which a `$ref` may point at. */
  const subschemas = new Set<string>();
  const refs: { ref: string; path: PathSegment[]; from: string }[] = [];
  /** The automata of the schema's patterns so far, in RE2 instructions (MAX_SCHEMA_PATTERN_SIZE). */
  let patternSize = 0;
  /** Subschemas applied to the same value as their parent (not descending into it), by pointer. */
  const sameValue = new Map<string, string[]>();
  let tooDeep = false;
  let sawAnchor = false;
  const stack: Frame[] = [{ node: root, path: [], pointer: '', depth: 1 }];
  for (let frame = stack.pop(); frame !== undefined && problems.length < MAX_PROBLEMS; frame = stack.pop()) {
    const { node, path, pointer, depth } = frame;
    if (typeof node === 'boolean') {
      subschemas.add(pointer);
      continue;
    }
    if (!isObject(node)) continue;
    if (depth > MAX_SCHEMA_DEPTH) {
      add(path, `is nested deeper than ${MAX_SCHEMA_DEPTH} schemas`);
      tooDeep = true;
      continue;
    }
    subschemas.add(pointer);
    const children: Frame[] = [];
    const child = (value: unknown, keyword: string, segment?: PathSegment) => {
      const childPath = segment === undefined ? [...path, keyword] : [...path, keyword, segment];
      const childPointer = `${pointer}/${escapeSegment(keyword)}${segment === undefined ? '' : `/${escapeSegment(String(segment))}`}`;
      children.push({ node: value, path: childPath, pointer: childPointer, depth: depth + 1 });
      if (SAME_VALUE_KEYWORDS.has(keyword)) {
        const targets = sameValue.get(pointer);
        if (targets) targets.push(childPointer);
        else sameValue.set(pointer, [childPointer]);
      }
    };
    for (const keyword in node) {
      const value = node[keyword];
      if (REFUSED_KEYWORDS.has(keyword)) {
        add(
          [...path, keyword],
          `"${keyword}" is not supported: a tool's schema is one document, whose references are local JSON pointers ("$ref": "#/$defs/name") or, in draft 2020-12, its own anchors ("$anchor": "name", "$ref": "#name")`,
        );
        continue;
      }
      if (keyword === '$schema') {
        if (depth > 1) add([...path, keyword], 'may only be given at the top of the schema');
        continue;
      }
      if (!knowsKeyword(ajv, keyword)) {
        add([...path, keyword], `unknown keyword "${keyword}" (not a JSON Schema ${dialect.name} keyword)`);
        continue;
      }
      if (dialect.subschemas.has(keyword)) {
        forEachSubschema(dialect, keyword, value, (v, segment) => child(v, keyword, segment));
      } else if (keyword === '$ref' && typeof value === 'string') refs.push({ ref: value, path: [...path, keyword], from: pointer });
      else if (keyword === '$anchor') sawAnchor = true;
      else if (keyword === 'format' && typeof value === 'string' && !knowsFormat(ajv, value))
        add([...path, keyword], `unknown format "${value}"`);
      else if (keyword === 'pattern' && typeof value === 'string') patternSize += checkPattern(value, [...path, keyword], add, patternSize);
    }
    const patternProperties = node['patternProperties'];
    if (isObject(patternProperties)) {
      for (const pattern in patternProperties)
        patternSize += checkPattern(pattern, [...path, 'patternProperties', pattern], add, patternSize);
    }
    strictCombinations(node, path, dialect, add);
    // Pushed in reverse, so that problems come in document order.
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i] as Frame);
  }
  if (!tooDeep) {
    // Only a schema with anchors, or references to them, pays for finding them.
    let anchors: Anchors | undefined;
    if (sawAnchor) {
      anchors = anchorsOf(root);
      for (const { site, first } of anchors.duplicates)
        add([...site.path, '$anchor'], `"${site.name}" is already the anchor of #${pointerOf(first.path)}: an anchor names one subschema`);
    }
    const resolved: Reference[] = [];
    for (const { ref, path, from } of refs) {
      const target = localPointer(ref);
      const anchor = target === undefined && dialect.anchors ? anchorRefName(ref) : undefined;
      if (anchor !== undefined) {
        const site = (anchors ??= anchorsOf(root)).byName.get(anchor);
        if (!site) add(path, `"${ref}" names no anchor of this schema (no subschema has "$anchor": "${anchor}")`);
        else if (site.unreachable === 'top')
          add(path, `"${ref}" names the anchor at the top of the schema, which the validator does not resolve: refer to the top with "#"`);
        else if (site.unreachable === 'prefixItems')
          add(
            path,
            `"${ref}" names an anchor inside "prefixItems", where the validator does not look for anchors: refer to it with "#${pointerOf(site.path)}"`,
          );
        else resolved.push({ ref, path, from, to: pointerOf(site.path) });
      } else if (target === undefined)
        add(
          path,
          dialect.anchors
            ? 'must be a local JSON pointer ("#" or "#/...") or name an anchor of this schema ("#name"): remote references are refused'
            : 'must be a local JSON pointer ("#" or "#/..."): remote references and anchors are refused',
        );
      else if (!subschemas.has(target)) add(path, `"${ref}" does not point at a subschema of this schema`);
      else resolved.push({ ref, path, from, to: target });
    }
    if (resolved.length > 0 && problems.length === 0) {
      const cycle = refCycle(sameValue, resolved);
      if (cycle)
        add(
          cycle.path,
          `"${cycle.ref}" closes a loop of references that never descends into the value (${cycle.chain}): checking any value against it would never end`,
        );
    }
  }
  return { problems, tooDeep };
}

/**
 * Keywords whose subschemas apply to the value itself rather than to a part of it: a loop of
 * references through these alone never consumes input. (`properties`, `items` and the rest
 * descend into the value, so a reference back through them ends with the value.)
 */
const SAME_VALUE_KEYWORDS: ReadonlySet<string> = new Set([
  'allOf',
  'anyOf',
  'oneOf',
  'not',
  'if',
  'then',
  'else',
  'dependentSchemas',
  'dependencies',
]);

interface Reference {
  ref: string;
  path: PathSegment[];
  /** The pointer of the subschema holding the `$ref`, and of the one it points at. */
  from: string;
  to: string;
}

/**
 * A `$ref` on a cycle of subschemas that all apply to the same value, if there is one: an
 * iterative depth-first search over the same-value edges and the references.
 */
function refCycle(
  sameValue: ReadonlyMap<string, string[]>,
  refs: readonly Reference[],
): { ref: string; path: PathSegment[]; chain: string } | undefined {
  const edges = new Map<string, { to: string; ref?: Reference }[]>();
  const edge = (from: string, to: string, ref?: Reference) => {
    const list = edges.get(from);
    const entry = ref ? { to, ref } : { to };
    if (list) list.push(entry);
    else edges.set(from, [entry]);
  };
  for (const [from, targets] of sameValue) for (const to of targets) edge(from, to);
  for (const ref of refs) edge(ref.from, ref.to, ref);
  /** 1 while on the search's path, 2 once every path from it is known to end. */
  const state = new Map<string, 1 | 2>();
  for (const start of edges.keys()) {
    if (state.has(start)) continue;
    // Each frame: a subschema, the index of its next edge, and the edge that led to it.
    const stack: { node: string; next: number; via?: { to: string; ref?: Reference } }[] = [{ node: start, next: 0 }];
    state.set(start, 1);
    while (stack.length > 0) {
      const frame = stack[stack.length - 1] as (typeof stack)[number];
      const out = edges.get(frame.node) ?? [];
      if (frame.next >= out.length) {
        state.set(frame.node, 2);
        stack.pop();
        continue;
      }
      const next = out[frame.next++] as { to: string; ref?: Reference };
      const seen = state.get(next.to);
      if (seen === 2) continue;
      if (seen === 1) {
        // The cycle: from where `next.to` sits on the path, round to `next` again.
        const from = stack.findIndex((f) => f.node === next.to);
        const steps = [...stack.slice(from + 1).map((f) => f.via as { to: string; ref?: Reference }), next];
        const ref = steps.find((s) => s.ref)?.ref as Reference;
        const chain = [next.to, ...steps.map((s) => s.to)].map((p) => `#${p}`).join(' -> ');
        return { ref: ref.ref, path: ref.path, chain };
      }
      state.set(next.to, 1);
      stack.push({ node: next.to, next: 0, via: next });
    }
  }
  return undefined;
}

/** What Ajv refuses when it compiles, though the meta-schema takes it (strict mode, ajv/dist/vocabularies). */
function strictCombinations(
  node: Record<string, unknown>,
  path: PathSegment[],
  dialect: Dialect,
  add: (path: PathSegment[], message: string) => void,
): void {
  const has = (keyword: string) => Object.hasOwn(node, keyword);
  if (has('if') && !has('then') && !has('else')) add([...path, 'if'], '"if" without "then" or "else" has no effect');
  for (const keyword of ['then', 'else'])
    if (has(keyword) && !has('if')) add([...path, keyword], `"${keyword}" without "if" has no effect`);
  for (const keyword of ['minContains', 'maxContains'])
    if (has(keyword) && !has('contains')) add([...path, keyword], `"${keyword}" without "contains" has no effect`);
  if (has('contains') && node['minContains'] === 0 && !has('maxContains'))
    add([...path, 'minContains'], '0 without "maxContains" makes "contains" have no effect');
  const min = node['minContains'];
  const max = node['maxContains'];
  if (typeof min === 'number' && typeof max === 'number' && min > max)
    add([...path, 'minContains'], 'is more than "maxContains": nothing could be valid');
  if (dialect.name === 'draft-07' && has('additionalItems') && !Array.isArray(node['items'])) {
    add([...path, 'additionalItems'], 'has no effect unless "items" is an array of schemas');
  }
  // Draft 2020-12's meta-schema takes an empty `enum`; Ajv does not compile it.
  if (Array.isArray(node['enum']) && node['enum'].length === 0) add([...path, 'enum'], 'must not be empty: nothing could be valid');
  if (has('nullable') && typeof node['nullable'] !== 'boolean') add([...path, 'nullable'], 'must be a boolean');
  else if (has('nullable')) {
    const type = node['type'];
    const types = Array.isArray(type) ? type : type === undefined ? [] : [type];
    if (types.length === 0) add([...path, 'nullable'], 'needs "type"');
    else if (node['nullable'] === false && types.includes('null')) add([...path, 'nullable'], 'false contradicts "type": "null"');
  }
}

/** Patterns are valid ECMA-262 (with the `u` flag, as Ajv reads them) and run on the linear-time engine. */
function checkPattern(
  pattern: string,
  path: PathSegment[],
  add: (path: PathSegment[], message: string) => void,
  sizeBefore: number,
): number {
  try {
    new RegExp(pattern, 'u');
  } catch {
    add(path, `"${pattern.slice(0, 100)}" is not a valid regular expression (ECMA-262, with the u flag)`);
    return 0;
  }
  // Past the schema's total, nothing more is compiled: each costs the event loop about 1 us an instruction.
  if (sizeBefore > MAX_SCHEMA_PATTERN_SIZE) return 0;
  try {
    const { size } = linearRegExp(pattern);
    if (sizeBefore + size > MAX_SCHEMA_PATTERN_SIZE) {
      add(
        path,
        `takes the schema's patterns past ${MAX_SCHEMA_PATTERN_SIZE} states of the linear-time engine in all (this one: ${size}); a schema's patterns may compile to at most that`,
      );
    }
    return size;
  } catch (err) {
    if (!(err instanceof NonLinearPatternError)) throw err;
    add(path, `"${pattern.slice(0, 100)}" ${err.message}`);
    return 0;
  }
}

/** The most RE2 instructions all of one schema's patterns may compile to (about 20 ms of compiling). */
const MAX_SCHEMA_PATTERN_SIZE = 20_000;

/** The canonical JSON pointer of a `$ref` that is a local one (`#`, `#/$defs/a%20b`), else undefined. */
function localPointer(ref: string): string | undefined {
  const segments = localRefSegments(ref);
  return segments === undefined ? undefined : pointerOf(segments);
}

/** A JSON pointer (RFC 6901) of path segments. */
export function pointerOf(path: readonly PathSegment[]): string {
  return path.map((s) => `/${escapeSegment(String(s))}`).join('');
}

const escapeSegment = (segment: string) =>
  segment.includes('~') || segment.includes('/') ? segment.replaceAll('~', '~0').replaceAll('/', '~1') : segment;

/** The segments of a JSON pointer as Ajv reports them (`instancePath`). */
function segmentsOf(pointer: string): string[] {
  return pointer === '' ? [] : pointer.split('/').slice(1).map(unescapePointerSegment);
}

/**
 * Ajv's errors as problems, one per path (messages joined): a missing or extra property is
 * named by its own path, allowed values are listed, and the "must match a schema in anyOf"
 * summary is dropped where its branches said more at the same path. `what` names what was
 * checked (the schema, or the arguments) in messages about an extra property.
 */
export function problemsOf(errors: readonly ErrorObject[], what: 'schema' | 'arguments'): SchemaProblem[] {
  const byPath = new Map<string, { path: PathSegment[]; messages: string[]; summaries: string[] }>();
  for (const error of errors) {
    const { path, message } = describe(error, what);
    const key = pointerOf(path);
    let entry = byPath.get(key);
    if (!entry) {
      if (byPath.size >= MAX_PROBLEMS) continue;
      byPath.set(key, (entry = { path, messages: [], summaries: [] }));
    }
    const list = error.keyword === 'anyOf' || error.keyword === 'oneOf' ? entry.summaries : entry.messages;
    if (!list.includes(message)) list.push(message);
  }
  return [...byPath.values()].map(({ path, messages, summaries }) => ({
    path,
    message: (messages.length > 0 ? messages : summaries).join('; '),
  }));
}

function describe(error: ErrorObject, what: 'schema' | 'arguments'): SchemaProblem {
  const path: PathSegment[] = segmentsOf(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { path: [...path, String(params['missingProperty'])], message: 'is required' };
    case 'dependentRequired':
    case 'dependencies':
      if (typeof params['missingProperty'] === 'string') {
        return { path: [...path, params['missingProperty']], message: `is required when "${String(params['property'])}" is given` };
      }
      break;
    case 'additionalProperties':
      return {
        path: [...path, String(params['additionalProperty'])],
        message: what === 'arguments' ? 'is not in the input schema, which allows no other properties here' : 'is not allowed here',
      };
    case 'unevaluatedProperties':
      return {
        path: [...path, String(params['unevaluatedProperty'])],
        message: what === 'arguments' ? 'is not in the input schema, which allows no other properties here' : 'is not allowed here',
      };
    case 'enum':
      return {
        path,
        message: `must be one of ${bounded((params['allowedValues'] as unknown[]).map((v) => JSON.stringify(v)).join(', '))}`,
      };
    case 'const':
      return { path, message: `must be ${bounded(JSON.stringify(params['allowedValue']))}` };
  }
  return { path, message: error.message ?? `fails "${error.keyword}"` };
}

const bounded = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}...` : text);
