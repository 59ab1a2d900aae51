// @ts-check
/**
 * Editing a stored record from the console with a conditional write (issue 34), the same for a
 * tool (tool-editor.js) and a tool service (source-forms.js): the entity tag read when the edit
 * began goes back in `If-Match`, so that another operator's change made meanwhile is never
 * overwritten unseen; the registry's `412` is shown as a conflict, with a button, focused, that
 * reads the record again to edit their version; and a refusal's problem+json `errors` go under
 * the fields their paths name.
 */
import { element } from './console-format.js';

export class RecordEdit {
  /** The entity tag of the record the edit started from, or of what the last save stored. */
  #etag = '';

  /**
   * @param {{ id: string, what: string, reread: () => void }} options  the reread button's id;
   *   what the record is, in words (`tool`, `tool service`); what reading it again does
   */
  constructor({ id, what, reread }) {
    this.what = what;
    this.reread = element('button', { type: 'button', id, class: 'secondary', hidden: '' }, `Read the ${what} again`);
    this.reread.addEventListener('click', () => reread());
  }

  /**
   * The record as read for the edit: its entity tag is what the edit's writes are conditional on.
   * @param {import('./api.js').Answer} answer
   */
  began(answer) {
    this.#etag = answer.headers.get('etag') ?? '';
    this.reread.hidden = true;
  }

  /** The headers of the edit's write. */
  get headers() {
    return { 'if-match': this.#etag };
  }

  /**
   * A write taken: the next one is conditional on what it stored.
   * @param {import('./api.js').Answer} answer
   */
  saved(answer) {
    this.#etag = answer.headers.get('etag') ?? this.#etag;
  }

  /**
   * A `412`: the conflict said, and the button that reads the record again shown and focused.
   * @param {string} name
   * @param {any} problem
   * @param {(state: string, text: string) => void} say
   */
  conflict(name, problem, say) {
    say(
      'refused',
      `Conflict: someone changed ${name} after you began editing it, so nothing was saved (${problem.detail ?? '412'}). Read the ${this.what} again to see their change, then edit that.`,
    );
    this.reread.hidden = false;
    this.reread.focus();
  }
}

/**
 * Each problem+json `errors` entry of a refusal under the field its dotted or slashed `path`
 * names (`fieldOf` picks the field from the path's segments, null for none), prefixed with the
 * path unless it is the field's own; the first one shown gets focus.
 * @param {any} problem
 * @param {(segments: string[]) => string | null} fieldOf
 * @param {(key: string, message: string, focus: boolean) => void} show
 * @returns {string[]} the entries no field took, as text
 */
export function showProblemErrors(problem, fieldOf, show) {
  const elsewhere = [];
  let first = true;
  for (const error of Array.isArray(problem?.errors) ? problem.errors : []) {
    const segments = String(error?.path ?? '')
      .replace(/^\//, '')
      .split(/[/.]/);
    const path = segments.join('.');
    const message = String(error?.message ?? 'invalid');
    const key = fieldOf(segments);
    const text = path === '' || path === key ? message : `${path}: ${message}`;
    if (key === null) elsewhere.push(text);
    else {
      show(key, text, first);
      first = false;
    }
  }
  return elsewhere;
}
