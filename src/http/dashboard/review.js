// @ts-check
/**
 * The review queue (issue 29): every upstream MCP server's pending changes, from
 * `GET /mcp-servers` and each server's `GET /mcp-servers/{id}/pending`, each with its diff from
 * the version agents are served, and Accept and Reject buttons that send its tool and digest.
 * Everything the upstream wrote (names, titles, descriptions, schemas) is hostile input: it is
 * written with textContent and attributes only. Items are kept by server, tool and digest
 * across refreshes, so a refresh moves no node that is still listed and focus stays where it is.
 */
import { ApiError, getJson, postJson } from './api.js';
import { element } from './charts.js';
import { diffElement, digestElement, shortDigest } from './review-diff.js';

/** Changes read per request, and shown at most: more are left to `tool-registry review`. */
const PAGE = 100;
const MAX_SHOWN = 200;

/**
 * @typedef {object} PendingChange
 * @property {string} tool
 * @property {string} upstreamName
 * @property {string} digest
 * @property {string | null} acceptedDigest
 * @property {'added' | 'changed'} change
 * @property {string} seenAt
 * @property {import('./review-diff.js').DiffOp[]} diff
 * @property {boolean} diffTruncated
 */

export class ReviewQueue {
  /** @type {Map<string, HTMLLIElement>} */
  #items = new Map();
  /** Loads started: only the latest one's answer is shown. */
  #generation = 0;
  /** @type {string | null} */
  #token = null;

  /**
   * @param {{ section: HTMLElement, heading: HTMLElement, list: HTMLElement, note: HTMLElement, outcome: HTMLElement, onReviewed: () => void, onUnauthorized: (error: ApiError) => void }} parts
   */
  constructor(parts) {
    this.parts = parts;
  }

  /** Signed out, or not an admin: nothing shown. */
  hide() {
    this.#generation += 1;
    this.#token = null;
    this.parts.section.hidden = true;
    this.#show([], 0);
    this.parts.outcome.textContent = '';
  }

  /**
   * A read failed (not a refusal of the token): the items stay, and the note says so.
   * @param {string} reason
   */
  failed(reason) {
    if (this.parts.section.hidden) return;
    this.parts.note.hidden = false;
    this.parts.note.textContent = `Could not read the review queue: ${reason}. Retrying at the next refresh.`;
  }

  /**
   * Reads the queue of every server and shows it. Throws the ApiError of a refused read (401,
   * 403) for the page to act on.
   * @param {string} token
   */
  async load(token) {
    const generation = ++this.#generation;
    this.#token = token;
    const { mcpServers } = await getJson('mcp-servers', token);
    /** @type {{ server: string, change: PendingChange }[]} */
    const entries = [];
    let pending = 0;
    for (const server of mcpServers) {
      const waiting = server.upstream?.pending ?? 0;
      pending += waiting;
      let after = '';
      while (waiting > 0 && entries.length < MAX_SHOWN) {
        const query = new URLSearchParams({ limit: String(Math.min(PAGE, MAX_SHOWN - entries.length)), ...(after !== '' && { after }) });
        const page = await getJson(`mcp-servers/${encodeURIComponent(server.id)}/pending?${query}`, token);
        for (const change of page.changes) entries.push({ server: server.id, change });
        if (page.next === null) break;
        after = page.next;
      }
    }
    if (generation !== this.#generation) return;
    this.parts.section.hidden = false;
    this.#show(entries, pending);
  }

  /**
   * @param {{ server: string, change: PendingChange }[]} entries
   * @param {number} pending
   */
  #show(entries, pending) {
    const { list } = this.parts;
    const wanted = entries.map((entry) => {
      const key = JSON.stringify([entry.server, entry.change.tool, entry.change.digest, entry.change.acceptedDigest]);
      return { key, item: this.#items.get(key) ?? this.#item(entry) };
    });
    const keep = new Set(wanted.map((w) => w.key));
    const focused = document.activeElement;
    /** @type {number | null} */
    let lostFocusAt = null;
    for (const [key, item] of this.#items) {
      if (keep.has(key)) continue;
      if (focused && item.contains(focused)) lostFocusAt = [...list.children].indexOf(item);
      item.remove();
      this.#items.delete(key);
    }
    // Only new items are inserted: nodes still listed stay put, so focus in them stays.
    wanted.forEach(({ key, item }, i) => {
      this.#items.set(key, item);
      if (list.children[i] !== item) list.insertBefore(item, list.children[i] ?? null);
    });
    if (lostFocusAt !== null) {
      const next = list.children[Math.min(lostFocusAt, list.children.length - 1)]?.querySelector('button');
      (next ?? this.parts.heading).focus();
    }
    const more = pending - entries.length;
    this.parts.note.hidden = entries.length > 0 && more <= 0;
    this.parts.note.textContent =
      entries.length === 0
        ? 'No change of an upstream MCP server waits for review.'
        : more > 0
          ? `${more} more pending: tool-registry review lists them all.`
          : '';
  }

  /**
   * @param {{ server: string, change: PendingChange }} entry
   * @returns {HTMLLIElement}
   */
  #item({ server, change }) {
    const item = /** @type {HTMLLIElement} */ (element('li', { class: 'review-item' }));
    const title = element('h3');
    title.append(element('code', {}, change.tool), ' ', element('span', { class: `badge ${change.change}` }, change.change));
    const about = element('p', { class: 'muted meta' });
    about.append(`Server ${server}, upstream name `, element('code', {}, change.upstreamName), ', digest ', digestElement(change.digest));
    if (change.acceptedDigest !== null) about.append(' (served now: ', digestElement(change.acceptedDigest), ')');
    about.append(`, seen ${new Date(change.seenAt).toLocaleString()}`);

    const actions = element('div', { class: 'actions' });
    const accept = element('button', { type: 'button', class: 'accept', 'aria-label': `Accept ${change.tool} from ${server}` }, 'Accept');
    const reject = element('button', { type: 'button', class: 'reject', 'aria-label': `Reject ${change.tool} from ${server}` }, 'Reject');
    accept.addEventListener('click', () => void this.#review('accept', server, change, item));
    reject.addEventListener('click', () => void this.#review('reject', server, change, item));
    actions.append(accept, reject);
    item.append(title, about, diffElement(change.diff, change.diffTruncated), actions);
    return item;
  }

  /**
   * @param {'accept' | 'reject'} verb
   * @param {string} server
   * @param {PendingChange} change
   * @param {HTMLLIElement} item
   */
  async #review(verb, server, change, item) {
    const token = this.#token;
    if (token === null || item.getAttribute('aria-busy') === 'true') return;
    item.setAttribute('aria-busy', 'true');
    const done = verb === 'accept' ? 'Accepted' : 'Rejected';
    try {
      await postJson(
        `mcp-servers/${encodeURIComponent(server)}/${verb}`,
        { changes: [{ tool: change.tool, digest: change.digest }] },
        token,
      );
      this.#say(
        verb === 'accept'
          ? `${done} ${change.tool} from ${server}: agents are served ${shortDigest(change.digest)} now.`
          : `${done} ${change.tool} from ${server}: agents keep the version they are served.`,
      );
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return this.parts.onUnauthorized(err);
      const detail = err instanceof ApiError ? err.message : 'network error';
      // The detail names the first change refused; the others, if any, are in `errors`.
      const fields =
        err instanceof ApiError ? err.errors.map((e) => e.message).filter((m) => typeof m === 'string' && !detail.includes(m)) : [];
      this.#say(`Not ${done.toLowerCase()}: ${detail}${fields.length ? ` (${fields.join('; ')})` : ''}`, true);
    } finally {
      item.removeAttribute('aria-busy');
    }
    // Accepted, rejected or refused: the queue as it is now, and the figures after the write.
    await this.load(token).catch(() => undefined);
    this.parts.onReviewed();
  }

  /**
   * @param {string} text
   * @param {boolean} [refused]
   */
  #say(text, refused = false) {
    this.parts.outcome.dataset['outcome'] = refused ? 'refused' : 'done';
    this.parts.outcome.textContent = text;
  }
}
