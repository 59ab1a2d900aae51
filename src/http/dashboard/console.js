// @ts-check
/**
 * The operator's console (issue 34): the catalogue at /dashboard/tools and a tool's page at
 * /dashboard/tools/{name}, one page for both, chosen by the path. It signs in as the status
 * page does (the same token, kept in this tab's sessionStorage), and reads and writes the
 * registry's own routes with it, so it sees and may do exactly what that token may.
 */
import { session } from './api.js';
import { Catalogue } from './catalogue.js';
import { byId, FLASH_KEY } from './console-format.js';
import { showSession, wireSignIn } from './sign-in.js';
import { ToolPage } from './tool-page.js';

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

const messages = { notice, alert: alertText };

/** A notice the page before left for this one (a delete that came back to the catalogue), shown once. */
function showFlash() {
  const flash = sessionStorage.getItem(FLASH_KEY);
  if (flash === null) return;
  sessionStorage.removeItem(FLASH_KEY);
  notice(flash);
}

/** The tool the path names, or null on the catalogue. */
function toolOfPath() {
  const match = /\/dashboard\/tools\/([^/]+)\/?$/.exec(location.pathname);
  return match ? decodeURIComponent(match[1] ?? '') : null;
}

const toolName = toolOfPath();
const view = toolName === null ? new Catalogue(messages) : new ToolPage(toolName, messages);
byId(toolName === null ? 'catalogue-view' : 'tool-view').hidden = false;
if (toolName === null) byId('nav-tools').setAttribute('aria-current', 'page');
else document.title = `${toolName} · tool-registry console`;

function reload() {
  alertText(null);
  showSession();
  void view.load(session.token);
}

wireSignIn({
  alertText,
  notice,
  changed: () => {
    reload();
    showFlash();
  },
});

reload();
showFlash();
