// @ts-check
/**
 * The sign-in section every page has (session.html): a pasted bearer token, kept for the tab
 * (api.js `session`), and who it says it is. One rule for what may be pasted, on every page: a
 * leading `Bearer ` is dropped, as copied from a curl line, and what is left must be one word,
 * since a token with a space or line break in it can only be a paste gone wrong.
 */
import { claimsOf, session } from './api.js';
import { byId } from './console-format.js';

/**
 * The token a pasted text holds, or null when it holds none.
 * @param {string} text
 * @returns {string | null}
 */
export function pastedToken(text) {
  const token = text.trim().replace(/^Bearer\s+/i, '');
  return token === '' || /\s/.test(token) ? null : token;
}

/**
 * Shows the form or who the signed-in token names (its subject, scopes and, when it has one,
 * its expiry), and gives the token.
 * @returns {string | null}
 */
export function showSession() {
  const token = session.token;
  byId('sign-in').hidden = token !== null;
  byId('signed-in').hidden = token === null;
  if (token !== null) {
    const { sub, scopes, exp } = claimsOf(token);
    const expires = exp ? `, until ${new Date(exp * 1000).toLocaleTimeString()}` : '';
    byId('identity').textContent = `Signed in as ${sub ?? '(no subject)'}${scopes.length ? ` (${scopes.join(' ')})` : ''}${expires}`;
  }
  return token;
}

/**
 * Wires the form and the sign-out button. After either, the page's `changed` runs (it reads
 * what the new token may see), and focus goes where the keyboard can go on: to Sign out after a
 * sign-in, to the token field after a sign-out.
 * @param {{ alertText: (text: string | null) => void, notice: (text: string) => void, changed: () => void }} page
 */
export function wireSignIn({ alertText, notice, changed }) {
  const input = /** @type {HTMLInputElement} */ (byId('token'));
  byId('sign-in').addEventListener('submit', (event) => {
    event.preventDefault();
    const token = pastedToken(input.value);
    input.value = '';
    if (token === null) {
      alertText('Paste a bearer token: one line, without spaces.');
      input.focus();
      return;
    }
    alertText(null);
    session.signIn(token);
    notice('Signed in.');
    changed();
    byId('sign-out').focus();
  });
  byId('sign-out').addEventListener('click', () => {
    session.signOut();
    alertText(null);
    notice('Signed out.');
    changed();
    input.focus();
  });
}
