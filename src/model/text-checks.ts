/**
 * What every string and free-form value of a descriptor is held to: no control, bidirectional or
 * invisible characters (a model would read what the dashboard does not show), found within a
 * bound of issues so that a hostile body cannot make zod raise millions; and counts checked
 * before the items they count are parsed.
 */
import { z } from 'zod';
import { escapeInvisible, invisibleCharacterMessage } from './invisible-characters.js';

/**
 * Control characters would reach operators' terminals (the CLI, pretty logs) and agents'
 * prompts raw, where an escape sequence can rewrite the screen and a carriage return overwrite
 * a line. One rule for every free-form string a descriptor carries, whether a text field
 * (descriptions, `returns`, config values) or any string inside a free-form JSON value
 * (parameter `enum`, `default` and `items`, the agent hints), object keys included: no C0
 * control character but tab and line feed, which text uses for layout (carriage return is
 * refused: a line ends with a line feed alone), no DEL and no C1. Nor the Unicode line and
 * paragraph separators (U+2028, U+2029: they break lines where a reader, a log viewer or a
 * script embedding the text in JavaScript sees none), nor the bidirectional embeddings,
 * overrides and isolates (U+202A-U+202E, U+2066-U+2069), which make text display in an order
 * other than the one a model reads ("Trojan Source"); the left-to-right and right-to-left marks,
 * which right-to-left text needs, stay allowed. Nor any character a screen does not show but a
 * model reads (issue 29: tag characters, zero-width characters, private use, unassigned; the list
 * and its exceptions are in invisible-characters.ts), refused with a message naming the code
 * point. Names, ids, scopes, hosts, endpoints and topics have ASCII-only patterns already.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
export const NO_CONTROL_BUT_NL_TAB = /^[^\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]*$/;
// eslint-disable-next-line no-control-regex -- the same set, to find one
const CONTROL_CHARACTER = /[\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
export const CONTROL_MESSAGE = 'must not contain control characters or bidirectional formatting characters';

/**
 * The invisible-character half of the rule, for a string field: one issue naming the first. A
 * refinement with its message made only on failure: a `superRefine` here made parseCheckedTool
 * of 10,000 of the bench's descriptors (bench/data.ts) some 30% slower; this costs 0 to 5% on
 * them, and 10 to 15% on descriptors written in Japanese.
 */
export const showsEverything = (value: string) => invisibleCharacterMessage(value) === undefined;
export const INVISIBLE_ERROR = { error: (issue: { input: unknown }) => invisibleCharacterMessage(String(issue.input)) };

/**
 * Free-form text of at most `max` characters, under the rule above. The control characters stay
 * a `pattern`, which the OpenAPI document shows; the invisible ones are a refinement, as the
 * joiner inside an emoji and the message naming the code point need code.
 */
export const text = (max: number) =>
  z.string().max(max).regex(NO_CONTROL_BUT_NL_TAB, CONTROL_MESSAGE).refine(showsEverything, INVISIBLE_ERROR);

/** One refusal of a string or key: where, and why. */
interface UnsafeString {
  path: PropertyKey[];
  message: string;
}

/** Whether one string or key breaks the rule above. */
const breaksRule = (value: string) => CONTROL_CHARACTER.test(value) || invisibleCharacterMessage(value) !== undefined;

/**
 * The rule above for one string or key: the issues it raises at `path` (pushed to `issues`),
 * none when it keeps it. A refused key is named in the path with its control characters
 * JSON-escaped and its invisible ones as `\uXXXX`, so that the error shows what the key holds.
 */
function refuseInString(value: string, path: PropertyKey[], issues: UnsafeString[], isKey: boolean): PropertyKey[] {
  const control = CONTROL_CHARACTER.test(value);
  const invisible = invisibleCharacterMessage(value);
  if (!control && invisible === undefined) return path;
  const at = isKey ? [...path.slice(0, -1), escapeInvisible(control ? JSON.stringify(value).slice(1, -1) : value)] : path;
  const what = isKey ? 'key ' : '';
  if (control) issues.push({ path: at, message: `${what}${CONTROL_MESSAGE}` });
  if (invisible !== undefined) issues.push({ path: at, message: `${what}${invisible}` });
  return at;
}

/**
 * The most issues the rule raises for one value; then one more, at the value, says it holds
 * others, and the walk stops. An enum of 100,000 strings each holding a bidi control (1 MiB)
 * took 1.3 to 1.7 s of the event loop with an issue per string, and with BODY_LIMIT above
 * ~3 MiB zod's spread of the issues could overflow the stack. The figure is one less than the
 * error path's MAX_FIELD_ERRORS (resolve.ts), the most an answer lists, so that the issue saying
 * there are more is listed too.
 */
const MAX_ISSUES_PER_VALUE = 99;
const MORE_UNSAFE_MESSAGE = `holds more strings or keys with control, bidirectional or invisible characters than the ${MAX_ISSUES_PER_VALUE} named`;

/**
 * The strings and keys under `roots` that break the rule above, in order, with their paths: at
 * most MAX_ISSUES_PER_VALUE issues, and whether there are more. Iterative, so that no nesting
 * the body parser lets through can overflow it.
 */
export function unsafeStrings(roots: [value: unknown, path: PropertyKey[]][]): { issues: UnsafeString[]; more: boolean } {
  const issues: UnsafeString[] = [];
  // Each child's path is made when it is reached, not when its parent is: the walk may stop first.
  const stack: [node: unknown, parent: PropertyKey[], key: PropertyKey | undefined][] = roots
    .map(([value, path]): [unknown, PropertyKey[], undefined] => [value, path, undefined])
    .reverse();
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [node, parent, key] = next;
    const path = key === undefined ? parent : [...parent, key];
    if (typeof node === 'string') {
      refuseInString(node, path, issues, false);
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], path, i]);
    } else if (typeof node === 'object' && node !== null) {
      const entries = Object.entries(node);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [name, child] = entries[i] as [string, unknown];
        const named = breaksRule(name) ? refuseInString(name, [...path, name], issues, true) : undefined;
        stack.push(named === undefined ? [child, path, name] : [child, named, undefined]);
      }
    }
    if (issues.length >= MAX_ISSUES_PER_VALUE) break;
  }
  // At the cap: look on, without paths, only as far as the next string to refuse, if any.
  const more =
    issues.length > MAX_ISSUES_PER_VALUE || (issues.length === MAX_ISSUES_PER_VALUE && holdsUnsafeString(stack.map(([node]) => node)));
  return { issues: issues.slice(0, MAX_ISSUES_PER_VALUE), more };
}

/** Raises what unsafeStrings found, and the issue saying there are more (at `morePath`), where there are. */
export function raiseUnsafe({ issues, more }: ReturnType<typeof unsafeStrings>, ctx: z.RefinementCtx, morePath: PropertyKey[] = []): void {
  for (const { path, message } of issues) ctx.addIssue({ code: 'custom', path, message });
  if (more) ctx.addIssue({ code: 'custom', path: morePath, message: MORE_UNSAFE_MESSAGE });
}

/** The rule above for every string inside a JSON value, keys included, one issue per string (and kind of character). */
export function refuseUnsafeCharacters(value: unknown, ctx: z.RefinementCtx): void {
  raiseUnsafe(unsafeStrings([[value, []]]), ctx);
}

/** Whether any string or key in these JSON values breaks the rule; stops at the first that does. */
function holdsUnsafeString(values: unknown[]): boolean {
  for (let node = values.pop(); node !== undefined; node = values.pop()) {
    if (typeof node === 'string') {
      if (breaksRule(node)) return true;
    } else if (Array.isArray(node)) {
      for (const child of node) values.push(child);
    } else if (typeof node === 'object' && node !== null) {
      for (const [key, child] of Object.entries(node)) {
        if (breaksRule(key)) return true;
        values.push(child);
      }
    }
  }
  return false;
}

/** A free-form JSON value (enum values, defaults, item schemas, agent hints), under the rule above. */
export const jsonText = () => z.json().superRefine(refuseUnsafeCharacters);

/**
 * `schema`, behind a check of how many items or entries a value has that runs before any of them
 * is parsed: zod's own `.max` runs after, so a list of 100,000 bad items raised 100,000 issues
 * first. `schema` keeps its own bound too, which the OpenAPI document shows.
 */
export function countedFirst<T extends z.ZodType>(max: number, unit: 'values' | 'entries', schema: T) {
  return z.preprocess((value, ctx) => {
    const count = Array.isArray(value)
      ? value.length
      : unit === 'entries' && typeof value === 'object' && value !== null
        ? Object.keys(value).length
        : 0;
    if (count > max) ctx.addIssue({ code: 'custom', message: `must have at most ${max} ${unit}`, input: value });
    return value;
  }, schema);
}
