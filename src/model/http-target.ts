/**
 * An HTTP tool's full target (issue 30): a base URL, a method and a path template, and where
 * each argument goes, in OpenAPI's terms (`in`, `style`, `explode`), so that a REST API can be
 * registered as it is described. The article's `host`/`port`/`endpoint` form stays, and means
 * a POST of every argument as a JSON body to `http://{host}:{port}{endpoint}`.
 */
import { z } from 'zod';

export const HTTP_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

const ARGUMENT_LOCATIONS = ['path', 'query', 'header', 'cookie', 'body'] as const;

/** OpenAPI's query styles; path and header arguments are always `simple`, cookies `form`. */
const QUERY_STYLES = ['form', 'spaceDelimited', 'pipeDelimited', 'deepObject'] as const;

/** The most placements a target lists: as many arguments as a message-bus tool may have. */
export const TARGET_ARGUMENTS_MAX = 256;

/** An argument name, as `parameters` and `inputSchema` properties have them. */
const ARGUMENT_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** RFC 9110 token: header and cookie names. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
/** A query key: printable ASCII without the characters that would end or split it. */
const QUERY_KEY = /^[\x21-\x7E]{1,128}$/;

/**
 * Headers the registry sets itself or that frame the message: an argument never sets them.
 * `authorization` is forwardAuthorization's (and, later, the registry's own credentials').
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'authorization',
  'connection',
  'content-length',
  'content-type',
  'cookie',
  'expect',
  'host',
  'keep-alive',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'traceparent',
  'tracestate',
]);

export const ArgumentPlacementSchema = z
  .strictObject({
    /** Where the argument goes: a `{name}` of the path, the query, a header, a cookie, or a property of the JSON body. */
    in: z.enum(ARGUMENT_LOCATIONS),
    /** Its name there (a header's, a query key's, a cookie's, a body property's), when it is not the argument's own. */
    name: z.string().max(128).optional(),
    /** How a query argument's array or object is written (OpenAPI's `style`): `form` unless given. */
    style: z.enum(QUERY_STYLES).optional(),
    /** Whether a query argument's array or object is exploded (OpenAPI's `explode`): true for `form` and `deepObject` unless given, false otherwise. */
    explode: z.boolean().optional(),
  })
  .meta({
    id: 'ArgumentPlacement',
    description:
      "Where one argument goes: `in` is `path` (a `{name}` of the path, `simple` style), `query`, `header` (`simple`), `cookie` (`form`) or `body` (a property of the JSON body); `name` is its name there when not the argument's own. For query arguments `style` is `form` (default), `spaceDelimited`, `pipeDelimited` or `deepObject`, and `explode` defaults to true for `form` and `deepObject`, as OpenAPI 3.1 defines them: `form` exploded `tags=a&tags=b` (an object: `k1=v1&k2=v2`), not exploded `tags=a,b` (`obj=k1,v1,k2,v2`); `spaceDelimited` `tags=a%20b`; `pipeDelimited` `tags=a%7Cb`; `deepObject` `filter[k1]=v1`. A null or absent argument is not sent. Headers the registry sets (`Authorization`, `Content-Type`, `Cookie`, `Host`, framing and trace headers) cannot be arguments.",
  });
export type ArgumentPlacement = z.infer<typeof ArgumentPlacementSchema>;

/** Checks a base URL: http or https, a host, no credentials, query or fragment. */
function baseUrlProblem(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL such as https://api.example.com/v1';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must start with https:// or http://';
  if (url.hostname === '') return 'must name a host';
  if (url.username !== '' || url.password !== '') return 'must not carry a user name or password (credentials are not kept in URLs)';
  if (url.search !== '' || value.includes('?')) return 'must not have a query: place query arguments with `arguments`';
  if (url.hash !== '' || value.includes('#')) return 'must not have a fragment';
  return undefined;
}

/** The `{name}` placeholders of a path template, in order; undefined when one is malformed. */
export function pathPlaceholders(path: string): string[] | undefined {
  const names: string[] = [];
  const rest = path.replace(/\{([^{}]*)\}/g, (_, name: string) => {
    names.push(name);
    return '';
  });
  if (rest.includes('{') || rest.includes('}')) return undefined;
  return names.every((name) => ARGUMENT_NAME.test(name)) ? names : undefined;
}

export const HttpTargetSchema = z
  .strictObject({
    /** Where the API lives: `https://` or `http://`, a host, an optional port and base path; no query or fragment. */
    baseUrl: z
      .string()
      .max(2048)
      .superRefine((value, ctx) => {
        const problem = baseUrlProblem(value);
        if (problem) ctx.addIssue({ code: 'custom', message: problem });
      }),
    /** The HTTP method of the call. */
    method: z.enum(HTTP_METHODS),
    /** Path below the base URL, a template whose `{name}` placeholders are filled with arguments of that name (`/pets/{petId}`). */
    path: z
      .string()
      .max(2048)
      .regex(/^\/[\x21-\x7E]*$/, 'must be an absolute path starting with "/"')
      .refine(
        (path) => !path.includes('?') && !path.includes('#'),
        'must not have a query or fragment: place query arguments with `arguments`',
      )
      .refine(
        (path) => pathPlaceholders(path) !== undefined,
        'its placeholders must be {name}, a name of 1 to 64 letters, digits, "_" or "-"',
      )
      .default('/'),
    /**
     * Where each argument goes, by argument name. A path placeholder's argument goes in the path;
     * any other argument not listed goes in the JSON body for POST, PUT and PATCH, and in the
     * query (style `form`, exploded) for GET and DELETE.
     */
    arguments: z
      .record(
        z
          .string()
          .regex(ARGUMENT_NAME, 'argument names must be 1 to 64 letters, digits, "_" or "-"')
          .refine((name) => name !== '__proto__', 'must not be "__proto__"'),
        ArgumentPlacementSchema,
      )
      .refine((value) => Object.keys(value).length <= TARGET_ARGUMENTS_MAX, `must have at most ${TARGET_ARGUMENTS_MAX} entries`)
      .optional(),
  })
  .meta({
    id: 'HttpTarget',
    description:
      "A REST API operation as an HTTP tool's target: `baseUrl` (`https://` or `http://`, no query, fragment or credentials), `method` (GET, POST, PUT, PATCH or DELETE), `path` below it, a template whose `{name}` placeholders take the required arguments of that name, and `arguments`: where each argument goes (`ArgumentPlacement`). An argument not listed goes in the path when the template names it, else in the JSON body for POST, PUT and PATCH (which always send a JSON object) and in the query for GET and DELETE. TLS certificates are verified (OUTBOUND_CA_FILE adds CAs); redirects are not followed; the base URL's host passes the outbound address policy at registration and at every connection. The answer becomes the result by its content type: JSON as JSON text (an object also as MCP `structuredContent` where the tool has an `outputSchema`), text as is, an image or other bytes as base64 with its media type (`InvokeResult.content`; MCP image content or an embedded resource).",
  })
  .superRefine((target, ctx) => {
    const placeholders = new Set(pathPlaceholders(target.path) ?? []);
    const wire = new Map<string, string>();
    for (const [argument, placement] of Object.entries(target.arguments ?? {})) {
      const at = (field: string) => ['arguments', argument, field];
      const issue = (field: string, message: string) => ctx.addIssue({ code: 'custom', path: at(field), message });
      const name = placement.name ?? argument;
      if (placement.in === 'path' && !placeholders.has(name)) issue('in', `the path has no placeholder {${name}}`);
      if (placement.in !== 'path' && placeholders.has(argument) && placement.name === undefined)
        issue('in', `{${argument}} is a placeholder of the path, so the argument goes there`);
      if (placement.in === 'body' && target.method === 'GET') issue('in', 'a GET has no body');
      if ((placement.in === 'header' || placement.in === 'cookie') && !TOKEN.test(name))
        issue('name', `"${name}" is not a valid ${placement.in} name`);
      if (placement.in === 'query' && !QUERY_KEY.test(name)) issue('name', `"${name}" is not a valid query key`);
      if (placement.in === 'header' && RESERVED_HEADERS.has(name.toLowerCase()))
        issue('name', `the registry sets the ${name} header itself; an argument may not`);
      if (placement.in !== 'query' && (placement.style !== undefined || placement.explode !== undefined))
        issue(placement.style !== undefined ? 'style' : 'explode', 'style and explode apply to query arguments only');
      if (placement.style === 'deepObject' && placement.explode === false) issue('explode', 'deepObject is always exploded');
      if ((placement.style === 'spaceDelimited' || placement.style === 'pipeDelimited') && placement.explode === true)
        issue('explode', `${placement.style} is never exploded (use form with explode for repeated keys)`);
      const key = `${placement.in}:${placement.in === 'header' ? name.toLowerCase() : name}`;
      const other = wire.get(key);
      if (other !== undefined) issue('name', `argument "${other}" goes to the same ${placement.in} name "${name}"`);
      wire.set(key, argument);
    }
  });
export type HttpTarget = z.output<typeof HttpTargetSchema>;

/** Where an argument of a target goes when `arguments` does not say. */
export function placementOf(target: HttpTarget, argument: string): ArgumentPlacement {
  const placements = target.arguments ?? {};
  // The name comes from a call's arguments: only an own entry counts.
  if (Object.hasOwn(placements, argument)) return placements[argument] as ArgumentPlacement;
  if ((pathPlaceholders(target.path) ?? []).includes(argument)) return { in: 'path' };
  return target.method === 'GET' || target.method === 'DELETE' ? { in: 'query' } : { in: 'body' };
}

/**
 * The origin (scheme, host and port) an HTTP tool's calls go to, from its stored descriptor: its
 * target's base URL, or the article's `http://host:port`. What a tool's own credential is bound
 * to (issue 30): a tool moved elsewhere sends it nowhere.
 */
export function httpToolOrigin(descriptor: {
  target?: { baseUrl: string } | undefined;
  host?: string | undefined;
  port?: number | undefined;
}): string {
  if (descriptor.target !== undefined) return new URL(descriptor.target.baseUrl).origin;
  const host = descriptor.host ?? '';
  return new URL(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}:${descriptor.port ?? 80}`).origin;
}
