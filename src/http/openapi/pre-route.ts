/**
 * What the server answers before any route runs, and on which operations, so that the document
 * lists them on every operation they can reach without each route saying so: Node's refusals
 * (src/http/framework-errors.ts: 400, 408, 431), the router's (400, 414), the body parser's
 * (413, 415), rate limiting's (429, src/http/plugins/rate-limit.ts) and the probe-only
 * connection headroom's (503, src/http/plugins/connections.ts).
 */
import type { RouteOptions } from 'fastify';
import type { HeaderDoc, MediaDoc, problems, ResponseDoc } from './responses.js';

/**
 * The routes a probe-only connection still answers: PROBE_ROUTES in
 * src/http/plugins/connections.ts, which does not export it (test/http/openapi.test.ts checks the
 * two agree over a real socket).
 */
const PROBE_ROUTES: ReadonlySet<string> = new Set(['/healthz', '/readyz']);

/** Fastify parses a body sent with any method but GET and HEAD (DELETE included). */
const BODYLESS_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD']);

interface PreRouteAnswer {
  status: string;
  /** Its response in `components.responses`. */
  name: keyof typeof problems;
  /** Whether the server can give it for a request that the route would have answered. */
  reaches(route: RouteOptions): boolean;
}

const always = () => true;
const takesBody = (route: RouteOptions) => [route.method].flat().some((method) => !BODYLESS_METHODS.has(method));

export const PRE_ROUTE_ANSWERS: readonly PreRouteAnswer[] = [
  { status: '400', name: 'MalformedRequest', reaches: always },
  { status: '408', name: 'RequestTimeout', reaches: always },
  { status: '413', name: 'PayloadTooLarge', reaches: takesBody },
  // Only a path parameter has a length limit; a long URL as a whole is the 431.
  { status: '414', name: 'PathSegmentTooLong', reaches: (route) => route.url.includes(':') },
  { status: '415', name: 'UnsupportedMediaType', reaches: takesBody },
  { status: '429', name: 'TooManyRequests', reaches: (route) => route.config?.rateLimit !== false },
  { status: '431', name: 'HeadersTooLarge', reaches: always },
  { status: '503', name: 'ProbeOnlyConnection', reaches: (route) => !PROBE_ROUTES.has(route.url) },
];

/** A header of a merged response: required only where both answers send it. */
function mergedHeader(own: HeaderDoc | undefined, other: HeaderDoc | undefined): HeaderDoc {
  const header = own ?? other;
  if (header === undefined) throw new Error('a merged header needs one side');
  if (own === other) return header;
  // The other side's, when both have it: written for every answer of the status, not only one.
  const base = other ?? header;
  const required = own?.required === true && other?.required === true;
  return (base.required === true) === required ? base : { ...base, required };
}

/**
 * One response for a status that both the route and the server before it answer: the route's
 * prose, then the other's; headers from both (required only where both require them); the
 * route's media types and examples, then the other's for what the route leaves out.
 */
export function mergeResponses(own: ResponseDoc, preRoute: ResponseDoc): ResponseDoc {
  const names = new Set([...Object.keys(own.headers ?? {}), ...Object.keys(preRoute.headers ?? {})]);
  const headers = Object.fromEntries([...names].map((name) => [name, mergedHeader(own.headers?.[name], preRoute.headers?.[name])]));
  const content: Record<string, MediaDoc> = { ...preRoute.content, ...own.content };
  for (const [type, media] of Object.entries(own.content ?? {})) {
    const example = media.example ?? preRoute.content?.[type]?.example;
    content[type] = { ...media, ...(example !== undefined && { example }) };
  }
  return {
    description: `${own.description}\n\n${preRoute.description}`,
    ...(names.size > 0 && { headers }),
    ...(Object.keys(content).length > 0 && { content }),
  };
}
