// @ts-check
/**
 * Registering and editing a tool from the console: `PUT /tools/{name}`, with `If-None-Match: *`
 * to register (never replace a tool of that name) and `If-Match` with the entity tag read when
 * the edit began (never overwrite another operator's change unseen; record-edit.js, as the
 * tool-service form does it). The registry's refusals are shown where they belong: each
 * problem+json `errors` entry under the field its `path` names, a `412` as a conflict to
 * resolve by reading the tool again.
 */
import { request } from './api.js';
import { clearFieldErrors, element, json, showFieldError } from './console-format.js';
import { RecordEdit, showProblemErrors } from './record-edit.js';

/** The form's own fields; any other path of the descriptor belongs to the JSON field. */
const OWN_FIELDS = ['name', 'description', 'scopes'];

/**
 * @typedef {{ mode: 'register' | 'edit', name?: string, token: () => string | null, onSaved: (name: string, created: boolean) => void }} EditorOptions
 */

export class ToolEditor {
  /** The edit's entity tag and its conflict. */
  #edit;
  /** @type {Map<string, { input: HTMLInputElement | HTMLTextAreaElement, error: HTMLElement }>} */
  #fields = new Map();

  /**
   * @param {HTMLElement} container  the form goes in here
   * @param {EditorOptions} options
   */
  constructor(container, options) {
    this.options = options;
    const prefix = options.mode === 'register' ? 'reg' : 'edit';
    this.prefix = prefix;
    this.form = /** @type {HTMLFormElement} */ (element('form', { id: `${prefix}-form`, class: 'editor', novalidate: '' }));
    if (options.mode === 'register') this.#addField('name', 'Name', 'input', 'Letters, digits, "_" or "-"; 1 to 64.');
    this.#addField('description', 'Description', 'textarea', 'What agents and their models read.');
    this.#addField(
      'scopes',
      'Scopes',
      'textarea',
      'One alternative per line; tokens of one alternative separated by spaces, all of them needed. None: anyone who may discover it.',
    );
    this.#addField(
      'rest',
      'Other fields (a JSON object)',
      'textarea',
      options.mode === 'register'
        ? 'For an HTTP tool: host, port, endpoint, parameters; for a message-bus tool: "type": "tool-service", service, arguments.'
        : 'The rest of the stored descriptor, as the registry gave it.',
      10,
    );
    this.submit = element('button', { type: 'submit', id: `${prefix}-save` }, options.mode === 'register' ? 'Register' : 'Save');
    this.form.append(this.submit);
    this.outcome = element('p', { id: `${prefix}-outcome`, class: 'outcome', role: 'status', 'aria-live': 'polite' });
    this.#edit = new RecordEdit({ id: `${prefix}-reread`, what: 'tool', reread: () => void this.open() });
    container.append(this.form, this.outcome, this.#edit.reread);
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#save();
    });
    if (options.mode === 'register') this.#value('rest', json({ host: '', port: 443, endpoint: '/', parameters: {} }));
  }

  /**
   * @param {string} key
   * @param {string} label
   * @param {'input' | 'textarea'} tag
   * @param {string} help
   * @param {number} [rows]
   */
  #addField(key, label, tag, help, rows = 3) {
    const id = `${this.prefix}-${key}`;
    const wrap = element('div', { class: 'field' });
    const input = /** @type {HTMLInputElement | HTMLTextAreaElement} */ (
      element(tag, {
        id,
        spellcheck: 'false',
        'aria-describedby': `${id}-help ${id}-error`,
        ...(tag === 'textarea' ? { rows: String(rows) } : { type: 'text' }),
      })
    );
    const error = element('p', { id: `${id}-error`, class: 'field-error', hidden: '' });
    wrap.append(element('label', { for: id }, label), input, element('p', { id: `${id}-help`, class: 'help' }, help), error);
    this.form.append(wrap);
    this.#fields.set(key, { input, error });
  }

  /**
   * @param {string} key
   * @param {string} [value]
   */
  #value(key, value) {
    const field = this.#fields.get(key);
    if (!field) return '';
    if (value !== undefined) field.input.value = value;
    return field.input.value;
  }

  /** Edit: reads the stored record and its entity tag, and fills the form from it. */
  async open() {
    if (this.options.mode !== 'edit') return;
    this.#clearErrors();
    const answer = await request('GET', `tools/${encodeURIComponent(this.options.name ?? '')}`, { token: this.options.token() });
    if (answer.status !== 200 || !answer.body?.descriptor) {
      this.#say('refused', `Could not read the tool to edit it (${answer.status}).`);
      return;
    }
    this.#edit.began(answer);
    const { name: _name, description, scopes, ...rest } = answer.body.descriptor;
    this.#value('description', description ?? '');
    this.#value('scopes', (scopes ?? []).join('\n'));
    this.#value('rest', json(rest));
    this.#say('', '');
  }

  async #save() {
    this.#clearErrors();
    /** @type {Record<string, unknown>} */
    let rest;
    try {
      rest = JSON.parse(this.#value('rest') || '{}');
      if (!rest || typeof rest !== 'object' || Array.isArray(rest)) throw new Error('must be a JSON object');
    } catch (err) {
      this.#fieldError('rest', err instanceof SyntaxError ? `not JSON: ${err.message}` : 'must be a JSON object');
      this.#say('refused', 'Not sent: the other fields are not a JSON object.');
      return;
    }
    const name = this.options.mode === 'register' ? this.#value('name').trim() : (this.options.name ?? '');
    const scopes = this.#value('scopes')
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '');
    const body = { ...rest, name, description: this.#value('description'), scopes };
    const answer = await request('PUT', `tools/${encodeURIComponent(name || '-')}`, {
      token: this.options.token(),
      body,
      headers: this.options.mode === 'register' ? { 'if-none-match': '*' } : this.#edit.headers,
    });
    if (answer.status === 200 || answer.status === 201) {
      this.#edit.saved(answer);
      this.#say('done', this.options.mode === 'register' ? `Registered ${name}.` : `Saved ${name}.`);
      this.options.onSaved(name, answer.status === 201);
      return;
    }
    const problem = answer.body && typeof answer.body === 'object' ? answer.body : {};
    if (answer.status === 412) {
      if (this.options.mode === 'edit') this.#edit.conflict(name, problem, (state, text) => this.#say(state, text));
      else this.#say('refused', `Not registered: a tool named ${name} exists already (${problem.detail ?? '412'}).`);
      return;
    }
    // Any path but the form's own fields is the JSON field's.
    showProblemErrors(
      problem,
      ([head = '']) => (OWN_FIELDS.includes(head) && this.#fields.has(head) ? head : 'rest'),
      (key, message, focus) => this.#fieldError(key, message, focus),
    );
    this.#say('refused', `Refused (${answer.status}): ${problem.detail ?? 'no detail'}`);
  }

  /**
   * @param {string} key
   * @param {string} message
   * @param {boolean} [focus]
   */
  #fieldError(key, message, focus = true) {
    showFieldError(this.#fields.get(key), message, focus);
  }

  #clearErrors() {
    clearFieldErrors(this.#fields.values());
  }

  /**
   * @param {string} state
   * @param {string} text
   */
  #say(state, text) {
    this.outcome.dataset['outcome'] = state;
    this.outcome.textContent = text;
  }
}
