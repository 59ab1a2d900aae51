// @ts-check
/**
 * The dashboard: figures from `GET /stats` and `GET /readyz` refreshed on a timer and whenever
 * the change feed reports a write, recent audit entries and the review queue of upstream MCP
 * servers' tools (review.js) for admins, and sign-in by pasting a bearer token. Every figure is written with textContent: tool names and subjects are user input.
 */
import { ApiError, ChangeFeed, getJson, session } from './api.js';
import { BarChart, MAX_BARS, TimeChart, element } from './charts.js';
import { ReviewQueue } from './review.js';
import { showSession as signedInAs, wireSignIn } from './sign-in.js';

/** @param {string} id */
const byId = (id) => /** @type {HTMLElement} */ (document.getElementById(id));
const count = new Intl.NumberFormat();
const ms = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

const ERROR_CLASSES = ['denied', 'service-error', 'timeout', 'unavailable', 'cancelled'];
const KINDS = ['http', 'tool-service', 'mcp'];
const AUDIT_ROWS = 12;
const CHANGES_KEPT = 15;
/** Points of the activity chart: ten minutes at the 5 s default. */
const ACTIVITY_POINTS = 120;

const charts = {
  activity: new TimeChart(byId('chart-activity'), {
    title: 'Calls per second, and refused or failed calls per second, at each refresh',
    firstColumn: 'Time',
    series: [
      { label: 'calls/s', color: '--series-1' },
      { label: 'refused or failed/s', color: '--series-err' },
    ],
    unit: 'per second',
    empty: 'The rates appear from the second refresh on.',
  }),
  usage: new BarChart(byId('chart-usage'), {
    title: `Calls per tool (the ${MAX_BARS} most called)`,
    firstColumn: 'Tool',
    series: [{ label: 'calls', color: '--series-1' }],
    unit: 'calls',
    empty: 'No tool has been called through the registry yet.',
  }),
  latency: new BarChart(byId('chart-latency'), {
    title: `Call duration percentiles in milliseconds (the ${MAX_BARS} most called tools)`,
    firstColumn: 'Tool',
    series: [
      { label: 'p99', color: '--series-3', width: 0.75 },
      { label: 'p95', color: '--series-2', width: 0.5 },
      { label: 'p50', color: '--series-1', width: 0.25 },
    ],
    unit: 'ms',
    empty: 'No call durations yet.',
  }),
  errors: new BarChart(byId('chart-errors'), {
    title: 'Refused or failed calls by class',
    firstColumn: 'Class',
    series: [{ label: 'calls', color: '--series-err' }],
    unit: 'calls',
    empty: 'No call was refused or failed.',
  }),
  kinds: new BarChart(byId('chart-kinds'), {
    title: 'Tools by kind',
    firstColumn: 'Kind',
    series: [{ label: 'tools', color: '--series-2' }],
    unit: 'tools',
    empty: 'No tools are registered.',
  }),
};

/**
 * @param {string} name
 * @param {string | number} value
 */
function setStat(name, value) {
  const el = document.querySelector(`[data-stat="${name}"]`);
  if (el && el.textContent !== String(value)) el.textContent = String(value);
}

/**
 * @param {string} id
 * @param {(string | number)[][]} rows  the first cell of each is the row's header
 */
function fillTable(id, rows) {
  const body = /** @type {HTMLTableElement} */ (byId(id)).tBodies[0];
  body?.replaceChildren(
    ...rows.map((row) => {
      const tr = element('tr');
      row.forEach((cell, i) =>
        tr.append(
          element(
            i === 0 ? 'th' : 'td',
            i === 0 ? { scope: 'row' } : typeof cell === 'number' ? { class: 'num' } : {},
            typeof cell === 'number' ? count.format(cell) : cell,
          ),
        ),
      );
      return tr;
    }),
  );
}

/**
 * @param {string} id
 * @param {string | null} text  null hides it
 */
function note(id, text) {
  const el = byId(id);
  el.hidden = text === null;
  el.textContent = text ?? '';
}

/** @param {Record<string, number>} record */
const sum = (record) => Object.values(record).reduce((a, b) => a + b, 0);

/**
 * @param {string[]} names
 * @param {(name: string) => string} figure
 */
function listed(names, figure) {
  const shown = names.slice(0, 5).map((n) => `${n} ${figure(n)}`);
  return names.length > 5 ? `${shown.join(', ')}, and ${names.length - 5} more in the table` : shown.join(', ');
}

// -------------------------------------------------------------------------------------------
// Figures

/** @type {{ at: number, calls: number, errors: number } | null} */
let previous = null;

/** @param {any} stats  a `Stats` answer */
function showStats(stats) {
  const errors = sum(stats.errors_by_class);
  for (const name of ['total_tools', 'total_tool_services', 'registry_index', 'total_tool_calls']) setStat(name, count.format(stats[name]));
  setStat('errors', count.format(errors));
  setStat('most_used_tool', stats.most_used_tool ?? '–');

  const now = Date.now() / 1000;
  if (previous && now - previous.at > 0.2) {
    const seconds = now - previous.at;
    const rates = [Math.max(0, stats.total_tool_calls - previous.calls) / seconds, Math.max(0, errors - previous.errors) / seconds];
    charts.activity.push(
      now,
      rates,
      ACTIVITY_POINTS,
      ([calls = 0, failed = 0]) => `latest ${calls.toFixed(2)} calls per second and ${failed.toFixed(2)} refused or failed per second`,
    );
  }
  if (!previous || now - previous.at > 0.2) previous = { at: now, calls: stats.total_tool_calls, errors };

  // Tool names are user input: looked up in Maps, never as keys of a plain object.
  /** @type {Map<string, number>} */
  const usage = new Map(Object.entries(stats.usage_by_tool));
  /** @type {Map<string, { p50: number, p95: number, p99: number }>} */
  const latencies = new Map(Object.entries(stats.latency_ms_by_tool));
  const busiest = [...usage].sort((a, b) => b[1] - a[1]).slice(0, MAX_BARS);
  charts.usage.update(
    busiest.map(([tool]) => tool),
    [busiest.map(([, n]) => n)],
    listed(
      busiest.map(([tool]) => tool),
      (tool) => `${count.format(usage.get(tool) ?? 0)} calls`,
    ),
    busiest.map(([tool, n]) => [tool, count.format(n)]),
  );

  const latency = busiest.flatMap(([tool]) => {
    const l = latencies.get(tool);
    return l ? [/** @type {const} */ ([tool, l])] : [];
  });
  charts.latency.update(
    latency.map(([tool]) => tool),
    [latency.map(([, l]) => l.p99), latency.map(([, l]) => l.p95), latency.map(([, l]) => l.p50)],
    listed(
      latency.map(([tool]) => tool),
      (tool) => `p50 ${ms.format(latencies.get(tool)?.p50 ?? 0)} ms, p99 ${ms.format(latencies.get(tool)?.p99 ?? 0)} ms`,
    ),
    latency.map(([tool, l]) => [tool, ms.format(l.p99), ms.format(l.p95), ms.format(l.p50)]),
  );

  const classes = ERROR_CLASSES.filter((c) => (stats.errors_by_class[c] ?? 0) > 0);
  charts.errors.update(
    ERROR_CLASSES,
    [ERROR_CLASSES.map((c) => stats.errors_by_class[c] ?? 0)],
    listed(classes, (c) => count.format(stats.errors_by_class[c])),
    classes.map((c) => [c, count.format(stats.errors_by_class[c])]),
  );

  const kinds = KINDS.filter((k) => k in stats.tools_by_kind);
  charts.kinds.update(
    kinds,
    [kinds.map((k) => stats.tools_by_kind[k])],
    listed(kinds, (k) => `${count.format(stats.tools_by_kind[k])} tools`),
    stats.total_tools === 0 ? [] : kinds.map((k) => [k, count.format(stats.tools_by_kind[k])]),
  );

  /** @type {[string, number][]} */
  const scopes = Object.entries(stats.scope_usage);
  fillTable(
    'scopes',
    scopes.sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)),
  );
  note('scopes-empty', scopes.length === 0 ? 'No tool in view needs a scope.' : null);

  // Per-service and per-agent figures come only to operators (admin or STATS_READ_SCOPE).
  const services = [
    ...Object.entries(stats.tools_by_service ?? {}).map(([id, n]) => [id, 'message bus', n]),
    ...Object.entries(stats.tools_by_mcp_server ?? {}).map(([id, n]) => [id, 'MCP server', n]),
  ];
  fillTable('services', services);
  const operatorNote = session.token
    ? 'Shown to tokens with the admin scope or the dashboard read scope (STATS_READ_SCOPE); this one has neither.'
    : 'Sign in with an operator token (the admin scope, or STATS_READ_SCOPE) to see these figures.';
  const backends = stats.total_tool_services + (stats.tools_by_kind.mcp ?? 0);
  note('services-note', services.length > 0 ? null : backends === 0 ? 'No tool service or MCP server is registered.' : operatorNote);

  const agents = Object.entries(stats.usage_by_agent).flatMap(([agent, tools]) =>
    Object.entries(tools).map(([tool, n]) => [agent, tool, /** @type {number} */ (n)]),
  );
  fillTable('agents', agents);
  note('agents-note', agents.length > 0 ? null : stats.total_tool_calls === 0 ? 'No calls yet.' : operatorNote);
}

/** @param {any} ready  a `Readiness` answer */
function showReadiness(ready) {
  setStat('inflight', count.format(ready.inflightCalls));
  setStat('bus', ready.checks.bridge);
  setStat('waiters', count.format(ready.waiters));
}

/** @param {any} page  an `AuditPage` answer */
function showAudit(page) {
  fillTable(
    'audit',
    page.entries.map((/** @type {any} */ e) => [
      new Date(e.at).toLocaleString(),
      e.sub ?? '(anonymous)',
      e.action,
      e.target ?? '',
      e.outcome,
      e.status,
    ]),
  );
  note('audit-note', page.entries.length === 0 ? 'No entries yet.' : null);
}

// -------------------------------------------------------------------------------------------
// Messages and sign-in

/** Whether the alert shown says the figures could not be read (a later read clears it). */
let readFailed = false;

/**
 * @param {string | null} text
 * @param {boolean} [aboutReading]  said by a refresh, and cleared by the next good one
 */
function alertText(text, aboutReading = false) {
  const el = byId('alert');
  el.hidden = text === null;
  el.textContent = text ?? '';
  readFailed = aboutReading;
}

/** @param {string} text */
const notice = (text) => (byId('notice').textContent = text);

function showSession() {
  if (signedInAs() !== null) return;
  review.hide();
  fillTable('audit', []);
  note('audit-note', 'Sign in with a token holding the admin scope to see the audit log.');
}

/** A 401 with a token: it expired or is not valid here. The token is dropped at once. */
function tokenRefused(/** @type {ApiError} */ error) {
  if (session.token === null) return;
  session.signOut();
  alertText(`Your token was refused (${error.message}), so you are signed out. Paste a new token to sign in again.`);
  restart();
}

// -------------------------------------------------------------------------------------------
// Refreshing

let auditAllowed = true;
let reviewAllowed = true;
let refreshing = false;
let again = false;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer;
/** @type {number | null} */
let feedStartedFor = null;

const review = new ReviewQueue({
  section: byId('review'),
  heading: byId('review-title'),
  list: byId('review-queue'),
  note: byId('review-note'),
  outcome: byId('review-outcome'),
  onReviewed: () => soon(),
  onUnauthorized: (error) => tokenRefused(error),
});

const feed = new ChangeFeed({
  onChange(change) {
    const list = byId('changes');
    const item = element('li', {}, `#${change.index} ${change.op} ${change.kind} ${change.name}`);
    item.append(element('span', { class: 'muted' }, ` ${new Date().toLocaleTimeString()}`));
    list.prepend(item);
    while (list.children.length > CHANGES_KEPT) list.lastElementChild?.remove();
    byId('changes-empty').hidden = true;
    soon();
  },
  onState(state) {
    const text = {
      connecting: 'Change feed: connecting',
      live: 'Change feed: live',
      reconnecting: 'Change feed: reconnecting',
      'needs-token': 'Change feed: needs a token',
      stopped: 'Change feed: stopped',
    }[state];
    byId('feed').dataset['state'] = state;
    byId('feed-text').textContent = text;
  },
  onUnauthorized: tokenRefused,
});

/** A write was reported: refresh shortly, once for a burst of changes. */
/** @type {ReturnType<typeof setTimeout> | undefined} */
let soonTimer;
function soon() {
  clearTimeout(soonTimer);
  soonTimer = setTimeout(() => void refresh(), 150);
}

function schedule(/** @type {number} */ delayS = Number(/** @type {HTMLSelectElement} */ (byId('refresh')).value)) {
  clearTimeout(timer);
  if (delayS > 0) timer = setTimeout(() => void refresh(), delayS * 1000);
}

async function refresh() {
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = true;
  let retryAfterS;
  try {
    const token = session.token;
    const [stats, ready, audit, queue] = await Promise.allSettled([
      getJson('stats', token),
      // Readiness ignores credentials, so it gets none.
      getJson('readyz', null),
      token && auditAllowed ? getJson(`audit?limit=${AUDIT_ROWS}`, token) : Promise.resolve(null),
      // The review queue is for admins: the section stays hidden for other tokens.
      token && reviewAllowed ? review.load(token) : Promise.resolve(),
    ]);
    for (const result of [stats, ready, audit, queue]) {
      if (result.status === 'rejected' && result.reason instanceof ApiError && result.reason.status === 401 && token)
        return tokenRefused(result.reason);
    }
    if (stats.status === 'fulfilled') {
      showStats(stats.value);
      if (readFailed) alertText(null);
      if (feedStartedFor === null) {
        feedStartedFor = stats.value.registry_index;
        feed.start(token, stats.value.registry_index);
      }
    } else if (stats.reason instanceof ApiError && stats.reason.status === 401) {
      // ANONYMOUS_DISCOVERY=none: nothing for callers without a token.
      alertText('This registry shows its figures only to callers with a token: sign in.', true);
      feed.stop();
      byId('feed-text').textContent = 'Change feed: needs a token';
      byId('feed').dataset['state'] = 'needs-token';
    } else {
      retryAfterS = stats.reason instanceof ApiError ? stats.reason.retryAfterS : undefined;
      alertText(`Could not read the figures: ${stats.reason instanceof Error ? stats.reason.message : 'network error'}. Retrying.`, true);
    }
    if (ready.status === 'fulfilled') showReadiness(ready.value);
    else setStat('bus', 'registry not ready');
    if (audit.status === 'fulfilled' && audit.value) showAudit(audit.value);
    else if (audit.status === 'rejected' && audit.reason instanceof ApiError && audit.reason.status === 403) {
      auditAllowed = false;
      fillTable('audit', []);
      note('audit-note', 'The audit log is for tokens with the admin scope; this one lacks it.');
    }
    if (queue.status === 'rejected' && queue.reason instanceof ApiError && queue.reason.status === 403) {
      reviewAllowed = false;
      review.hide();
    } else if (queue.status === 'rejected') review.failed(queue.reason instanceof Error ? queue.reason.message : 'network error');
    byId('updated').textContent = `Updated ${new Date().toLocaleTimeString()}`;
  } finally {
    refreshing = false;
    if (again) {
      again = false;
      void refresh();
    } else schedule(retryAfterS);
  }
}

/** After signing in or out: another view, so new figures and a new feed. */
function restart() {
  previous = null;
  auditAllowed = true;
  reviewAllowed = true;
  feedStartedFor = null;
  feed.stop();
  showSession();
  void refresh();
}

wireSignIn({ alertText, notice, changed: restart });

byId('refresh').addEventListener('change', () => schedule());
byId('refresh-now').addEventListener('click', () => void refresh());

restart();
