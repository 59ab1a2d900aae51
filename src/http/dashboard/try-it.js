// @ts-check
/**
 * Try it: a form made from the tool's input schema (a field per property: text, a number, a
 * checkbox, a choice of the `enum`, JSON for objects and arrays) that calls the tool through the
 * registry (`POST /tools/{name}/invoke`) with the signed-in token or an agent's token pasted
 * here, and shows the answer as the agent gets it: the status, the time taken and the body, a
 * problem+json on refusal. The call carries `X-Registry-Console`, so the audit log records it
 * as the console's (`console.invoke`).
 */
import { request } from './api.js';
import { byId, describeType, element, json, ms } from './console-format.js';

/** Properties given their own field; a larger schema is edited as one JSON object. */
const MAX_FIELDS = 50;

/**
 * @typedef {{ name: string, schema: any, input: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement, kind: 'text' | 'number' | 'integer' | 'boolean' | 'enum' | 'json' }} Field
 */

export class TryIt {
  /** @type {Field[]} */
  #fields = [];
  /** Set when the schema is edited as a whole: the one JSON field. */
  /** @type {HTMLTextAreaElement | null} */
  #whole = null;

  /**
   * @param {string} name
   * @param {() => string | null} token  the signed-in token, read at each call
   */
  constructor(name, token) {
    this.name = name;
    this.token = token;
    byId('try-form').addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#call();
    });
    for (const id of ['as-mine', 'as-agent'])
      byId(id).addEventListener('change', () => {
        byId('agent-token-field').hidden = !(/** @type {HTMLInputElement} */ (byId('as-agent')).checked);
      });
  }

  /** @param {any} schema  the tool's input schema */
  setSchema(schema) {
    const fieldset = byId('try-fields');
    const legend = element('legend', {}, 'Arguments');
    const properties = schema && typeof schema.properties === 'object' && schema.properties ? Object.entries(schema.properties) : [];
    const required = new Set(Array.isArray(schema?.required) ? schema.required : []);
    this.#fields = [];
    this.#whole = null;
    if (properties.length > MAX_FIELDS || (properties.length === 0 && schema?.additionalProperties !== false)) {
      const id = 'arg-json';
      const area = /** @type {HTMLTextAreaElement} */ (
        element('textarea', { id, rows: '6', spellcheck: 'false', 'aria-describedby': `${id}-help` })
      );
      area.value = '{}';
      this.#whole = area;
      const wrap = element('div', { class: 'field' });
      wrap.append(
        element('label', { for: id }, 'Arguments as a JSON object'),
        area,
        element('p', { id: `${id}-help`, class: 'help' }, 'Sent as the body, as it is.'),
      );
      fieldset.replaceChildren(legend, wrap);
      return;
    }
    const rows = properties.map(([name, property], i) => this.#field(name, property, required.has(name), i));
    fieldset.replaceChildren(legend, ...(rows.length ? rows : [element('p', { class: 'muted' }, 'The tool takes no arguments.')]));
  }

  /**
   * @param {string} name
   * @param {any} property
   * @param {boolean} isRequired
   * @param {number} i
   */
  #field(name, property, isRequired, i) {
    const id = `arg-${i}`;
    const type = Array.isArray(property?.type) ? property.type.find((/** @type {string} */ t) => t !== 'null') : property?.type;
    const wrap = element('div', { class: type === 'boolean' ? 'choice' : 'field' });
    const label = element('label', { for: id }, name);
    if (isRequired) label.append(element('span', { class: 'req' }, ' (required)'));
    const helpId = `${id}-help`;
    const help = element('p', { id: helpId, class: 'help' }, [describeType(property), property?.description].filter(Boolean).join(' · '));
    /** @type {Field['input']} */
    let input;
    /** @type {Field['kind']} */
    let kind;
    if (Array.isArray(property?.enum) && property.enum.every((/** @type {unknown} */ v) => typeof v === 'string')) {
      kind = 'enum';
      input = /** @type {HTMLSelectElement} */ (element('select', { id, 'aria-describedby': helpId }));
      if (!isRequired) input.append(element('option', { value: '' }, '(not given)'));
      for (const v of property.enum) input.append(element('option', { value: v }, v));
    } else if (type === 'boolean') {
      kind = 'boolean';
      input = /** @type {HTMLInputElement} */ (element('input', { id, type: 'checkbox', 'aria-describedby': helpId }));
    } else if (type === 'number' || type === 'integer') {
      kind = type;
      input = /** @type {HTMLInputElement} */ (element('input', { id, type: 'text', inputmode: 'decimal', 'aria-describedby': helpId }));
    } else if (type === 'string') {
      kind = 'text';
      input = /** @type {HTMLInputElement} */ (element('input', { id, type: 'text', spellcheck: 'false', 'aria-describedby': helpId }));
    } else {
      kind = 'json';
      input = /** @type {HTMLTextAreaElement} */ (element('textarea', { id, rows: '3', spellcheck: 'false', 'aria-describedby': helpId }));
    }
    if (isRequired && kind !== 'boolean') input.setAttribute('aria-required', 'true');
    if (property?.default !== undefined && kind !== 'boolean' && kind !== 'enum')
      input.value = kind === 'json' ? json(property.default) : String(property.default);
    if (kind === 'boolean') {
      if (property?.default === true) /** @type {HTMLInputElement} */ (input).checked = true;
      // Unticked is sent as false only once someone touched it; untouched, it is left out.
      input.addEventListener('change', () => (input.dataset['touched'] = '1'));
    }
    this.#fields.push({ name, schema: property, input, kind });
    if (kind === 'boolean') wrap.append(input, label, help);
    else wrap.append(label, input, help);
    return wrap;
  }

  /**
   * The arguments from the form: empty fields are left out; a number or JSON that does not
   * parse is sent as the text it is, so the registry's own validation answers it, as an
   * agent's call would be answered.
   */
  #arguments() {
    if (this.#whole) {
      try {
        return JSON.parse(this.#whole.value);
      } catch {
        return this.#whole.value;
      }
    }
    /** @type {Record<string, unknown>} */
    const args = {};
    for (const { name, input, kind } of this.#fields) {
      if (kind === 'boolean') {
        if (/** @type {HTMLInputElement} */ (input).checked) args[name] = true;
        else if (input.dataset['touched']) args[name] = false;
        continue;
      }
      const text = input.value;
      if (text === '') continue;
      if (kind === 'number' || kind === 'integer') {
        const n = Number(text);
        args[name] = text.trim() !== '' && Number.isFinite(n) ? n : text;
      } else if (kind === 'json') {
        try {
          args[name] = JSON.parse(text);
        } catch {
          args[name] = text;
        }
      } else args[name] = text;
    }
    return args;
  }

  async #call() {
    const asAgent = /** @type {HTMLInputElement} */ (byId('as-agent')).checked;
    const token = asAgent ? /** @type {HTMLInputElement} */ (byId('agent-token')).value.trim() || null : this.token();
    const box = byId('try-result');
    const button = /** @type {HTMLButtonElement} */ (byId('try-form').querySelector('button[type="submit"]'));
    button.disabled = true;
    try {
      const answer = await request('POST', `tools/${encodeURIComponent(this.name)}/invoke`, {
        token,
        body: this.#arguments(),
        headers: { 'x-registry-console': '1' },
      });
      const ok = answer.status < 400;
      byId('try-result-title').textContent = ok ? 'Answer' : 'Refused: the problem as the agent gets it';
      box.dataset['outcome'] = ok ? 'ok' : 'refused';
      byId('try-status').textContent = `${answer.status}${ok ? '' : answer.body?.code ? ` ${answer.body.code}` : ''}`;
      byId('try-time').textContent =
        `${ms.format(answer.ms)} ms${ok && typeof answer.body?.durationMs === 'number' ? ` (the tool: ${ms.format(answer.body.durationMs)} ms)` : ''}`;
      byId('try-body').textContent = typeof answer.body === 'string' ? answer.body : json(answer.body);
    } catch (err) {
      box.dataset['outcome'] = 'refused';
      byId('try-result-title').textContent = 'Not sent';
      byId('try-status').textContent = '–';
      byId('try-time').textContent = '–';
      byId('try-body').textContent = err instanceof Error ? err.message : String(err);
    } finally {
      button.disabled = false;
      box.hidden = false;
    }
  }
}
