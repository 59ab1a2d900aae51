// @ts-check
/**
 * Registering sources from the console (issue 34): forms for `PUT /mcp-servers/{id}`,
 * `PUT /openapi-sources/{id}` (the document pasted as text, or its documentUrl) and
 * `PUT /tool-services/{id}`. Each sends what its fields hold, leaving empty ones out so the
 * registry's defaults apply, and shows the registry's refusal where it belongs: each
 * problem+json `errors` entry under the field its dotted `path` names (the first focused), any
 * other path, and the detail, in the form's outcome.
 *
 * A form in `edit` mode edits one stored record (a tool service, from its row): filled from
 * `GET /{collection}/{id}`, saved with `If-Match` and the entity tag read then, and a `412`
 * shown as a conflict with a button that reads the record again, as the tool editor does
 * (record-edit.js).
 */
import { request } from './api.js';
import { clearFieldErrors, element, showFieldError } from './console-format.js';
import { RecordEdit, showProblemErrors } from './record-edit.js';

/**
 * @typedef {object} FieldSpec
 * @property {string} key  the descriptor's field (`id` is the path's)
 * @property {string} label
 * @property {'text' | 'textarea' | 'select' | 'number' | 'lines' | 'params'} type  `lines`: an array, one item a line;
 *   `params`: config params, one a line, a name and, if every tool must give it, `required`
 * @property {string} [help]
 * @property {string[]} [options]  a select's choices; the first is the default
 * @property {boolean} [required]
 */
/**
 * @typedef {object} FormSpec
 * @property {string} prefix  of the form's element ids
 * @property {string} title
 * @property {string} collection  the route's collection: `mcp-servers`
 * @property {string} what  what it registers, for the outcome: `MCP server`
 * @property {FieldSpec[]} fields
 */

const POLICY = {
  key: 'policy',
  label: 'Policy',
  type: /** @type {const} */ ('select'),
  options: ['review', 'auto'],
  help: 'review: what the upstream adds or changes waits for an operator here; auto: served at once.',
};
const SCOPES = {
  key: 'scopes',
  label: 'Scopes',
  type: /** @type {const} */ ('lines'),
  help: 'Needed to see its tools: one alternative a line, tokens of one alternative separated by spaces.',
};
const ID = {
  key: 'id',
  label: 'Id',
  type: /** @type {const} */ ('text'),
  required: true,
  help: 'Letters, digits, "_", "." or "-"; 1 to 128.',
};

/** @type {FormSpec[]} */
export const FORMS = [
  {
    prefix: 'mcp',
    title: 'Upstream MCP server',
    collection: 'mcp-servers',
    what: 'MCP server',
    fields: [
      ID,
      { key: 'url', label: 'URL', type: 'text', required: true, help: "The server's Streamable HTTP endpoint." },
      { key: 'prefix', label: 'Prefix of its tools', type: 'text', help: 'Put before each tool name, e.g. "gh_".' },
      POLICY,
      SCOPES,
      { key: 'refreshIntervalS', label: 'Refresh interval (s)', type: 'number', help: 'Between reads of its tool list; 5 to 86400.' },
    ],
  },
  {
    prefix: 'oas',
    title: 'OpenAPI source',
    collection: 'openapi-sources',
    what: 'OpenAPI source',
    fields: [
      ID,
      { key: 'prefix', label: 'Prefix of its tools', type: 'text', required: true, help: 'Put before each operation id, e.g. "pets_".' },
      { key: 'documentUrl', label: 'Document URL', type: 'text', help: 'Read now and again on its interval; or paste the document below.' },
      { key: 'document', label: 'Document (JSON or YAML)', type: 'textarea', help: 'The OpenAPI 3 document itself, instead of a URL.' },
      { key: 'baseUrl', label: 'Base URL', type: 'text', help: "Where calls go, when the document's servers do not say." },
      POLICY,
      SCOPES,
    ],
  },
  {
    prefix: 'svc',
    title: 'Tool service (message bus)',
    collection: 'tool-services',
    what: 'tool service',
    fields: [
      ID,
      { key: 'topic', label: 'Topic', type: 'text', help: 'The local name of its request and response topics; or give both queues below.' },
      { key: 'request-queue', label: 'Request queue', type: 'text', help: 'A full Pulsar topic, when not derived from the topic.' },
      { key: 'response-queue', label: 'Response queue', type: 'text' },
      {
        key: 'config-params',
        label: 'Config parameters',
        type: 'params',
        help: 'One parameter name a line; add " required" after a name every tool on the service must give.',
      },
    ],
  },
];

/**
 * @typedef {object} FormOptions
 * @property {() => string | null} token
 * @property {() => void} onSaved
 * @property {'register' | 'edit'} [mode]  register (the default) a new record, or edit a stored one
 * @property {(id: string) => void} [onClose]  edit: the operator closed the form
 */

/** A field's value as the form shows it, from the stored descriptor's. */
function shown(/** @type {FieldSpec} */ spec, /** @type {unknown} */ value) {
  if (value === undefined || value === null) return '';
  if (spec.type === 'params' && Array.isArray(value))
    return value.map((p) => (typeof p === 'string' ? p : `${p?.name ?? ''}${p?.required ? ' required' : ''}`)).join('\n');
  if (spec.type === 'lines' && Array.isArray(value)) return value.join('\n');
  return typeof value === 'string' ? value : String(value);
}

/** @param {string} text  one item a line, blank lines left out */
const lines = (text) =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

export class SourceForm {
  /** @type {Map<string, { input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement, error: HTMLElement, spec: FieldSpec }>} */
  #fields = new Map();
  /** Edit: the record's id (the path's), and its entity tag and conflict. */
  #id = '';
  /** @type {RecordEdit | null} */
  #edit = null;

  /**
   * @param {HTMLElement} container
   * @param {FormSpec} spec
   * @param {FormOptions} options
   */
  constructor(container, spec, options) {
    this.spec = spec;
    this.options = options;
    this.editing = options.mode === 'edit';
    // An edit form's ids are its own: `svc-edit-topic` beside the register form's `svc-topic`.
    this.prefix = this.editing ? `${spec.prefix}-edit` : spec.prefix;
    this.container = container;
    const titleId = `${this.prefix}-form-title`;
    this.form = /** @type {HTMLFormElement} */ (
      element('form', { id: `${this.prefix}-form`, class: 'editor', novalidate: '', 'aria-labelledby': titleId })
    );
    const fieldset = element('fieldset');
    this.legend = element('legend', { id: titleId }, spec.title);
    fieldset.append(this.legend);
    // An edit keeps the id: it is the path the record is written at.
    for (const field of spec.fields) if (!(this.editing && field.key === 'id')) fieldset.append(this.#field(field));
    const submit = element(
      'button',
      { type: 'submit', id: `${this.prefix}-save` },
      `${this.editing ? 'Save' : 'Register'} the ${spec.what}`,
    );
    fieldset.append(submit);
    if (this.editing) {
      const close = element('button', { type: 'button', id: `${this.prefix}-close`, class: 'secondary' }, 'Close');
      close.addEventListener('click', () => this.close());
      fieldset.append(' ', close);
    }
    this.outcome = element('p', { id: `${this.prefix}-outcome`, class: 'outcome', role: 'status', 'aria-live': 'polite' });
    this.form.append(fieldset);
    container.append(this.form, this.outcome);
    if (this.editing) {
      this.#edit = new RecordEdit({ id: `${this.prefix}-reread`, what: spec.what, reread: () => void this.open(this.#id) });
      container.append(this.#edit.reread);
    }
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#save();
    });
  }

  /**
   * Edit: reads the stored record and its entity tag, fills the form from it, shows it and
   * focuses its first field.
   * @param {string} id
   */
  async open(id) {
    const edit = this.#edit;
    if (!edit) return;
    this.#id = id;
    this.#clearErrors();
    this.legend.textContent = `Edit the ${this.spec.what} ${id}`;
    this.container.hidden = false;
    const answer = await request('GET', `${this.spec.collection}/${encodeURIComponent(id)}`, { token: this.options.token() });
    if (answer.status !== 200 || !answer.body?.descriptor) {
      this.#say('refused', `Could not read the ${this.spec.what} ${id} to edit it (${answer.status}).`);
      return;
    }
    edit.began(answer);
    for (const [key, { input, spec }] of this.#fields) input.value = shown(spec, answer.body.descriptor[key]);
    this.#say('', '');
    this.#fields.values().next().value?.input.focus();
  }

  /** Edit: hides the form, for the page to put focus back where the edit began. */
  close() {
    this.container.hidden = true;
    this.options.onClose?.(this.#id);
  }

  /** @param {FieldSpec} spec */
  #field(spec) {
    const id = `${this.prefix}-${spec.key}`;
    const wrap = element('div', { class: 'field' });
    const described = [spec.help ? `${id}-help` : '', `${id}-error`].filter(Boolean).join(' ');
    /** @type {HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement} */
    let input;
    if (spec.type === 'select') {
      input = /** @type {HTMLSelectElement} */ (element('select', { id, 'aria-describedby': described }));
      for (const option of spec.options ?? []) input.append(element('option', { value: option }, option));
    } else if (spec.type === 'textarea' || spec.type === 'lines' || spec.type === 'params') {
      input = /** @type {HTMLTextAreaElement} */ (
        element('textarea', {
          id,
          rows: spec.type === 'textarea' ? '6' : spec.type === 'params' ? '3' : '2',
          spellcheck: 'false',
          'aria-describedby': described,
        })
      );
    } else {
      input = /** @type {HTMLInputElement} */ (
        element('input', {
          id,
          type: spec.type === 'number' ? 'number' : 'text',
          spellcheck: 'false',
          'aria-describedby': described,
          ...(spec.required && { 'aria-required': 'true' }),
        })
      );
    }
    const error = element('p', { id: `${id}-error`, class: 'field-error', hidden: '' });
    wrap.append(element('label', { for: id }, spec.required ? `${spec.label} (required)` : spec.label), input);
    if (spec.help) wrap.append(element('p', { id: `${id}-help`, class: 'help' }, spec.help));
    wrap.append(error);
    this.#fields.set(spec.key, { input, error, spec });
    return wrap;
  }

  /** The descriptor the fields describe: empty fields left out, for the registry's defaults. */
  #body() {
    /** @type {Record<string, unknown>} */
    const body = {};
    for (const [key, { input, spec }] of this.#fields) {
      if (key === 'id') continue;
      const value = input.value.trim();
      if (value === '') continue;
      if (spec.type === 'number') body[key] = Number(value);
      else if (spec.type === 'lines') body[key] = lines(value);
      // `name required`: a required param; anything else is sent as written, for the registry to judge.
      else if (spec.type === 'params')
        body[key] = lines(value).map((line) => {
          const [name = '', flag, ...more] = line.split(/\s+/);
          return flag === 'required' && more.length === 0 ? { name, required: true } : line;
        });
      else body[key] = value;
    }
    return body;
  }

  async #save() {
    this.#clearErrors();
    const edit = this.#edit;
    const id = edit ? this.#id : (this.#fields.get('id')?.input.value.trim() ?? '');
    if (id === '') {
      this.#fieldError('id', 'needed: the record is written at /' + this.spec.collection + '/{id}', true);
      this.#say('refused', 'Not sent: give the id.');
      return;
    }
    const answer = await request('PUT', `${this.spec.collection}/${encodeURIComponent(id)}`, {
      token: this.options.token(),
      body: this.#body(),
      ...(edit && { headers: edit.headers }),
    });
    if (answer.status === 200 || answer.status === 201) {
      edit?.saved(answer);
      this.#say('done', `${edit ? 'Saved' : answer.status === 201 ? 'Registered' : 'Replaced'} the ${this.spec.what} ${id}.`);
      this.options.onSaved();
      return;
    }
    const problem = answer.body && typeof answer.body === 'object' ? answer.body : {};
    if (edit && answer.status === 412) {
      edit.conflict(id, problem, (state, text) => this.#say(state, text));
      return;
    }
    const elsewhere = showProblemErrors(
      problem,
      ([head = '']) => (this.#fields.has(head) ? head : null),
      (key, message, focus) => this.#fieldError(key, message, focus),
    );
    this.#say(
      'refused',
      `Refused (${answer.status}): ${problem.detail ?? 'no detail'}${elsewhere.length ? ` (${elsewhere.join('; ')})` : ''}`,
    );
  }

  /**
   * @param {string} key
   * @param {string} message
   * @param {boolean} focus
   */
  #fieldError(key, message, focus) {
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
