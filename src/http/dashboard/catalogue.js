// @ts-check
/**
 * The console's catalogue: `GET /` a page at a time (the registry's own `limit` and `cursor`),
 * or the registry's own search (`q`) and scope filter (`scope`); each row with the scope rule,
 * status and last-hour calls (`GET /stats?window=1h`). With the admin scope, each row's record
 * (`GET /tools/{name}`) adds its title and source; kind, source and status narrow the rows of
 * the page shown (the registry has no such filters).
 */
import { ApiError, getJson, registryUrl } from './api.js';
import { byId, count, element, scopeRule, sourceOf } from './console-format.js';
import { ToolEditor } from './tool-editor.js';

/** Records read at once for a page's rows: a page of 100 costs 100 small reads, six at a time. */
const RECORD_READS_AT_ONCE = 6;

/**
 * @typedef {{ notice: (text: string) => void, alert: (text: string | null) => void }} Messages
 */

export class Catalogue {
  /** @type {string | null} */
  #token = null;
  /** The cursors of the pages before the one shown (`''` for the first). */
  /** @type {string[]} */
  #previous = [];
  /** @type {string} */
  #cursor = '';
  /** @type {string | null} */
  #next = null;
  /** Whether the signed-in token reads the admin records. */
  #admin = false;
  /** Bumped on every load, so a slow answer of an older one is dropped. */
  #generation = 0;

  /** @param {Messages} messages */
  constructor(messages) {
    this.messages = messages;
    new ToolEditor(byId('register-box'), {
      mode: 'register',
      token: () => this.#token,
      onSaved: (name) => {
        messages.notice(`Registered ${name}.`);
        void this.#show();
      },
    });
    byId('filters').addEventListener('submit', (event) => {
      event.preventDefault();
      this.#previous = [];
      this.#cursor = '';
      void this.#show();
    });
    for (const id of ['f-kind', 'f-source', 'f-status']) byId(id).addEventListener('change', () => void this.#show(false));
    byId('page-next').addEventListener('click', () => {
      if (this.#next === null) return;
      this.#previous.push(this.#cursor);
      this.#cursor = this.#next;
      void this.#show();
    });
    byId('page-prev').addEventListener('click', () => {
      this.#cursor = this.#previous.pop() ?? '';
      void this.#show();
    });
    byId('page-first').addEventListener('click', () => {
      this.#previous = [];
      this.#cursor = '';
      void this.#show();
    });
  }

  /** @param {string | null} token */
  async load(token) {
    this.#token = token;
    this.#previous = [];
    this.#cursor = '';
    await this.#loadSources();
    await this.#show();
  }

  /** The Source filter's choices: the registry's tool services, MCP servers and OpenAPI sources (admin only). */
  async #loadSources() {
    const select = /** @type {HTMLSelectElement} */ (byId('f-source'));
    const chosen = select.value;
    /** @type {[string, string][]} */
    const options = [['operator', 'registered by an operator']];
    const lists = await Promise.all([
      getJson('tool-services', this.#token).catch(() => null),
      getJson('mcp-servers', this.#token).catch(() => null),
      getJson('openapi-sources', this.#token).catch(() => null),
    ]);
    this.#admin = lists.every((list) => list !== null);
    byId('register-panel').hidden = !this.#admin;
    const [services, servers, sources] = lists;
    for (const s of services?.toolServices ?? []) options.push([`tool-service:${s.id}`, `tool service ${s.id}`]);
    for (const s of servers?.mcpServers ?? []) options.push([`mcp-server:${s.id}`, `MCP server ${s.id}`]);
    for (const s of sources?.openApiSources ?? []) options.push([`openapi-source:${s.id}`, `OpenAPI source ${s.id}`]);
    select.replaceChildren(
      element('option', { value: '' }, 'any'),
      ...(this.#admin ? options : []).map(([value, label]) => element('option', { value }, label)),
    );
    select.value = options.some(([value]) => value === chosen) ? chosen : '';
    select.disabled = !this.#admin;
    select.title = this.#admin ? '' : 'Sign in with the admin scope to see sources';
  }

  /** @type {{ tools: any[], records: Map<string, any>, calls: Record<string, number> | null, nextCursor: string | null, searched: boolean } | null} */
  #page = null;

  /**
   * Reads the page (unless only the page-side filters changed) and shows it.
   * @param {boolean} [read]
   */
  async #show(read = true) {
    const generation = ++this.#generation;
    if (read || this.#page === null) {
      byId('catalogue').setAttribute('aria-busy', 'true');
      try {
        const page = await this.#read();
        if (generation !== this.#generation) return;
        this.#page = page;
      } catch (err) {
        if (generation !== this.#generation) return;
        byId('catalogue').removeAttribute('aria-busy');
        this.#page = null;
        byId('catalogue').querySelector('tbody')?.replaceChildren();
        byId('catalogue-summary').textContent =
          err instanceof ApiError && err.status === 401
            ? 'This registry lists its tools only to callers with a token: sign in.'
            : `Could not read the tools: ${err instanceof Error ? err.message : String(err)}`;
        this.#pager();
        return;
      }
      byId('catalogue').removeAttribute('aria-busy');
    }
    this.#render();
  }

  async #read() {
    const q = /** @type {HTMLInputElement} */ (byId('q')).value.trim();
    const scope = /** @type {HTMLInputElement} */ (byId('f-scope')).value.trim();
    const limit = /** @type {HTMLSelectElement} */ (byId('f-limit')).value;
    const query = new URLSearchParams({ limit });
    if (q !== '') query.set('q', q);
    else if (this.#cursor !== '') query.set('cursor', this.#cursor);
    if (scope !== '') query.set('scope', scope);
    const [page, stats] = await Promise.all([getJson(`?${query}`, this.#token), getJson('stats?window=1h', this.#token).catch(() => null)]);
    /** @type {any[]} */
    const tools = page.tools.filter((/** @type {any} */ tool) => tool.status !== 'deleted');
    /** @type {Map<string, any>} */
    const records = new Map();
    if (this.#admin) {
      const queue = [...tools];
      const worker = async () => {
        for (let tool = queue.shift(); tool; tool = queue.shift()) {
          const record = await getJson(`tools/${encodeURIComponent(tool.name)}`, this.#token).catch(() => null);
          if (record?.descriptor) records.set(tool.name, record);
        }
      };
      await Promise.all(Array.from({ length: RECORD_READS_AT_ONCE }, worker));
    }
    return { tools, records, calls: stats?.usage_by_tool ?? null, nextCursor: q === '' ? page.nextCursor : null, searched: q !== '' };
  }

  #render() {
    const page = this.#page;
    if (!page) return;
    const kind = /** @type {HTMLSelectElement} */ (byId('f-kind')).value;
    const source = /** @type {HTMLSelectElement} */ (byId('f-source')).value;
    const status = /** @type {HTMLSelectElement} */ (byId('f-status')).value;
    const rows = page.tools.filter((tool) => {
      if (kind !== '' && tool.kind !== kind) return false;
      if (status !== '' && tool.status !== status) return false;
      if (source !== '' && sourceOf(page.records.get(tool.name)).key !== source) return false;
      return true;
    });
    byId('catalogue')
      .querySelector('tbody')
      ?.replaceChildren(...rows.map((tool) => this.#row(tool, page.records.get(tool.name), page.calls)));
    const narrowed = rows.length !== page.tools.length ? ` (${count.format(rows.length)} after the kind, source and status filters)` : '';
    const pageNo = this.#previous.length + 1;
    byId('catalogue-summary').textContent = page.searched
      ? `${count.format(page.tools.length)} best match${page.tools.length === 1 ? '' : 'es'}${narrowed}.`
      : page.tools.length === 0
        ? 'No tools.'
        : `Page ${pageNo}: ${count.format(page.tools.length)} tools${narrowed}${page.nextCursor === null ? ', the last page' : ''}.`;
    this.#pager();
  }

  #pager() {
    const searched = this.#page?.searched ?? false;
    /** @type {HTMLButtonElement} */ (byId('page-next')).disabled = searched || (this.#page?.nextCursor ?? null) === null;
    this.#next = this.#page?.nextCursor ?? null;
    /** @type {HTMLButtonElement} */ (byId('page-prev')).disabled = searched || this.#previous.length === 0;
    /** @type {HTMLButtonElement} */ (byId('page-first')).disabled = searched || this.#previous.length === 0;
  }

  /**
   * @param {any} tool  a `PublicTool`
   * @param {any} record  its admin record, when read
   * @param {Record<string, number> | null} calls
   */
  #row(tool, record, calls) {
    const tr = element('tr', { 'data-tool': tool.name });
    const th = element('th', { scope: 'row' });
    th.append(element('a', { href: registryUrl(`dashboard/tools/${encodeURIComponent(tool.name)}`).pathname }, tool.name));
    tr.append(th);
    const title = record?.descriptor?.title;
    tr.append(element('td', {}, typeof title === 'string' ? title : '–'));
    tr.append(element('td', {}, tool.kind));
    tr.append(element('td', {}, record ? sourceOf(record).label : '–'));
    const scopes = element('td');
    scopes.append(element('code', { class: 'rule' }, scopeRule(tool.scopes)));
    tr.append(scopes);
    const status = element('td');
    status.append(element('span', { class: `badge status-${tool.status}` }, tool.status));
    if (tool.deprecation?.sunset) status.append(' ', element('span', { class: 'muted' }, `sunset ${tool.deprecation.sunset}`));
    tr.append(status);
    tr.append(element('td', { class: 'num' }, calls === null ? '–' : count.format(calls[tool.name] ?? 0)));
    return tr;
  }
}
