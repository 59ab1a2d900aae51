// @ts-check
/**
 * Registering sources from the console (issue 34): forms for `PUT /mcp-servers/{id}`,
 * `PUT /openapi-sources/{id}` (the document pasted as text, or its documentUrl) and
 * `PUT /tool-services/{id}`. Each sends what its fields hold, leaving empty ones out so the
 * registry's defaults apply, and shows the registry's refusal where it belongs: each
 * problem+json `errors` entry under the field its dotted `path` names (the first focused), any
 * other path, and the detail, in the form's outcome.
 */
import { request } from './api.js';
import { clearFieldErrors, element, showFieldError } from './console-format.js';

/**
 * @typedef {object} FieldSpec
 * @property {string} key  the descriptor's field (`id` is the path's)
 * @property {string} label
 * @property {'text' | 'textarea' | 'select' | 'number' | 'lines'} type  `lines`: an array, one item a line
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
      { key: 'config-params', label: 'Config parameters', type: 'lines', help: 'One parameter name a line.' },
    ],
  },
];

export class SourceForm {
  /** @type {Map<string, { input: HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement, error: HTMLElement, spec: FieldSpec }>} */
  #fields = new Map();

  /**
   * @param {HTMLElement} container
   * @param {FormSpec} spec
   * @param {{ token: () => string | null, onSaved: () => void }} options
   */
  constructor(container, spec, options) {
    this.spec = spec;
    this.options = options;
    const titleId = `${spec.prefix}-form-title`;
    this.form = /** @type {HTMLFormElement} */ (
      element('form', { id: `${spec.prefix}-form`, class: 'editor', novalidate: '', 'aria-labelledby': titleId })
    );
    const fieldset = element('fieldset');
    fieldset.append(element('legend', { id: titleId }, spec.title));
    for (const field of spec.fields) fieldset.append(this.#field(field));
    const submit = element('button', { type: 'submit', id: `${spec.prefix}-save` }, `Register the ${spec.what}`);
    fieldset.append(submit);
    this.outcome = element('p', { id: `${spec.prefix}-outcome`, class: 'outcome', role: 'status', 'aria-live': 'polite' });
    this.form.append(fieldset);
    container.append(this.form, this.outcome);
    this.form.addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#save();
    });
  }

  /** @param {FieldSpec} spec */
  #field(spec) {
    const id = `${this.spec.prefix}-${spec.key}`;
    const wrap = element('div', { class: 'field' });
    const described = [spec.help ? `${id}-help` : '', `${id}-error`].filter(Boolean).join(' ');
    /** @type {HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement} */
    let input;
    if (spec.type === 'select') {
      input = /** @type {HTMLSelectElement} */ (element('select', { id, 'aria-describedby': described }));
      for (const option of spec.options ?? []) input.append(element('option', { value: option }, option));
    } else if (spec.type === 'textarea' || spec.type === 'lines') {
      input = /** @type {HTMLTextAreaElement} */ (
        element('textarea', { id, rows: spec.type === 'lines' ? '2' : '6', spellcheck: 'false', 'aria-describedby': described })
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
      else if (spec.type === 'lines')
        body[key] = value
          .split('\n')
          .map((line) => line.trim())
          .filter((line) => line !== '');
      else body[key] = value;
    }
    return body;
  }

  async #save() {
    this.#clearErrors();
    const id = this.#fields.get('id')?.input.value.trim() ?? '';
    if (id === '') {
      this.#fieldError('id', 'needed: the record is written at /' + this.spec.collection + '/{id}', true);
      this.#say('refused', 'Not sent: give the id.');
      return;
    }
    const answer = await request('PUT', `${this.spec.collection}/${encodeURIComponent(id)}`, {
      token: this.options.token(),
      body: this.#body(),
    });
    if (answer.status === 200 || answer.status === 201) {
      this.#say('done', `${answer.status === 201 ? 'Registered' : 'Replaced'} the ${this.spec.what} ${id}.`);
      this.options.onSaved();
      return;
    }
    const problem = answer.body && typeof answer.body === 'object' ? answer.body : {};
    const elsewhere = [];
    let first = true;
    for (const error of Array.isArray(problem.errors) ? problem.errors : []) {
      const path = String(error.path ?? '').replace(/^\//, '');
      const key = path.split(/[./]/)[0] ?? '';
      const message = String(error.message ?? 'invalid');
      if (this.#fields.has(key)) {
        this.#fieldError(key, path === key ? message : `${path}: ${message}`, first);
        first = false;
      } else elsewhere.push(path === '' ? message : `${path}: ${message}`);
    }
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
