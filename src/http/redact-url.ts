/**
 * What of a request URL may reach the logs: the path, and the query with every credential's
 * value replaced. Credentials are found by structure, not by spelling: each parameter's name is
 * decoded (repeatedly, so double encoding does not hide it), Unicode-normalised, case-folded and
 * stripped of separators before it is compared, so `access_token`, `Access-Token`,
 * `access%5Ftoken`, `%2561ccess_token` and `ａｃｃｅｓｓ_token` are one name. A value that is a
 * JWT is redacted whatever its name, in the path too. What cannot be decoded is dropped.
 */

/** Names (folded: lower case, letters and digits only) that carry credentials. */
const CREDENTIAL_NAMES = new Set(['code', 'key', 'sig', 'pass', 'pwd', 'otp', 'pin', 'nonce', 'state', 'ticket', 'sid']);
/** Parts of folded names that carry credentials: `access_token`, `client_secret`, `x-api-key`, ... */
const CREDENTIAL_PARTS = /token|secret|passw|apikey|accesskey|privatekey|signature|auth|jwt|bearer|session|cookie|credential|assertion/;
/** A JWS or JWE in compact form: a base64url JSON header (`{"` is `eyJ`), then dotted parts. */
const JWT = /eyJ[A-Za-z0-9_-]{4,}(?:\.[A-Za-z0-9_-]*)+/;
/** Enough decoding rounds for any realistic nesting; a name still encoded after them is dropped. */
const MAX_DECODES = 4;

const REDACTED = '[redacted]';
const DROPPED = '[unparseable]';

/** Fully decodes a query component, or undefined when it is malformed or encoded too deep. */
function decodeFully(component: string): string | undefined {
  let current = component.replaceAll('+', ' ');
  for (let round = 0; round < MAX_DECODES; round++) {
    let next: string;
    try {
      next = decodeURIComponent(current);
    } catch {
      return undefined;
    }
    if (next === current) return current;
    current = next;
  }
  return /%[0-9a-f]{2}/i.test(current) ? undefined : current;
}

function fold(name: string): string {
  return name
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');
}

/** Whether a query parameter of this (decoded) name carries a credential. */
function isCredentialName(name: string): boolean {
  const folded = fold(name);
  return CREDENTIAL_NAMES.has(folded) || CREDENTIAL_PARTS.test(folded);
}

function redactParameter(part: string): string | undefined {
  const eq = part.indexOf('=');
  const rawName = eq === -1 ? part : part.slice(0, eq);
  const rawValue = eq === -1 ? '' : part.slice(eq + 1);
  const name = decodeFully(rawName);
  const value = decodeFully(rawValue);
  if (name === undefined || value === undefined) return undefined;
  if (JWT.test(name)) return REDACTED;
  if (isCredentialName(name) || JWT.test(value)) return `${encodeURIComponent(name)}=${REDACTED}`;
  return part;
}

function redactPath(path: string): string {
  return path
    .split('/')
    .map((segment) => {
      const decoded = decodeFully(segment);
      if (decoded === undefined) return DROPPED;
      return JWT.test(decoded) ? REDACTED : segment;
    })
    .join('/');
}

/** The URL as it may be logged. */
export function redactUrl(url: string): string {
  const hash = url.indexOf('#');
  const withoutFragment = hash === -1 ? url : url.slice(0, hash);
  const q = withoutFragment.indexOf('?');
  const path = redactPath(q === -1 ? withoutFragment : withoutFragment.slice(0, q));
  if (q === -1) return path;
  // `;` separates parameters for some servers and proxies: split on both, so no value hides one.
  const parts = withoutFragment
    .slice(q + 1)
    .split(/[&;]/)
    .filter((part) => part !== '')
    .map((part) => redactParameter(part) ?? DROPPED);
  return parts.length === 0 ? path : `${path}?${parts.join('&')}`;
}

const JWT_ANYWHERE = new RegExp(JWT.source, 'g');
/** `name=value` pairs inside free text (a URL quoted in a message), up to a separator. */
const PAIR = /([^\s?&;=/"'<>]+)=([^\s&;"'<>]*)/g;

/**
 * Free text (a log message, an error's detail) with credentials taken out: JWTs wherever they
 * stand, and the value of any `name=value` pair whose name is a credential's.
 */
export function redactText(text: string): string {
  if (!text.includes('=') && !text.includes('eyJ')) return text;
  return text.replace(JWT_ANYWHERE, REDACTED).replace(PAIR, (pair, rawName: string) => {
    const name = decodeFully(rawName);
    return name === undefined || isCredentialName(name) ? `${rawName}=${REDACTED}` : pair;
  });
}
