// @ts-check
/**
 * The console's catalogue: `GET /` a page at a time (the registry's own `limit` and `cursor`),
 * or the registry's own search (`q`) and scope filter (`scope`); each row with the scope rule,
 * status and last-hour calls (`GET /stats?window=1h`). With the admin scope, each row's record
 * (`GET /tools/{name}`) adds its title and source. The registry has no kind, source or status
 * filter: with one of them set the console walks the registry's pages itself (its own cursor,
 * SCAN_PAGE tools a read) until it has a page of matching tools or reaches the end, at most
 * MAX_SCANNED tools a step, says how many it searched, and offers more from where it stopped
 * (a cursor and the tools of that page already seen). With a search, they narrow its results.
 */
import { ApiError, getJson, registryUrl } from './api.js';
import { byId, count, element, scopeRule, sourceOf } from './console-format.js';
import { ToolEditor } from './tool-editor.js';

/** Records read at once for a page's rows: a page of 100 costs 100 small reads, six at a time. */
const RECORD_READS_AT_ONCE = 6;
/** Tools read a request when walking for the kind and status filters; fewer with the source filter, which reads each one's record. */
const SCAN_PAGE = 500;
const SCAN_PAGE_WITH_RECORDS = 100;
/** Tools searched at most for one page of filtered tools (and records read at most, with the source filter). */
const MAX_SCANNED = 20_000;
const MAX_RECORDS_READ = 2_000;
/** Search results asked for when the page-side filters narrow them (the registry's largest page). */
const SEARCH_WITH_FILTERS = 1000;

/**
 * Where a page starts: the registry's cursor (`''` for the first page) and how many tools of
 * the registry's page at that cursor were shown already (a filtered walk stops mid-page).
 * @typedef {{ cursor: string, skip: number }} Position
 */
const START = /** @type {Position} */ ({ cursor: '', skip: 0 });
/**
 * @typedef {{ notice: (text: string) => void, alert: (text: string | null) => void }} Messages
 */

export class Catalogue {
  /** @type {string | null} */
  #token = null;
  /** Where the pages before the one shown start. */
  /** @type {Position[]} */
  #previous = [];
  /** @type {Position} */
  #position = START;
  /** @type {Position | null} */
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
      this.#position = START;
      void this.#show();
    });
    // The registry cannot narrow by these: each change walks its pages again from the first.
    for (const id of ['f-kind', 'f-source', 'f-status'])
      byId(id).addEventListener('change', () => {
        this.#previous = [];
        this.#position = START;
        void this.#show();
      });
    byId('page-next').addEventListener('click', () => {
      if (this.#next === null) return;
      this.#previous.push(this.#position);
      this.#position = this.#next;
      void this.#show();
    });
    byId('page-prev').addEventListener('click', () => {
      this.#position = this.#previous.pop() ?? START;
      void this.#show();
    });
    byId('page-first').addEventListener('click', () => {
      this.#previous = [];
      this.#position = START;
      void this.#show();
    });
  }

  /** @param {string | null} token */
  async load(token) {
    this.#token = token;
    this.#previous = [];
    this.#position = START;
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

  /**
   * @typedef {object} ShownPage
   * @property {any[]} tools  the rows, filtered
   * @property {Map<string, any>} records
   * @property {Record<string, number> | null} calls
   * @property {Position | null} next
   * @property {boolean} searched  the registry's search answered
   * @property {number | null} scanned  tools walked for the filters, null without them
   * @property {number} [unfiltered]  a search's results before the filters
   * @property {number} [matching]  and after them (the first `limit` shown)
   */
  /** @type {ShownPage | null} */
  #page = null;

  /** The kind, source and status filters, as chosen. */
  #filters() {
    const value = (/** @type {string} */ id) => /** @type {HTMLSelectElement} */ (byId(id)).value;
    return { kind: value('f-kind'), source: value('f-source'), status: value('f-status') };
  }

  /** Reads the page and shows it. */
  async #show() {
    const generation = ++this.#generation;
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
    this.#render();
  }

  /** @returns {Promise<ShownPage>} */
  async #read() {
    const q = /** @type {HTMLInputElement} */ (byId('q')).value.trim();
    const scope = /** @type {HTMLInputElement} */ (byId('f-scope')).value.trim();
    const limit = Number(/** @type {HTMLSelectElement} */ (byId('f-limit')).value);
    const filters = this.#filters();
    const filtered = filters.kind !== '' || filters.source !== '' || filters.status !== '';
    const stats = getJson('stats?window=1h', this.#token).catch(() => null);
    /** @type {Map<string, any>} */
    const records = new Map();
    if (q === '' && filtered) {
      const walked = await this.#walk(filters, scope, limit, records);
      await this.#readRecords(walked.tools, records);
      return { ...walked, records, calls: (await stats)?.usage_by_tool ?? null, searched: false };
    }
    const query = new URLSearchParams({ limit: String(q !== '' && filtered ? SEARCH_WITH_FILTERS : limit) });
    if (q !== '') query.set('q', q);
    else if (this.#position.cursor !== '') query.set('cursor', this.#position.cursor);
    if (scope !== '') query.set('scope', scope);
    const page = await getJson(`?${query}`, this.#token);
    /** @type {any[]} */
    const live = page.tools.filter((/** @type {any} */ tool) => tool.status !== 'deleted');
    // A search with filters: its results narrowed, the first `limit` of them shown.
    await this.#readRecords(filtered && filters.source === '' ? [] : live, records);
    const matching = filtered ? live.filter((tool) => this.#matches(tool, filters, records, false)) : live;
    const tools = matching.slice(0, limit);
    if (filtered) await this.#readRecords(tools, records);
    return {
      tools,
      records,
      calls: (await stats)?.usage_by_tool ?? null,
      next: q === '' && page.nextCursor !== null ? { cursor: page.nextCursor, skip: 0 } : null,
      searched: q !== '',
      scanned: null,
      ...(filtered && { unfiltered: live.length, matching: matching.length }),
    };
  }

  /**
   * Walks the registry's pages from the page's position until `limit` tools match the filters,
   * the end, or MAX_SCANNED tools (MAX_RECORDS_READ records) searched.
   * @param {{ kind: string, source: string, status: string }} filters
   * @param {string} scope
   * @param {number} limit
   * @param {Map<string, any>} records  filled with the records read
   * @returns {Promise<{ tools: any[], next: Position | null, scanned: number }>}
   */
  async #walk(filters, scope, limit, records) {
    const size = filters.source === '' ? SCAN_PAGE : SCAN_PAGE_WITH_RECORDS;
    /** @type {any[]} */
    const tools = [];
    let { cursor, skip } = this.#position;
    let scanned = 0;
    for (;;) {
      const query = new URLSearchParams({ limit: String(size) });
      if (cursor !== '') query.set('cursor', cursor);
      if (scope !== '') query.set('scope', scope);
      const page = await getJson(`?${query}`, this.#token);
      /** @type {any[]} */
      const rows = page.tools.slice(skip);
      if (filters.source !== '')
        await this.#readRecords(
          rows.filter((tool) => this.#matches(tool, filters, records, true)),
          records,
        );
      for (const [i, tool] of rows.entries()) {
        scanned += 1;
        if (!this.#matches(tool, filters, records, false)) continue;
        tools.push(tool);
        if (tools.length < limit) continue;
        // A page of them: the next one starts after this tool.
        const seen = skip + i + 1;
        if (seen < page.tools.length) return { tools, next: { cursor, skip: seen }, scanned };
        return { tools, next: page.nextCursor === null ? null : { cursor: page.nextCursor, skip: 0 }, scanned };
      }
      if (page.nextCursor === null) return { tools, next: null, scanned };
      cursor = page.nextCursor;
      skip = 0;
      if (scanned >= MAX_SCANNED || records.size >= MAX_RECORDS_READ) return { tools, next: { cursor, skip: 0 }, scanned };
    }
  }

  /**
   * Whether a tool passes the kind, source and status filters (`before`: whether it may, its
   * record unread, by what the source implies of its kind).
   * @param {any} tool
   * @param {{ kind: string, source: string, status: string }} filters
   * @param {Map<string, any>} records
   * @param {boolean} before
   */
  #matches(tool, { kind, source, status }, records, before) {
    if (tool.status === 'deleted') return false;
    if (kind !== '' && tool.kind !== kind) return false;
    if (status !== '' && tool.status !== status) return false;
    if (source === '') return true;
    const implied = source.startsWith('mcp-server:')
      ? 'mcp'
      : source.startsWith('tool-service:')
        ? 'tool-service'
        : source.startsWith('openapi-source:')
          ? 'http'
          : null;
    if (implied !== null && tool.kind !== implied) return false;
    return before || sourceOf(records.get(tool.name)).key === source;
  }

  /**
   * The admin records of these tools, six reads at a time (admins only; the rest see no source).
   * @param {any[]} tools
   * @param {Map<string, any>} records
   */
  async #readRecords(tools, records) {
    if (!this.#admin) return;
    const queue = tools.filter((tool) => !records.has(tool.name));
    const worker = async () => {
      for (let tool = queue.shift(); tool; tool = queue.shift()) {
        const record = await getJson(`tools/${encodeURIComponent(tool.name)}`, this.#token).catch(() => null);
        if (record?.descriptor) records.set(tool.name, record);
      }
    };
    await Promise.all(Array.from({ length: RECORD_READS_AT_ONCE }, worker));
  }

  #render() {
    const page = this.#page;
    if (!page) return;
    const rows = page.tools;
    byId('catalogue')
      .querySelector('tbody')
      ?.replaceChildren(...rows.map((tool) => this.#row(tool, page.records.get(tool.name), page.calls)));
    const pageNo = this.#previous.length + 1;
    const plural = (/** @type {number} */ n, /** @type {string} */ one, /** @type {string} */ many) =>
      `${count.format(n)} ${n === 1 ? one : many}`;
    byId('catalogue-summary').textContent = page.searched
      ? `${plural(page.unfiltered ?? rows.length, 'best match', 'best matches')}${
          page.unfiltered !== undefined
            ? `, ${count.format(page.matching ?? rows.length)} of them after the kind, source and status filters${
                (page.matching ?? 0) > rows.length ? `, the first ${count.format(rows.length)} shown` : ''
              }`
            : ''
        }.`
      : page.scanned !== null
        ? `${pageNo === 1 ? '' : `Page ${pageNo}: `}${plural(rows.length, 'tool matches', 'tools match')} the kind, source and status filters; searched ${plural(page.scanned, 'tool', 'tools')}${
            page.next === null ? ', to the end' : ', more after them'
          }.`
        : rows.length === 0
          ? 'No tools.'
          : `Page ${pageNo}: ${count.format(rows.length)} tools${page.next === null ? ', the last page' : ''}.`;
    this.#pager();
  }

  #pager() {
    const searched = this.#page?.searched ?? false;
    const next = /** @type {HTMLButtonElement} */ (byId('page-next'));
    next.disabled = searched || (this.#page?.next ?? null) === null;
    next.textContent = (this.#page?.scanned ?? null) !== null ? 'More matches' : 'Next page';
    this.#next = this.#page?.next ?? null;
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
