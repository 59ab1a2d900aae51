// @ts-check
/**
 * The console's sources and review page (issue 34), at /dashboard/sources: upstream MCP servers
 * and OpenAPI sources with their state and pending changes (source-list.js), and the forms that
 * register them and tool services, and edit a tool service with `If-Match` (source-forms.js). It signs in as the rest of the console does
 * (the same token, kept in this tab's sessionStorage) and needs the admin scope: the lists and
 * queues are operators' data, refused to other tokens, and the page says so.
 */
import { ApiError, session } from './api.js';
import { byId } from './console-format.js';
import { FORMS, SourceForm } from './source-forms.js';
import { SourceList } from './source-list.js';
import { showSession, wireSignIn } from './sign-in.js';

/** @param {string} text */
function notice(text) {
  byId('notice').textContent = text;
}

/** @param {string | null} text */
function alertText(text) {
  const el = byId('alert');
  el.hidden = text === null;
  el.textContent = text ?? '';
}

const boxes = new Map([
  ['mcp', 'mcp-form-box'],
  ['oas', 'openapi-form-box'],
  ['svc', 'service-form-box'],
]);
for (const spec of FORMS)
  new SourceForm(byId(boxes.get(spec.prefix) ?? 'service-form-box'), spec, {
    token: () => session.token,
    onSaved: () => void load(),
  });
// One edit form for the tool services, opened from a row; closed, focus goes back to that row's button.
const serviceSpec = FORMS.find((spec) => spec.prefix === 'svc');
const serviceEditor =
  serviceSpec &&
  new SourceForm(byId('service-edit-box'), serviceSpec, {
    mode: 'edit',
    token: () => session.token,
    onSaved: () => void load(),
    onClose: (id) => {
      const row = [...document.querySelectorAll('#tool-services tbody tr')].find((tr) => tr.getAttribute('data-source') === id);
      const button = /** @type {HTMLElement | null | undefined} */ (row?.querySelector('button.edit'));
      (button ?? byId('services-title')).focus();
    },
  });
const list = new SourceList({ notice }, { editService: (id) => void serviceEditor?.open(id) });

async function load() {
  alertText(null);
  showSession();
  const token = session.token;
  byId('register-sources').hidden = token === null;
  if (token === null) {
    list.hide('Sign in with a token that has the admin scope to see the sources and review their changes.');
    return;
  }
  try {
    await list.load(token);
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
      byId('register-sources').hidden = true;
      list.hide(`This token may not read the sources (${err.status}: ${err.message}). They need the admin scope.`);
    } else alertText(`Could not read the sources: ${err instanceof Error ? err.message : 'network error'}`);
  }
}

wireSignIn({ alertText, notice, changed: () => void load() });

void load();
