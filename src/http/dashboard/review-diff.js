// @ts-check
/**
 * A pending change of an upstream (MCP server or OpenAPI source) as the review pages show it:
 * its digest short, whole in its title, and its diff from the version agents are served, by
 * JSON pointer, old struck and new inserted, said to screen readers too. Everything in it is
 * the upstream's text: written with textContent only.
 */
import { element } from './console-format.js';

const OPS = { add: 'added', remove: 'removed', replace: 'changed' };

/** @typedef {{ op: 'add' | 'remove' | 'replace', pointer: string, old?: unknown, new?: unknown }} DiffOp */
/** @param {string} digest  `sha256:` and 64 hex digits */
export const shortDigest = (digest) => (digest.length > 19 ? `${digest.slice(0, 19)}…` : digest);

/**
 * A digest shown short, whole in its title.
 * @param {string} digest
 */
export const digestElement = (digest) => element('code', { class: 'digest', title: digest }, shortDigest(digest));

/** @param {unknown} value */
const asText = (value) => (typeof value === 'string' ? value : JSON.stringify(value, null, 2));

/**
 * One side of a diff: struck or inserted text, said to screen readers too.
 * @param {'del' | 'ins'} tag
 * @param {unknown} value
 */
function side(tag, value) {
  const text = asText(value);
  const el = element(tag, { class: typeof value === 'string' && !text.includes('\n') ? 'inline' : 'block' });
  el.append(element('span', { class: 'visually-hidden' }, tag === 'del' ? 'Old: ' : 'New: '), element('span', {}, text));
  return el;
}

/**
 * @param {DiffOp[]} diff
 * @param {boolean} truncated
 */
export function diffElement(diff, truncated) {
  const list = element('dl', { class: 'diff' });
  for (const op of diff) {
    const term = element('dt');
    term.append(element('code', {}, op.pointer === '' ? '/' : op.pointer), ` ${OPS[op.op] ?? op.op}`);
    const detail = element('dd');
    if (op.op !== 'add') detail.append(side('del', op.old));
    if (op.op !== 'remove') detail.append(side('ins', op.new));
    list.append(term, detail);
  }
  if (!truncated) return list;
  const wrap = element('div');
  wrap.append(
    list,
    element('p', { class: 'muted' }, 'The versions differ in more places than listed: tool-registry review shows the whole versions.'),
  );
  return wrap;
}
