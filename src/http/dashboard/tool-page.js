// @ts-check
/**
 * A tool's page in the console: the tool as an agent reads it (its discovery entry), its input
 * and output schemas as an outline and as JSON, the scope rule and what the signed-in token may
 * do with it, its source and where calls go (credentials masked), its usage over the last hour
 * and day (`GET /stats?window=`), its recent audit entries, Try it (try-it.js) and, for admins,
 * its deprecation (`PUT`/`DELETE /tools/{name}/deprecation`).
 */
import { ApiError, getJson, refusalOf, registryUrl, request } from './api.js';
import {
  byId,
  confirmingDelete,
  count,
  element,
  fillFacts,
  FLASH_KEY,
  json,
  masked,
  ms,
  scopeRule,
  schemaOutline,
  sourceOf,
  when,
} from './console-format.js';
import { ToolEditor } from './tool-editor.js';
import { TryIt } from './try-it.js';

const AUDIT_ROWS = 10;
const DEPRECATION_FIELDS = ['sunset', 'replacement', 'reason'];

/**
 * @typedef {{ notice: (text: string) => void, alert: (text: string | null) => void }} Messages
 */

export class ToolPage {
  /** @type {string | null} */
  #token = null;
  #tryIt;
  #editor;
  /** The entity tag of the record as the page read it: a delete sends it as If-Match. */
  #etag = '';

  /**
   * @param {string} name
   * @param {Messages} messages
   */
  constructor(name, messages) {
    this.name = name;
    this.messages = messages;
    byId('deprecate-form').addEventListener('submit', (event) => {
      event.preventDefault();
      void this.#deprecate();
    });
    byId('undeprecate').addEventListener('click', () => void this.#undeprecate());
    this.#tryIt = new TryIt(name, () => this.#token);
    this.#editor = new ToolEditor(byId('edit-box'), {
      mode: 'edit',
      name,
      token: () => this.#token,
      onSaved: () => {
        this.messages.notice(`Saved ${name}.`);
        void this.load(this.#token);
      },
    });
  }

  /** @param {string | null} token */
  async load(token) {
    this.#token = token;
    byId('tool-title').textContent = this.name;
    const path = `tools/${encodeURIComponent(this.name)}`;
    let first;
    try {
      const answer = await request('GET', path, { token });
      if (answer.status !== 200) throw refusalOf(answer);
      first = answer.body;
      this.#etag = answer.headers.get('etag') ?? '';
    } catch (err) {
      byId('tool-body').hidden = true;
      byId('tool-status').replaceChildren();
      const note = byId('tool-note');
      note.hidden = false;
      note.textContent =
        err instanceof ApiError && err.status === 404
          ? `No tool "${this.name}" that this ${token ? 'token' : 'anonymous visitor'} may see.${token ? '' : ' Sign in to see more.'}`
          : `Could not read the tool: ${err instanceof Error ? err.message : String(err)}`;
      return;
    }
    byId('tool-note').hidden = true;
    const record = first.descriptor ? first : null;
    const entry = record ? await this.#discoveryEntry(record) : first;
    byId('tool-body').hidden = false;
    this.#showStatus(entry, record);
    this.#showAgentView(entry);
    this.#showSchemas(entry);
    this.#tryIt.setSchema(entry.inputSchema ?? { type: 'object' });
    byId('deprecation-panel').hidden = record === null;
    if (record) this.#fillDeprecation(record);
    // Tools of an MCP server or an OpenAPI source, and announced ones, are written by their source alone.
    const editable = record !== null && record.owner === undefined && record.kind !== 'mcp';
    byId('edit-panel').hidden = !editable;
    byId('delete-panel').hidden = !editable;
    if (editable) {
      byId('delete-box').replaceChildren(confirmingDelete({ name: this.name, label: 'Delete tool', onConfirm: () => this.#delete() }));
      await this.#editor.open();
    }
    await Promise.all([this.#showAccess(entry), this.#showSource(record), this.#showUsage(), this.#showAudit(record !== null)]);
  }

  /**
   * The tool's discovery entry, which an admin's `GET /tools/{name}` does not give: found by
   * the registry's search (a tool named exactly `q` comes first), else made from the record.
   * @param {any} record
   */
  async #discoveryEntry(record) {
    const found = await getJson(`?${new URLSearchParams({ q: this.name, limit: '10' })}`, this.#token).catch(() => null);
    const entry = found?.tools?.find((/** @type {any} */ tool) => tool.name === this.name);
    if (entry) return entry;
    const d = record.descriptor;
    return {
      name: record.name,
      description: d.description ?? '',
      scopes: d.scopes ?? [],
      returns: d.returns,
      kind: record.kind,
      status: record.status,
      deprecation: record.deprecation,
      inputSchema: d.inputSchema,
      outputSchema: d.outputSchema,
    };
  }

  /**
   * @param {any} entry
   * @param {any} record
   */
  #showStatus(entry, record) {
    const status = byId('tool-status');
    const badge = element('span', { class: `badge status-${entry.status}` }, entry.status);
    const parts = [badge, ' ', element('span', {}, `${entry.kind} tool`)];
    const title = record?.descriptor?.title;
    if (typeof title === 'string') parts.push(element('span', {}, `, “${title}”`));
    const dep = entry.deprecation ?? record?.deprecation;
    if (dep) {
      const bits = [`deprecated since ${when(dep.since)}`];
      if (dep.sunset) bits.push(`sunset ${when(dep.sunset)}`);
      if (dep.replacement) bits.push(`use ${dep.replacement} instead`);
      if (dep.reason) bits.push(dep.reason);
      parts.push(element('span', { class: 'muted' }, ` — ${bits.join('; ')}`));
    }
    status.replaceChildren(...parts);
  }

  /** @param {any} entry */
  #showAgentView(entry) {
    /** @type {[string, string | Node][]} */
    const facts = [['Description', element('p', { class: 'prose' }, entry.description)]];
    if (typeof entry.returns === 'string' && entry.returns !== '') facts.push(['Returns', element('p', { class: 'prose' }, entry.returns)]);
    if (entry.endpoint) facts.push(['Called at', element('code', {}, `${entry.host}:${entry.port}${entry.endpoint}`)]);
    fillFacts(byId('agent-facts'), facts);
  }

  /** @param {any} entry */
  #showSchemas(entry) {
    byId('input-outline').replaceChildren(schemaOutline(entry.inputSchema ?? { type: 'object' }));
    byId('input-json').textContent = json(entry.inputSchema ?? { type: 'object' });
    const output = entry.outputSchema;
    byId('output-json-box').hidden = output === undefined;
    if (output === undefined) {
      byId('output-outline').replaceChildren(
        element(
          'p',
          { class: 'muted' },
          typeof entry.returns === 'string' && entry.returns !== '' ? `No output schema; returns: ${entry.returns}` : 'No output schema.',
        ),
      );
    } else {
      byId('output-outline').replaceChildren(schemaOutline(output));
      byId('output-json').textContent = json(output);
    }
  }

  /** @param {any} entry */
  async #showAccess(entry) {
    /** @type {[string, string | Node][]} */
    const facts = [
      ['Scope rule', element('code', { class: 'rule' }, scopeRule(entry.scopes ?? []))],
      [
        'Tokens that see it',
        (entry.scopes ?? []).length === 0
          ? 'every token'
          : 'those holding every scope of one alternative of the rule, and operators (the admin scope, STATS_READ_SCOPE)',
      ],
    ];
    // Asked, not guessed: what the registry answers a caller without a token (ANONYMOUS_DISCOVERY).
    const path = `tools/${encodeURIComponent(this.name)}`;
    const [anonymous, access] = await Promise.all([
      request('GET', path, { token: null }).catch(() => null),
      getJson(`${path}/access`, this.#token).catch(() => null),
    ]);
    if (anonymous)
      facts.push([
        'Anonymous visitors',
        anonymous.status === 200
          ? 'see it (they may not call it: calls need a token)'
          : `do not see it (${anonymous.status} without a token)`,
      ]);
    if (access)
      facts.push([
        'This token',
        `${access.decision === 'allow' ? 'may call it' : 'may not call it'}${access.reason ? `: ${access.reason}` : ''}`,
      ]);
    fillFacts(byId('access-facts'), facts);
  }

  /** @param {any} record */
  async #showSource(record) {
    const note = byId('source-note');
    if (!record) {
      fillFacts(byId('source-facts'), []);
      note.hidden = false;
      note.textContent = 'Sign in with the admin scope to see where the tool comes from and where its calls go.';
      return;
    }
    note.hidden = true;
    const source = sourceOf(record);
    /** @type {[string, string | Node][]} */
    const facts = [['Source', source.label]];
    const d = record.descriptor;
    if (record.kind === 'http') {
      const target = d.url ?? `${d.protocol ?? 'http'}://${d.host}:${d.port}${d.endpoint ?? ''}`;
      facts.push(['Calls go to', element('code', {}, String(masked(`${d.method ? `${d.method} ` : ''}${target}`)))]);
    }
    const upstream =
      source.type === 'mcp-server'
        ? `mcp-servers/${encodeURIComponent(source.id ?? '')}`
        : source.type === 'tool-service'
          ? `tool-services/${encodeURIComponent(source.id ?? '')}`
          : source.type === 'openapi-source'
            ? `openapi-sources/${encodeURIComponent(source.id ?? '')}`
            : null;
    if (upstream) {
      const read = await getJson(upstream, this.#token).catch(() => null);
      const u = read?.descriptor;
      if (source.type === 'mcp-server' && u) facts.push(['Calls go to', element('code', {}, `MCP server at ${String(masked(u.url))}`)]);
      if (source.type === 'tool-service' && u)
        facts.push(['Calls go to', element('code', {}, `message bus: ${u['request-queue'] ?? source.id}`)]);
      if (source.type === 'openapi-source' && read)
        facts.push(
          ['Document', `${read.title} ${read.version}`],
          ['Base URL', element('code', {}, String(masked(u?.baseUrl ?? u?.url ?? '')))],
        );
      const credential = u?.credential ?? read?.credential;
      if (credential) facts.push(['Credential', element('code', {}, json(masked(credential)))]);
    }
    const descriptor = element('pre', { class: 'json', tabindex: '0' }, json(masked(d)));
    const box = element('details');
    box.append(element('summary', {}, 'The stored descriptor, credentials masked'), descriptor);
    facts.push(['Descriptor', box]);
    fillFacts(byId('source-facts'), facts);
  }

  async #showUsage() {
    const windows = await Promise.all(['1h', '24h'].map((w) => getJson(`stats?window=${w}`, this.#token).catch(() => null)));
    const note = byId('usage-note');
    const tbody = /** @type {HTMLTableElement} */ (byId('usage')).tBodies[0];
    if (windows.every((w) => w === null)) {
      tbody?.replaceChildren();
      note.hidden = false;
      note.textContent = 'Sign in with an operator token (the admin scope, or STATS_READ_SCOPE) to see usage.';
      return;
    }
    note.hidden = true;
    tbody?.replaceChildren(
      ...windows.map((stats, i) => {
        const tr = element('tr');
        tr.append(element('th', { scope: 'row' }, i === 0 ? 'Last hour' : 'Last 24 hours'));
        const latency = stats?.latency_ms_by_tool?.[this.name];
        const cells = [
          stats ? count.format(stats.usage_by_tool?.[this.name] ?? 0) : '–',
          latency ? ms.format(latency.p50) : '–',
          latency ? ms.format(latency.p95) : '–',
          latency ? ms.format(latency.p99) : '–',
          latency ? `${count.format(latency.samples)} calls` : '–',
        ];
        for (const cell of cells) tr.append(element('td', { class: 'num' }, cell));
        return tr;
      }),
    );
  }

  /** @param {boolean} admin */
  async #showAudit(admin) {
    const note = byId('tool-audit-note');
    const tbody = /** @type {HTMLTableElement} */ (byId('tool-audit')).tBodies[0];
    const page = admin
      ? await getJson(`audit?${new URLSearchParams({ target: this.name, limit: String(AUDIT_ROWS) })}`, this.#token).catch(() => null)
      : null;
    if (!page) {
      tbody?.replaceChildren();
      note.hidden = false;
      note.textContent = 'Sign in with a token holding the admin scope to see the audit log.';
      return;
    }
    note.hidden = page.entries.length > 0;
    note.textContent = 'No audit entry names this tool.';
    tbody?.replaceChildren(
      ...page.entries.map((/** @type {any} */ e) => {
        const tr = element('tr');
        tr.append(element('th', { scope: 'row' }, when(e.at)));
        for (const cell of [e.sub ?? '(anonymous)', e.action, e.outcome]) tr.append(element('td', {}, cell));
        tr.append(element('td', { class: 'num' }, String(e.status)), element('td', {}, e.detail ?? ''));
        return tr;
      }),
    );
  }

  /** `DELETE /tools/{name}` with If-Match; done, back to the catalogue, which says so. */
  async #delete() {
    const outcome = byId('delete-outcome');
    let answer;
    try {
      answer = await request('DELETE', `tools/${encodeURIComponent(this.name)}`, {
        token: this.#token,
        headers: { 'if-match': this.#etag || '*' },
      });
    } catch (err) {
      outcome.dataset['outcome'] = 'refused';
      outcome.textContent = `Not sent: ${err instanceof Error ? err.message : String(err)}`;
      return;
    }
    if (answer.status === 200) {
      sessionStorage.setItem(FLASH_KEY, `Deleted ${this.name}.`);
      location.assign(registryUrl('dashboard/tools'));
      return;
    }
    const problem = answer.body && typeof answer.body === 'object' ? answer.body : {};
    outcome.dataset['outcome'] = 'refused';
    if (answer.status === 412) {
      outcome.textContent = `Conflict: someone changed ${this.name} after this page read it, so nothing was deleted (${problem.detail ?? '412'}). Read the tool again to see their change.`;
      const reread = element('button', { type: 'button', id: 'delete-reread', class: 'secondary' }, 'Read the tool again');
      reread.addEventListener('click', () => {
        outcome.textContent = '';
        void this.load(this.#token);
      });
      byId('delete-box').replaceChildren(reread);
      reread.focus();
      return;
    }
    outcome.textContent = `Refused (${answer.status}): ${problem.detail ?? 'no detail'}`;
  }

  /** @param {any} record */
  #fillDeprecation(record) {
    const dep = record.deprecation;
    /** @type {HTMLInputElement} */ (byId('dep-sunset')).value = dep?.sunset ? dep.sunset.slice(0, 16) : '';
    /** @type {HTMLInputElement} */ (byId('dep-replacement')).value = dep?.replacement ?? '';
    /** @type {HTMLInputElement} */ (byId('dep-reason')).value = dep?.reason ?? '';
    byId('deprecate').textContent = dep ? 'Update the deprecation' : 'Deprecate';
    byId('undeprecate').hidden = !dep;
  }

  async #deprecate() {
    const value = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ (byId(id)).value.trim();
    /** @type {Record<string, string>} */
    const body = {};
    // The field is UTC by its label: a datetime-local value has no zone.
    if (value('dep-sunset') !== '')
      body['sunset'] = `${value('dep-sunset').length === 16 ? `${value('dep-sunset')}:00` : value('dep-sunset')}Z`;
    if (value('dep-replacement') !== '') body['replacement'] = value('dep-replacement');
    if (value('dep-reason') !== '') body['reason'] = value('dep-reason');
    await this.#writeDeprecation('PUT', body, 'Deprecated');
  }

  async #undeprecate() {
    await this.#writeDeprecation('DELETE', undefined, 'Lifted the deprecation of');
  }

  /**
   * @param {'PUT' | 'DELETE'} method
   * @param {Record<string, string> | undefined} body
   * @param {string} done
   */
  async #writeDeprecation(method, body, done) {
    const outcome = byId('deprecation-outcome');
    for (const field of DEPRECATION_FIELDS) showFieldError(field, null);
    let answer;
    try {
      answer = await request(method, `tools/${encodeURIComponent(this.name)}/deprecation`, { token: this.#token, ...(body && { body }) });
    } catch (err) {
      outcome.dataset['outcome'] = 'refused';
      outcome.textContent = `Not sent: ${err instanceof Error ? err.message : String(err)}`;
      return;
    }
    if (answer.status >= 400) {
      const problem = answer.body && typeof answer.body === 'object' ? answer.body : {};
      outcome.dataset['outcome'] = 'refused';
      outcome.textContent = `Refused (${answer.status}): ${problem.detail ?? 'no detail'}`;
      let focused = false;
      for (const error of Array.isArray(problem.errors) ? problem.errors : []) {
        const field =
          String(error.path ?? '')
            .replace(/^\//, '')
            .split('/')[0] ?? '';
        if (!DEPRECATION_FIELDS.includes(field)) continue;
        showFieldError(field, String(error.message ?? 'invalid'));
        if (!focused) byId(`dep-${field}`).focus();
        focused = true;
      }
      return;
    }
    outcome.dataset['outcome'] = 'done';
    outcome.textContent = `${done} ${this.name}.`;
    this.messages.notice(`${done} ${this.name}.`);
    await this.load(this.#token);
  }
}

/**
 * @param {string} field
 * @param {string | null} message
 */
function showFieldError(field, message) {
  const input = byId(`dep-${field}`);
  const error = byId(`dep-${field}-error`);
  error.hidden = message === null;
  error.textContent = message ?? '';
  if (message === null) input.removeAttribute('aria-invalid');
  else input.setAttribute('aria-invalid', 'true');
}
