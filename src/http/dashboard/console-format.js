// @ts-check
/**
 * How the console writes the registry's facts: the scope rule, a tool's source, a JSON Schema as
 * an outline, masked credentials. Everything goes in with textContent: names, descriptions and
 * schemas are whatever their authors wrote.
 */
/**
 * An element with attributes and text, as charts.js makes them (not imported from there: that
 * would load uPlot, which the console does not draw with).
 * @param {string} tag
 * @param {Record<string, string>} [attributes]
 * @param {string} [text]
 */
export function element(tag, attributes = {}, text) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) el.setAttribute(name, value);
  if (text !== undefined) el.textContent = text;
  return el;
}

/** @param {string} id */
/** A message for the next page of this tab to show (a delete ends on the catalogue). */
export const FLASH_KEY = 'tool-registry.console.notice';

export const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));

export const count = new Intl.NumberFormat();
export const ms = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/**
 * A tool's `scopes` as the registry reads them (src/model/scope-rule.ts): any one entry grants
 * the tool, every token of an entry is needed. `["read:pets write:pets", "api_key"]` reads
 * `(read:pets AND write:pets) OR api_key`.
 * @param {string[]} scopes
 */
export function scopeRule(scopes) {
  if (scopes.length === 0) return 'none needed';
  const entries = scopes.map((entry) => entry.split(' ').filter((token) => token !== ''));
  return entries
    .map((tokens) => (tokens.length > 1 && entries.length > 1 ? `(${tokens.join(' AND ')})` : tokens.join(' AND ')))
    .join(' OR ');
}

/**
 * Where a tool comes from, from its admin record (`GET /tools/{name}` with the admin scope).
 * @param {any} record
 * @returns {{ key: string, label: string, type: string, id: string | null }}
 */
export function sourceOf(record) {
  const owner = typeof record?.owner === 'string' ? record.owner : '';
  const descriptor = record?.descriptor ?? {};
  if (owner.startsWith('openapi-source:')) {
    const id = owner.slice('openapi-source:'.length);
    return { key: owner, label: `OpenAPI source ${id}`, type: 'openapi-source', id };
  }
  if (record?.kind === 'mcp' && typeof descriptor.server === 'string')
    return { key: `mcp-server:${descriptor.server}`, label: `MCP server ${descriptor.server}`, type: 'mcp-server', id: descriptor.server };
  if (record?.kind === 'tool-service' && typeof descriptor.service === 'string')
    return {
      key: `tool-service:${descriptor.service}`,
      label: `tool service ${descriptor.service}`,
      type: 'tool-service',
      id: descriptor.service,
    };
  if (owner.startsWith('announcer:'))
    return { key: owner, label: `announced by ${owner.slice('announcer:'.length)}`, type: 'announcer', id: null };
  return { key: 'operator', label: 'registered by an operator', type: 'operator', id: null };
}

/** Keys whose values are secrets wherever they appear in what the console shows. */
const SECRET_KEY = /authori[sz]ation|token|secret|password|passwd|credential|api[-_]?key|cookie/i;
export const MASK = '••••••';

/**
 * A copy with secrets masked: values under secret-looking keys, and the user and password of URLs.
 * @param {unknown} value
 * @param {number} [depth]
 * @returns {unknown}
 */
export function masked(value, depth = 0) {
  if (depth > 20) return MASK;
  if (typeof value === 'string') return maskUrl(value);
  if (Array.isArray(value)) return value.map((item) => masked(item, depth + 1));
  if (value && typeof value === 'object') {
    /** @type {Record<string, unknown>} */
    const out = Object.create(null);
    for (const [key, item] of Object.entries(value))
      out[key] = SECRET_KEY.test(key) && item !== null && typeof item !== 'boolean' && !isSetMarker(item) ? MASK : masked(item, depth + 1);
    return out;
  }
  return value;
}

/** `credential: {set: true}`, the registry's own way of saying there is one without showing it. */
const isSetMarker = (/** @type {unknown} */ item) =>
  !!item && typeof item === 'object' && Object.keys(item).length === 1 && /** @type {any} */ (item).set === true;

/** @param {string} text */
function maskUrl(text) {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/@\s]*@/i.test(text)) return text;
  return text.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@\s]*@/i, `$1${MASK}@`);
}

/** @param {unknown} value */
export const json = (value) => JSON.stringify(value, null, 2);

/**
 * A form field's problem (problem+json `errors`, or the page's own check) shown under it: joined
 * to what it shows already, the input marked invalid for assistive technology, focused if asked.
 * @param {{ input: HTMLElement, error: HTMLElement } | undefined} field
 * @param {string} message
 * @param {boolean} focus
 */
export function showFieldError(field, message, focus) {
  if (!field) return;
  field.error.hidden = false;
  field.error.textContent = field.error.textContent ? `${field.error.textContent}; ${message}` : message;
  field.input.setAttribute('aria-invalid', 'true');
  if (focus) field.input.focus();
}

/**
 * Every field's problem cleared before a form is sent again.
 * @param {Iterable<{ input: HTMLElement, error: HTMLElement }>} fields
 */
export function clearFieldErrors(fields) {
  for (const { input, error } of fields) {
    error.hidden = true;
    error.textContent = '';
    input.removeAttribute('aria-invalid');
  }
}

/**
 * A JSON Schema as a nested list of its properties: name, type, whether required, description,
 * allowed values, default. Bounded: 6 levels, 200 properties.
 * @param {any} schema
 * @returns {HTMLElement}
 */
export function schemaOutline(schema) {
  const budget = { left: 200 };
  const list = outlineOf(schema, 0, budget);
  if (list) return list;
  return element('p', { class: 'muted' }, describeType(schema) === 'object' ? 'No arguments.' : `A value of type ${describeType(schema)}.`);
}

/**
 * @param {any} schema
 * @param {number} depth
 * @param {{ left: number }} budget
 * @returns {HTMLElement | null}
 */
function outlineOf(schema, depth, budget) {
  const properties = schema && typeof schema === 'object' ? schema.properties : undefined;
  if (!properties || typeof properties !== 'object' || depth > 5) return null;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const ul = element('ul', { class: 'schema' });
  for (const [name, property] of Object.entries(properties)) {
    if (budget.left-- <= 0) {
      ul.append(element('li', { class: 'muted' }, 'and more (see the JSON)'));
      break;
    }
    const li = element('li');
    li.append(element('code', { class: 'prop' }, name), ' ', element('span', { class: 'type' }, describeType(property)));
    li.append(' ', element('span', { class: required.has(name) ? 'req' : 'opt' }, required.has(name) ? 'required' : 'optional'));
    if (property && typeof property === 'object') {
      if (typeof property.description === 'string') li.append(element('p', { class: 'desc' }, property.description));
      if (Array.isArray(property.enum))
        li.append(element('p', { class: 'desc' }, `One of: ${property.enum.map((v) => JSON.stringify(v)).join(', ')}`));
      if (property.default !== undefined) li.append(element('p', { class: 'desc' }, `Default: ${JSON.stringify(property.default)}`));
      const nested = outlineOf(property.type === 'array' ? property.items : property, depth + 1, budget);
      if (nested) li.append(nested);
    }
    ul.append(li);
  }
  return ul;
}

/**
 * @param {any} schema
 * @returns {string}
 */
export function describeType(schema) {
  if (!schema || typeof schema !== 'object') return 'any';
  const type = Array.isArray(schema.type) ? schema.type.join(' or ') : typeof schema.type === 'string' ? schema.type : undefined;
  if (type === 'array') return `array of ${describeType(schema.items)}`;
  if (type) return type;
  for (const key of ['anyOf', 'oneOf']) if (Array.isArray(schema[key])) return schema[key].map(describeType).join(' or ');
  if (schema.properties) return 'object';
  return 'any';
}

/**
 * @param {HTMLElement} dl
 * @param {[string, string | Node][]} facts
 */
export function fillFacts(dl, facts) {
  dl.replaceChildren(
    ...facts.map(([term, value]) => {
      const div = element('div');
      div.append(element('dt', {}, term));
      const dd = element('dd');
      dd.append(value);
      div.append(dd);
      return div;
    }),
  );
}

/** @param {string} iso */
export const when = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/**
 * A delete button that asks first, without window.confirm: pressing it shows a second button,
 * "Really delete <name>", focused, and a "Keep it" button; only the second one acts.
 * @param {{ name: string, label?: string, onConfirm: () => Promise<void> | void }} options
 * @returns {HTMLElement}
 */
export function confirmingDelete({ name, label = 'Delete', onConfirm }) {
  const box = element('span', { class: 'confirm-delete' });
  const ask = element('button', { type: 'button', class: 'danger', 'aria-label': `${label} ${name}` }, label);
  const really = element('button', { type: 'button', class: 'danger', hidden: '' }, `Really delete ${name}`);
  const keep = element('button', { type: 'button', class: 'secondary', hidden: '' }, 'Keep it');
  /** @param {boolean} asking */
  const asking = (asking) => {
    ask.hidden = asking;
    really.hidden = !asking;
    keep.hidden = !asking;
  };
  ask.addEventListener('click', () => {
    asking(true);
    really.focus();
  });
  keep.addEventListener('click', () => {
    asking(false);
    ask.focus();
  });
  really.addEventListener('click', async () => {
    if (really.hasAttribute('disabled')) return;
    really.setAttribute('disabled', '');
    try {
      await onConfirm();
    } finally {
      really.removeAttribute('disabled');
      asking(false);
    }
  });
  box.append(ask, really, keep);
  return box;
}
