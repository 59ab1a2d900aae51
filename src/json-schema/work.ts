/**
 * A bound on the work of one validation, known before it runs (issue 28). Patterns run in linear
 * time (regex.ts) and `uniqueItems` hashes (unique-items.ts), but a schema can still make Ajv do
 * far more than the value's size: 30 `$defs` that are each an `anyOf` of two references to the
 * next check every value 2^30 times, and an `anyOf` of two `items` that refer back to the top
 * doubles the work at each level of nesting. Validation is synchronous and cannot be stopped,
 * so the work is estimated first and a value that would cost more than MAX_VALIDATION_WORK is
 * refused rather than checked, and one that would cost more than a few milliseconds is checked
 * on a worker thread (validation-pool.ts), so the event loop never waits on it.
 *
 * The estimate counts, for every pair of a subschema and a part of the value it applies to,
 * the subschema's keywords, plus the length of strings for `pattern` and `format`, plus the size
 * of the value for `enum`, `const` and `uniqueItems`. It is an upper bound of what Ajv does with
 * `allErrors` (every branch of `anyOf` is counted, and every `patternProperties` entry as if it
 * matched).
 *
 * - Fast path: a schema without a cycle of references has an expanded size E (its subschemas with
 *   every `$ref` replaced by its target, each weighted as above), computed once per compile.
 *   Each expanded subschema applies to parts of the value at one depth, which do not overlap, so
 *   the work is at most E times the value's size S (nodes, plus string lengths). When E x S is
 *   within the budget, nothing more is done: for ordinary tools this is one walk of the value.
 * - Otherwise the exact estimate is computed over (subschema, part of the value) pairs,
 *   memoised, so it costs at most one step per distinct pair and stops at the budget.
 */
import { isObject } from '../model/json-object.js';
import { resolveRef } from './anchors.js';
import { linearRegExp } from './regex.js';

/**
 * The most work one check may take, in the units above. A unit costs Ajv 0.1 to 0.2 us where the
 * value fits, and up to about 1 us where every keyword fails and makes an error (measured with
 * 30 levels of `anyOf` references), so this is at most about two seconds, on the worker thread.
 */
export const MAX_VALIDATION_WORK = 2_000_000;
/**
 * The most a check may cost on the event loop (at most about 20 ms); costlier ones run on the
 * worker thread. Ordinary calls cost tens to hundreds of units.
 */
export const INLINE_VALIDATION_WORK = 20_000;
/** Deeper than this, nesting alone is refused (the value, or references that keep descending). */
const MAX_RECURSION = 2_000;

/** A value whose check would cost more than the budget. */
export class ValidationWorkError extends Error {
  override readonly name = 'ValidationWorkError';
}

interface WorkNode {
  /** Keywords and `required` entries: work each time the subschema is applied. */
  weight: number;
  /** `pattern` (weighed by its automaton) and `format`: work per character of a string. */
  perChar: number;
  /** `patternProperties`' patterns, weighed by their automata: work per character of a name. */
  perNameChar: number;
  /** `enum` entries, `const` and `uniqueItems`: work per unit of a container's size. */
  perSize: number;
  /** Applied to the same value: the applicators and `$ref`. */
  same: number[];
  properties?: Map<string, number>;
  /** `patternProperties`, counted as if every pattern matched every name. */
  patterns: number[];
  additionalProperties?: number;
  propertyNames?: number;
  unevaluatedProperties?: number;
  /** Item schemas by position (`prefixItems`, or draft-07's array `items`). */
  prefixItems: number[];
  /** Applied to the items after `prefixItems` (`items`, or draft-07's `additionalItems`). */
  restItems?: number;
  /** Applied to every item. */
  everyItem: number[];
}

const SAME_VALUE = ['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else'] as const;
/**
 * Work per character of a pattern's automaton of `size` RE2 instructions: a match costs up to
 * about 4-8 ns a character and instruction here ([ab]{1000}, 1,002 instructions, 77 ms on 20,000
 * characters), a unit 0.1-1 us.
 */
const patternWeight = (pattern: unknown): number => {
  if (typeof pattern !== 'string') return 1;
  try {
    return 1 + Math.ceil(linearRegExp(pattern).size / 8);
  } catch {
    // Refused at registration; a schema stored before cannot be compiled, so nothing runs it.
    return 1;
  }
};

/** A compiled schema's work model. */
export class ValidationWork {
  readonly #nodes: WorkNode[] = [];
  /** The expanded size E of the fast path; Infinity where references loop through the value. */
  readonly #expanded: number;
  /**
   * Whether a subschema is reached from more than one place (a `$ref` target): only then can
   * the exact estimate meet a (subschema, part of the value) pair twice and need its memo.
   */
  readonly #shared: boolean;
  /** The whole schema, which local `$ref`s point into (by JSON pointer or anchor). */
  #root: Record<string, unknown> = {};

  constructor(schema: Record<string, unknown>) {
    const ids = new Map<object, number>();
    const refs: { from: WorkNode; target: unknown }[] = [];
    const add = (value: unknown): number => {
      if (isObject(value)) {
        const known = ids.get(value);
        if (known !== undefined) return known;
      }
      const node: WorkNode = { weight: 1, perChar: 0, perNameChar: 0, perSize: 0, same: [], patterns: [], prefixItems: [], everyItem: [] };
      const id = this.#nodes.push(node) - 1;
      if (!isObject(value)) return id;
      ids.set(value, id);
      this.#describe(node, value, add, (target) => refs.push({ from: node, target }));
      return id;
    };
    this.#root = schema;
    add(schema);
    // A target is a subschema already described (found by identity), or a boolean schema.
    for (const { from, target } of refs) from.same.push(add(target === undefined ? true : target));
    this.#expanded = this.#expandedSize();
    const parents = new Uint32Array(this.#nodes.length);
    for (const node of this.#nodes) for (const child of this.#children(node)) parents[child] = (parents[child] ?? 0) + 1;
    this.#shared = parents.some((count, id) => count > 1 || (id === 0 && count > 0));
  }

  #describe(node: WorkNode, schema: Record<string, unknown>, add: (value: unknown) => number, ref: (target: unknown) => void): void {
    node.weight += Object.keys(schema).length;
    if (schema['pattern'] !== undefined) node.perChar += patternWeight(schema['pattern']);
    if (schema['format'] !== undefined) node.perChar++;
    if (Array.isArray(schema['enum'])) node.perSize += schema['enum'].length;
    if (schema['const'] !== undefined) node.perSize++;
    if (schema['uniqueItems'] === true) node.perSize++;
    if (Array.isArray(schema['required'])) node.weight += schema['required'].length;
    for (const keyword of SAME_VALUE) {
      const value = schema[keyword];
      if (Array.isArray(value)) for (const sub of value) node.same.push(add(sub));
      else if (value !== undefined) node.same.push(add(value));
    }
    for (const keyword of ['dependentSchemas', 'dependencies']) {
      const map = schema[keyword];
      if (isObject(map)) for (const name in map) if (!Array.isArray(map[name])) node.same.push(add(map[name]));
    }
    if (typeof schema['$ref'] === 'string') ref(resolveRef(schema['$ref'], this.#root));
    const properties = schema['properties'];
    if (isObject(properties)) {
      node.properties = new Map();
      for (const name in properties) node.properties.set(name, add(properties[name]));
    }
    const patterns = schema['patternProperties'];
    if (isObject(patterns)) {
      for (const pattern in patterns) {
        node.patterns.push(add(patterns[pattern]));
        node.perNameChar += patternWeight(pattern);
      }
    }
    if (schema['additionalProperties'] !== undefined) node.additionalProperties = add(schema['additionalProperties']);
    if (schema['propertyNames'] !== undefined) node.propertyNames = add(schema['propertyNames']);
    if (schema['unevaluatedProperties'] !== undefined) node.unevaluatedProperties = add(schema['unevaluatedProperties']);
    const items = schema['items'];
    if (Array.isArray(items)) {
      node.prefixItems = items.map(add);
      if (schema['additionalItems'] !== undefined) node.restItems = add(schema['additionalItems']);
    } else {
      if (Array.isArray(schema['prefixItems'])) node.prefixItems = schema['prefixItems'].map(add);
      if (items !== undefined) node.restItems = add(items);
    }
    for (const keyword of ['contains', 'unevaluatedItems']) if (schema[keyword] !== undefined) node.everyItem.push(add(schema[keyword]));
  }

  /** Every child of a node, of either kind. */
  #children(node: WorkNode): number[] {
    const out = [...node.same, ...node.patterns, ...node.prefixItems, ...node.everyItem];
    if (node.properties) out.push(...node.properties.values());
    for (const one of [node.additionalProperties, node.propertyNames, node.unevaluatedProperties, node.restItems])
      if (one !== undefined) out.push(one);
    return out;
  }

  /** E: each node's weight plus its children's expanded sizes; Infinity on any cycle. */
  #expandedSize(): number {
    const size = new Array<number | undefined>(this.#nodes.length);
    const onPath = new Uint8Array(this.#nodes.length);
    const visit = (id: number): number => {
      const known = size[id];
      if (known !== undefined) return known;
      if (onPath[id] === 1) return Infinity;
      onPath[id] = 1;
      const node = this.#nodes[id] as WorkNode;
      let total = node.weight + node.perChar + node.perNameChar + node.perSize;
      for (const child of this.#children(node)) {
        total += visit(child);
        if (total > MAX_VALIDATION_WORK) break;
      }
      onPath[id] = 0;
      size[id] = total;
      return total;
    };
    return visit(0);
  }

  /** How many subschemas the schema has. */
  get nodes(): number {
    return this.#nodes.length;
  }

  /**
   * The fast path's bound on the work of checking `value` (E x S), or Infinity when it is over
   * `limit` or the schema's references loop through the value. Costs one walk of at most
   * `limit / E` nodes of the value.
   */
  bound(value: unknown, limit: number): number {
    if (this.#expanded === Infinity) return Infinity;
    const room = Math.floor(limit / this.#expanded);
    const size = sizeOf(value, room + 1);
    return size > room ? Infinity : size * this.#expanded;
  }

  /** Whether checking `value` costs at most `budget`: the fast bound, else the exact estimate. */
  fits(value: unknown, budget: number): boolean {
    return this.bound(value, budget) <= budget || new WorkCount(this.#nodes, budget, this.#shared).of(0, value) <= budget;
  }
}

/** Why a value is refused: `what` names it ("arguments", "answer"). */
export function overBudget(what: string, budget: number): ValidationWorkError {
  return new ValidationWorkError(
    `checking the ${what} against this schema would take more work than the registry allows for one check (${budget} steps): send a smaller value`,
  );
}

/** The size S of a JSON value: its nodes, object keys and string lengths; stops past `limit`. */
function sizeOf(value: unknown, limit = Infinity): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && size <= limit) {
    const item = stack.pop();
    size++;
    if (typeof item === 'string') size += item.length;
    else if (Array.isArray(item)) for (const element of item) stack.push(element);
    else if (isObject(item)) {
      for (const key in item) {
        size += key.length;
        stack.push(item[key]);
      }
    }
  }
  return size;
}

class OverBudget extends Error {}

/** The exact estimate, memoised by (subschema, part of the value), stopping at the budget. */
class WorkCount {
  readonly #nodes: readonly WorkNode[];
  readonly #budget: number;
  /** Per node: a part of the value (by identity, or by value for scalars) to its work. */
  readonly #memo = new Map<number, Map<unknown, number>>();
  /** Off for a schema whose subschemas each have one parent: no pair comes twice. */
  readonly #memoise: boolean;
  readonly #sizes = new Map<object, number>();
  #steps = 0;
  #depth = 0;

  constructor(nodes: readonly WorkNode[], budget: number, memoise: boolean) {
    this.#nodes = nodes;
    this.#budget = budget;
    this.#memoise = memoise;
  }

  /** The work of node `id` on `value`, or more than the budget. */
  of(id: number, value: unknown): number {
    try {
      return this.#cost(id, value);
    } catch (err) {
      if (err instanceof OverBudget) return this.#budget + 1;
      throw err;
    }
  }

  #size(value: object): number {
    let size = this.#sizes.get(value);
    if (size === undefined) this.#sizes.set(value, (size = sizeOf(value, this.#budget + 1)));
    return size;
  }

  #cost(id: number, value: unknown): number {
    let memo = this.#memoise ? this.#memo.get(id) : undefined;
    const known = memo?.get(value);
    if (known !== undefined) return known;
    if (++this.#steps > this.#budget || ++this.#depth > MAX_RECURSION) throw new OverBudget();
    const node = this.#nodes[id] as WorkNode;
    let work = node.weight;
    if (typeof value === 'string') work += node.perChar * value.length;
    else if (typeof value === 'object' && value !== null && node.perSize > 0) work += node.perSize * this.#size(value);
    for (const child of node.same) work += this.#cost(child, value);
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        work += 1;
        const positional = node.prefixItems[i];
        if (positional !== undefined) work += this.#cost(positional, item);
        else if (node.restItems !== undefined) work += this.#cost(node.restItems, item);
        for (const every of node.everyItem) work += this.#cost(every, item);
      }
    } else if (isObject(value)) {
      for (const key in value) {
        const item = value[key];
        work += 1 + node.perNameChar * key.length;
        const named = node.properties?.get(key);
        if (named !== undefined) work += this.#cost(named, item);
        for (const pattern of node.patterns) work += this.#cost(pattern, item);
        if (named === undefined && node.additionalProperties !== undefined) work += this.#cost(node.additionalProperties, item);
        if (node.propertyNames !== undefined) work += this.#cost(node.propertyNames, key);
        if (node.unevaluatedProperties !== undefined) work += this.#cost(node.unevaluatedProperties, item);
        if (work > this.#budget) throw new OverBudget();
      }
    }
    if (work > this.#budget) throw new OverBudget();
    this.#depth--;
    if (this.#memoise) {
      if (!memo) this.#memo.set(id, (memo = new Map()));
      memo.set(value, work);
    }
    return work;
  }
}
