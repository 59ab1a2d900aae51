// @ts-check
/**
 * The sources and their review queue (issue 34): upstream MCP servers (`GET /mcp-servers`, each
 * with its connection state, last error, tool and pending counts) and OpenAPI sources
 * (`GET /openapi-sources`, with `refresh`: last read, last error, next read, pending), a "Read
 * again" button per source (`POST /openapi-sources/{id}/refresh`), and the pending changes of
 * both kinds (`GET .../{id}/pending`) with their diffs and Accept and Reject buttons
 * (`POST .../{id}/accept|reject` with the change's tool and digest). A change that moved after
 * the page read it is refused with a 409, whose detail is shown, and the queue read again.
 * Each MCP server, OpenAPI source and tool service (`GET /tool-services`) has a delete button
 * that asks first (`DELETE .../{id}`; a tool service a live tool names answers 409, shown); a
 * tool service has an edit button too, which opens the page's edit form (source-forms.js).
 * Everything an upstream wrote is hostile input: textContent and attributes only.
 */
import { ApiError, getJson, postJson, request } from './api.js';
import { byId, confirmingDelete, element, when } from './console-format.js';
import { diffElement, digestElement, shortDigest } from './review-diff.js';

/** Changes read per request, and shown at most per source: more are left to `tool-registry review`. */
const PAGE = 100;
const MAX_SHOWN = 200;

/** @typedef {'mcp-servers' | 'openapi-sources'} Kind */
/** @typedef {Kind | 'tool-services'} Collection */
const DELETED_WHAT = { 'mcp-servers': 'MCP server', 'openapi-sources': 'OpenAPI source', 'tool-services': 'tool service' };
/**
 * @typedef {object} PendingChange
 * @property {string} tool
 * @property {string} digest
 * @property {string | null} acceptedDigest
 * @property {'added' | 'changed'} change
 * @property {string} seenAt
 * @property {string} [upstreamName]  an MCP server's name of the tool
 * @property {string} [pointer]  an OpenAPI source's JSON pointer of the operation
 * @property {import('./review-diff.js').DiffOp[]} diff
 * @property {boolean} diffTruncated
 */
/** @typedef {{ kind: Kind, source: string, change: PendingChange }} Entry */

const KIND_NAME = { 'mcp-servers': 'server', 'openapi-sources': 'OpenAPI source' };

/** @param {string | null | undefined} iso */
const whenOrDash = (iso) => (iso ? when(iso) : '–');

/**
 * A table row of text cells, the first a row header.
 * @param {(string | Node)[]} cells
 * @param {Set<number>} [numeric]  indexes of right-aligned cells
 */
function row(cells, numeric = new Set()) {
  const tr = element('tr');
  cells.forEach((value, i) => {
    const cell = element(i === 0 ? 'th' : 'td', { ...(i === 0 && { scope: 'row' }), ...(numeric.has(i) && { class: 'num' }) });
    cell.append(value);
    tr.append(cell);
  });
  return tr;
}

export class SourceList {
  /** @type {string | null} */
  #token = null;
  /** Loads started: only the latest one's answer is shown. */
  #generation = 0;

  /**
   * @param {{ notice: (text: string) => void }} messages
   * @param {{ editService: (id: string) => void }} actions
   */
  constructor(messages, actions) {
    this.messages = messages;
    this.actions = actions;
    this.outcome = byId('review-outcome');
  }

  /** Signed out or not an admin: the sections hide, and the note says why. */
  hide(reason = '') {
    this.#generation += 1;
    for (const id of ['mcp-panel', 'openapi-panel', 'services-panel', 'queue-panel']) byId(id).hidden = true;
    const note = byId('sources-note');
    note.textContent = reason;
  }

  /**
   * Reads both lists and every source's pending changes, and shows them. Throws the ApiError of
   * a refused read (401, 403) for the page to act on.
   * @param {string} token
   */
  async load(token) {
    const generation = ++this.#generation;
    this.#token = token;
    const [{ mcpServers }, { openApiSources }, { toolServices }] = await Promise.all([
      getJson('mcp-servers', token),
      getJson('openapi-sources', token),
      getJson('tool-services', token),
    ]);
    /** @type {Entry[]} */
    const entries = [];
    for (const server of mcpServers) await this.#pendingOf('mcp-servers', server.id, server.upstream?.pending ?? 0, entries);
    for (const source of openApiSources) await this.#pendingOf('openapi-sources', source.id, source.refresh?.pending ?? 0, entries);
    if (generation !== this.#generation) return;
    this.#showServers(mcpServers);
    this.#showOpenApi(openApiSources);
    this.#showServices(toolServices);
    this.#showQueue(entries);
    byId('sources-note').textContent =
      `${mcpServers.length} MCP server${mcpServers.length === 1 ? '' : 's'}, ${openApiSources.length} OpenAPI source${openApiSources.length === 1 ? '' : 's'}, ${toolServices.length} tool service${toolServices.length === 1 ? '' : 's'}, ${entries.length} change${entries.length === 1 ? '' : 's'} pending.`;
  }

  /**
   * @param {Kind} kind
   * @param {string} id
   * @param {number} waiting
   * @param {Entry[]} entries
   */
  async #pendingOf(kind, id, waiting, entries) {
    let after = '';
    let shown = 0;
    while (waiting > 0 && shown < MAX_SHOWN) {
      const query = new URLSearchParams({ limit: String(Math.min(PAGE, MAX_SHOWN - shown)), ...(after !== '' && { after }) });
      const page = await getJson(`${kind}/${encodeURIComponent(id)}/pending?${query}`, this.#token);
      for (const change of page.changes) entries.push({ kind, source: id, change });
      shown += page.changes.length;
      if (page.next === null || page.changes.length === 0) break;
      after = page.next;
    }
  }

  /** @param {any[]} servers */
  #showServers(servers) {
    byId('mcp-panel').hidden = false;
    const body = /** @type {HTMLElement} */ (document.querySelector('#mcp-servers tbody'));
    body.replaceChildren(
      ...servers.map((server) => {
        const up = server.upstream;
        const tr = row(
          [
            element('code', {}, server.id),
            server.descriptor.url,
            up ? element('span', { class: `badge state-${up.state}` }, up.state) : '–',
            up?.lastError ?? '–',
            up ? String(up.tools) : '–',
            up ? String(up.pending) : '–',
            whenOrDash(up?.lastSyncAt),
            // The registry lists the tools again on this interval from the connection (and at once
            // on the server's list_changed): the interval, and the next time while connected.
            `${server.descriptor.refreshIntervalS ? `every ${server.descriptor.refreshIntervalS} s` : 'the default interval'}${
              up?.nextRefreshAt ? `, next ${whenOrDash(up.nextRefreshAt)}` : ''
            }`,
            server.descriptor.policy ?? 'review',
            this.#deleteButton('mcp-servers', server.id),
          ],
          new Set([4, 5]),
        );
        tr.dataset['source'] = server.id;
        return tr;
      }),
    );
    const note = byId('mcp-note');
    note.hidden = servers.length > 0;
    note.textContent = servers.length > 0 ? '' : 'No upstream MCP server is registered.';
  }

  /** @param {any[]} sources */
  #showOpenApi(sources) {
    byId('openapi-panel').hidden = false;
    const body = /** @type {HTMLElement} */ (document.querySelector('#openapi-sources tbody'));
    body.replaceChildren(
      ...sources.map((source) => {
        const refresh = source.refresh;
        const button = element('button', { type: 'button', class: 'secondary', 'aria-label': `Read again: ${source.id}` }, 'Read again');
        // A source given as a pasted document has nothing to read again.
        if (!source.descriptor.documentUrl) button.setAttribute('disabled', '');
        button.addEventListener('click', () => void this.#readAgain(source.id, button));
        const tr = row(
          [
            element('code', {}, source.id),
            `${source.title} ${source.version}`,
            String(source.tools.length),
            whenOrDash(refresh?.lastReadAt),
            refresh?.lastError ?? '–',
            whenOrDash(refresh?.nextReadAt),
            String(refresh?.pending ?? 0),
            button,
            this.#deleteButton('openapi-sources', source.id),
          ],
          new Set([2, 6]),
        );
        tr.dataset['source'] = source.id;
        return tr;
      }),
    );
    const note = byId('openapi-note');
    note.hidden = sources.length > 0;
    note.textContent = sources.length > 0 ? '' : 'No OpenAPI source is registered.';
  }

  /** @param {any[]} services */
  #showServices(services) {
    byId('services-panel').hidden = false;
    const body = /** @type {HTMLElement} */ (document.querySelector('#tool-services tbody'));
    body.replaceChildren(
      ...services.map((service) => {
        const d = service.descriptor ?? {};
        const params = Array.isArray(d['config-params']) ? d['config-params'] : [];
        const edit = element('button', { type: 'button', class: 'secondary edit', 'aria-label': `Edit ${service.id}` }, 'Edit');
        edit.addEventListener('click', () => this.actions.editService(service.id));
        const tr = row([
          element('code', {}, service.id),
          element('code', {}, String(d['request-queue'] ?? '–')),
          element('code', {}, String(d['response-queue'] ?? '–')),
          params.length === 0
            ? '–'
            : params.map((/** @type {any} */ p) => `${p?.name ?? ''}${p?.required ? ' (required)' : ''}`).join(', '),
          edit,
          this.#deleteButton('tool-services', service.id, JSON.stringify(service.descriptor ?? null)),
        ]);
        tr.dataset['source'] = service.id;
        return tr;
      }),
    );
    const note = byId('services-note');
    note.hidden = services.length > 0;
    note.textContent = services.length > 0 ? '' : 'No tool service is registered.';
  }

  /**
   * @param {Collection} collection
   * @param {string} id
   * @param {string} [listed]  a tool service's descriptor as the list showed it (JSON)
   */
  #deleteButton(collection, id, listed) {
    return confirmingDelete({ name: id, onConfirm: () => this.#delete(collection, id, listed) });
  }

  /**
   * `DELETE /{collection}/{id}`, then the lists as they are now; a refusal (a tool service in
   * use answers 409) is shown with its detail. A tool service is deleted only as the list showed
   * it: its record is read for its entity tag, compared with the listed descriptor, and the
   * delete is conditional on that tag (`If-Match`), so another operator's edit made since the
   * page read the list is never deleted unseen.
   * @param {Collection} collection
   * @param {string} id
   * @param {string} [listed]
   */
  async #delete(collection, id, listed) {
    const token = this.#token;
    if (token === null) return;
    const what = DELETED_WHAT[collection];
    const path = `${collection}/${encodeURIComponent(id)}`;
    const changed = `Not deleted: the ${what} ${id} changed after this page read it; the list now shows it as it is.`;
    try {
      /** @type {Record<string, string>} */
      const headers = {};
      if (listed !== undefined) {
        const current = await request('GET', path, { token });
        const etag = current.headers.get('etag');
        if (current.status !== 200 || etag === null || JSON.stringify(current.body?.descriptor ?? null) !== listed) {
          this.#say(current.status === 404 ? `Not deleted: the ${what} ${id} is gone already.` : changed, true);
          await this.load(token).catch(() => undefined);
          return;
        }
        headers['if-match'] = etag;
      }
      const answer = await request('DELETE', path, { token, headers });
      if (answer.status === 412) this.#say(changed, true);
      else if (answer.status >= 400) {
        const problem = answer.body && typeof answer.body === 'object' ? answer.body : {};
        this.#say(`Not deleted (${answer.status}): the ${what} ${id}: ${problem.detail ?? 'no detail'}`, true);
      } else this.#say(`Deleted the ${what} ${id}${collection === 'tool-services' ? '' : ' and its tools'}.`);
    } catch (err) {
      this.#say(`Not deleted: the ${what} ${id}: ${err instanceof Error ? err.message : 'network error'}`, true);
    }
    await this.load(token).catch(() => undefined);
    byId(collection === 'mcp-servers' ? 'mcp-title' : collection === 'openapi-sources' ? 'openapi-title' : 'services-title').focus();
  }

  /** @param {Entry[]} entries */
  #showQueue(entries) {
    byId('queue-panel').hidden = false;
    const list = byId('pending-queue');
    list.replaceChildren(...entries.map((entry) => this.#item(entry)));
    const note = byId('queue-note');
    note.hidden = entries.length > 0;
    note.textContent = entries.length > 0 ? '' : 'No change of an upstream waits for review.';
  }

  /** @param {Entry} entry */
  #item({ kind, source, change }) {
    const item = element('li', { class: 'review-item', 'data-tool': change.tool });
    const title = element('h3');
    title.append(element('code', {}, change.tool), ' ', element('span', { class: `badge ${change.change}` }, change.change));
    const about = element('p', { class: 'muted meta' });
    about.append(`${KIND_NAME[kind] === 'server' ? 'Server' : 'OpenAPI source'} ${source}, `);
    if (change.upstreamName !== undefined) about.append('upstream name ', element('code', {}, change.upstreamName), ', ');
    if (change.pointer !== undefined) about.append('operation ', element('code', {}, change.pointer), ', ');
    about.append('digest ', digestElement(change.digest));
    if (change.acceptedDigest !== null) about.append(' (served now: ', digestElement(change.acceptedDigest), ')');
    about.append(`, seen ${when(change.seenAt)}`);
    const actions = element('div', { class: 'actions' });
    for (const verb of /** @type {const} */ (['accept', 'reject'])) {
      const label = verb === 'accept' ? 'Accept' : 'Reject';
      const button = element('button', { type: 'button', class: verb, 'aria-label': `${label} ${change.tool} from ${source}` }, label);
      button.addEventListener('click', () => void this.#review(verb, { kind, source, change }, item));
      actions.append(button);
    }
    item.append(title, about, diffElement(change.diff, change.diffTruncated), actions);
    return item;
  }

  /**
   * @param {'accept' | 'reject'} verb
   * @param {Entry} entry
   * @param {HTMLElement} item
   */
  async #review(verb, { kind, source, change }, item) {
    const token = this.#token;
    if (token === null || item.getAttribute('aria-busy') === 'true') return;
    item.setAttribute('aria-busy', 'true');
    const done = verb === 'accept' ? 'Accepted' : 'Rejected';
    try {
      await postJson(`${kind}/${encodeURIComponent(source)}/${verb}`, { changes: [{ tool: change.tool, digest: change.digest }] }, token);
      this.#say(
        verb === 'accept'
          ? `${done} ${change.tool} from ${source}: agents are served ${shortDigest(change.digest)} now.`
          : `${done} ${change.tool} from ${source}: agents keep the version they are served.`,
      );
    } catch (err) {
      const detail = err instanceof ApiError ? err.message : 'network error';
      const status = err instanceof ApiError ? ` (${err.status})` : '';
      this.#say(`Not ${done.toLowerCase()}${status}: ${detail}`, true);
    }
    // Accepted, rejected or refused: the queue as it is now. The item is gone or redrawn, so
    // focus goes to the queue's heading rather than to the page's top.
    await this.load(token).catch(() => undefined);
    byId('queue-title').focus();
  }

  /**
   * @param {string} id
   * @param {HTMLElement} button
   */
  async #readAgain(id, button) {
    const token = this.#token;
    if (token === null || button.hasAttribute('disabled')) return;
    button.setAttribute('disabled', '');
    try {
      const result = await postJson(`openapi-sources/${encodeURIComponent(id)}/refresh`, {}, token);
      const pending = Array.isArray(result.pending) ? result.pending.length : 0;
      this.#say(
        `Read ${id} again: ${result.written?.length ?? 0} written, ${result.deleted?.length ?? 0} removed, ${pending} waiting for review, ${result.unchanged ?? 0} unchanged.`,
      );
    } catch (err) {
      this.#say(`Not read again (${err instanceof ApiError ? err.status : 'network'}): ${err instanceof Error ? err.message : ''}`, true);
    }
    await this.load(token).catch(() => undefined);
    byId('openapi-title').focus();
  }

  /**
   * @param {string} text
   * @param {boolean} [refused]
   */
  #say(text, refused = false) {
    if (!this.outcome) return;
    this.outcome.dataset['outcome'] = refused ? 'refused' : 'done';
    this.outcome.textContent = text;
    this.messages.notice(text);
  }
}
