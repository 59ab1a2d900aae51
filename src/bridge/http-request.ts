/**
 * The request an HTTP tool's call makes: for the article's form, a POST of the arguments as JSON
 * to http://{host}:{port}{endpoint}; for a full target (issue 30), its method on its base URL and
 * path template, each argument where the target places it, written as OpenAPI 3.1 says
 * (section 4.8.12.4, style values): path and header arguments `simple`, cookies `form`, query
 * arguments `form` (exploded unless told), `spaceDelimited`, `pipeDelimited` or `deepObject`,
 * body arguments as properties of one JSON object.
 */
import { RegistryError } from '../model/errors.js';
import { placementOf, type ArgumentPlacement, type HttpMethod, type HttpTarget } from '../model/http-target.js';
import type { HttpLocation } from '../model/normalise.js';

export interface HttpRequestPlan {
  url: URL;
  method: HttpMethod;
  /** Headers the arguments set (the transport adds its own). */
  headers: Record<string, string>;
  /** The JSON body's text, when the call has one. */
  body: string | undefined;
  /** The URL's path as a template (no argument values): for spans and logs. */
  pathTemplate: string;
}

const refused = (message: string) => new RegistryError('TR_ERR_INVALID_ARGUMENTS', message, { fieldErrors: [{ path: '', message }] });

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A scalar as text; anything nested inside an array or object as JSON text. */
function scalar(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value) ?? '';
}

const enc = encodeURIComponent;

/** `simple` (path, header), never exploded: `a,b` for an array, `k1,v1,k2,v2` for an object. */
function simple(value: unknown, encode: (text: string) => string): string {
  if (Array.isArray(value)) return value.map((item) => encode(scalar(item))).join(',');
  if (isPlainObject(value))
    return Object.entries(value)
      .flatMap(([k, v]) => [encode(k), encode(scalar(v))])
      .join(',');
  return encode(scalar(value));
}

const DELIMITERS = { form: ',', spaceDelimited: '%20', pipeDelimited: '%7C' } as const;

/** One query argument's `key=value` pairs, encoded. */
function queryPairs(name: string, value: unknown, placement: ArgumentPlacement): string[] {
  const style = placement.style ?? 'form';
  if (Array.isArray(value)) {
    const items = value.map((item) => enc(scalar(item)));
    const exploded = placement.explode ?? style === 'form';
    // deepObject says nothing of arrays: written as the exploded form, one key per item.
    if (style === 'deepObject' || exploded) return items.map((item) => `${enc(name)}=${item}`);
    return [`${enc(name)}=${items.join(DELIMITERS[style])}`];
  }
  if (isPlainObject(value)) {
    if (style === 'deepObject') return deepPairs(enc(name), value);
    const exploded = placement.explode ?? style === 'form';
    if (exploded) return Object.entries(value).map(([k, v]) => `${enc(k)}=${enc(scalar(v))}`);
    const flat = Object.entries(value).flatMap(([k, v]) => [enc(k), enc(scalar(v))]);
    return [`${enc(name)}=${flat.join(DELIMITERS[style])}`];
  }
  return [`${enc(name)}=${enc(scalar(value))}`];
}

/** deepObject: `name[key]=value`, nested objects one bracket further (`name[a][b]=v`). */
function deepPairs(prefix: string, value: Record<string, unknown>): string[] {
  return Object.entries(value).flatMap(([k, v]) => {
    const key = `${prefix}[${enc(k)}]`;
    return isPlainObject(v) ? deepPairs(key, v) : [`${key}=${enc(scalar(v))}`];
  });
}

/** Header values are printable ASCII: a line break would start another header. */
const HEADER_VALUE = /^[\t\x20-\x7E]*$/;

function targetRequest(target: HttpTarget, args: Record<string, unknown>): HttpRequestPlan {
  const pathValues = new Map<string, unknown>();
  const query: string[] = [];
  const headers: Record<string, string> = {};
  const cookies: string[] = [];
  const body: Record<string, unknown> = {};
  let hasBody = false;
  for (const argument of Object.keys(args)) {
    const value = args[argument];
    // An argument left out, or a null for one, is not sent (a path argument is required).
    if (value === undefined || value === null) continue;
    const placement = placementOf(target, argument);
    const name = placement.name ?? argument;
    switch (placement.in) {
      case 'path':
        pathValues.set(name, value);
        break;
      case 'query':
        query.push(...queryPairs(name, value, placement));
        break;
      case 'header': {
        const text = simple(value, (t) => t);
        if (!HEADER_VALUE.test(text))
          throw refused(`argument "${argument}" goes in a header, and must be printable ASCII without line breaks`);
        headers[name.toLowerCase()] = text;
        break;
      }
      case 'cookie':
        cookies.push(`${name}=${simple(value, enc)}`);
        break;
      case 'body':
        Object.defineProperty(body, name, { value, enumerable: true, writable: true, configurable: true });
        hasBody = true;
        break;
    }
  }
  if (cookies.length > 0) headers['cookie'] = cookies.join('; ');
  const path = target.path.replace(/\{([^{}]*)\}/g, (_, name: string) => {
    const value = pathValues.get(name);
    if (value === undefined) throw refused(`the path ${target.path} needs {${name}}`);
    const text = simple(value, enc);
    // "." and ".." would move the URL up the base path (URL normalises them, encoded or not).
    if (text === '' || /^(?:\.|%2e){1,2}$/i.test(text)) throw refused(`{${name}} must not be empty, "." or ".."`);
    return text;
  });
  const base = new URL(target.baseUrl);
  const url = new URL(`${base.origin}${base.pathname.replace(/\/+$/, '')}${path}${query.length > 0 ? `?${query.join('&')}` : ''}`);
  // POST, PUT and PATCH always carry a JSON object; DELETE only when arguments go in it.
  const sendsBody = target.method === 'POST' || target.method === 'PUT' || target.method === 'PATCH' || hasBody;
  return {
    url,
    method: target.method,
    headers,
    body: sendsBody && target.method !== 'GET' ? JSON.stringify(body) : undefined,
    pathTemplate: `${base.pathname.replace(/\/+$/, '')}${target.path}`,
  };
}

/** The request of one call of an HTTP tool. Throws TR_ERR_INVALID_ARGUMENTS when an argument cannot be placed. */
export function httpRequestOf(location: HttpLocation, args: Record<string, unknown>): HttpRequestPlan {
  if (location.target !== undefined) return targetRequest(location.target, args);
  const host = location.host.includes(':') && !location.host.startsWith('[') ? `[${location.host}]` : location.host;
  return {
    url: new URL(`http://${host}:${location.port}${location.endpoint}`),
    method: 'POST',
    headers: {},
    body: JSON.stringify(args),
    pathTemplate: location.endpoint.split('?')[0] ?? '',
  };
}
