/**
 * What changed between two JSON values, as operations at JSON pointers (RFC 6901): how an
 * operator reads a pending version of an upstream tool against the accepted one (issue 29).
 * Objects are compared key by key, arrays item by item; anything else (and a change of type)
 * is a `replace`. Bounded: at most `max` operations, then `truncated`. Pure.
 */

export interface DiffOp {
  op: 'add' | 'remove' | 'replace';
  /** Where, from the compared values' root: `/inputSchema/properties/city/description`. */
  pointer: string;
  /** The value before (`remove`, `replace`). */
  old?: unknown;
  /** The value after (`add`, `replace`). */
  new?: unknown;
}

export interface Diff {
  ops: DiffOp[];
  /** More operations than `max` differ: the list stops there. */
  truncated: boolean;
}

/** `~` and `/` escaped as RFC 6901 says. */
function pointerToken(key: string): string {
  return key.replaceAll('~', '~0').replaceAll('/', '~1');
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

export function jsonDiff(before: unknown, after: unknown, max = 200): Diff {
  const ops: DiffOp[] = [];
  let truncated = false;
  const push = (op: DiffOp): boolean => {
    if (ops.length === max) {
      truncated = true;
      return false;
    }
    ops.push(op);
    return true;
  };
  // Iterative, so that a deep value (upstream schemas are bounded, but deep) never overflows the stack.
  const stack: [unknown, unknown, string][] = [[before, after, '']];
  while (stack.length > 0 && !truncated) {
    const [a, b, pointer] = stack.pop() as [unknown, unknown, string];
    if (isObject(a) && isObject(b)) {
      const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort().reverse();
      for (const key of keys) {
        const at = `${pointer}/${pointerToken(key)}`;
        const inA = Object.hasOwn(a, key) && a[key] !== undefined;
        const inB = Object.hasOwn(b, key) && b[key] !== undefined;
        if (inA && inB) stack.push([a[key], b[key], at]);
        else if (inA) stack.push([a[key], undefined, at]);
        else if (inB) stack.push([undefined, b[key], at]);
      }
      continue;
    }
    if (Array.isArray(a) && Array.isArray(b)) {
      for (let i = Math.max(a.length, b.length) - 1; i >= 0; i--) stack.push([a[i], b[i], `${pointer}/${i}`]);
      continue;
    }
    if (a === undefined && b === undefined) continue;
    if (a === undefined) push({ op: 'add', pointer, new: b });
    else if (b === undefined) push({ op: 'remove', pointer, old: a });
    else if (!sameJson(a, b)) push({ op: 'replace', pointer, old: a, new: b });
  }
  return { ops, truncated };
}

function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return a === b;
  return JSON.stringify(a) === JSON.stringify(b);
}
