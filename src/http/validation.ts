/**
 * How route schemas validate and serialise. Requests are validated by the zod type provider,
 * with two exceptions made here; answers are written with JSON.stringify.
 */
import type { FastifySchemaCompiler, FastifySerializerCompiler } from 'fastify';
import { validatorCompiler as zodValidatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';

/** Route schema parts that only document the request, with the schema the document shows. */
const documentedOnlyParts = new WeakMap<z.ZodType, z.ZodType>();

/**
 * A request part the route documents with `documented` but passes on as it came (the handler
 * sees `unknown`), because something else must stay the one place that checks it: descriptors
 * are checked by the registry service against the catalogue (a bus tool's service must exist),
 * in write order, with the error texts every front of the registry gives; a call's arguments are
 * looked at by the bridge only after it has checked the caller's scopes (401/403/404/410 first);
 * and `If-None-Match` on the hot `GET /` is read by the handler, so no header is parsed there.
 */
export function documentedOnly(documented: z.ZodType): z.ZodUnknown {
  const schema = z.unknown();
  documentedOnlyParts.set(schema, documented);
  return schema;
}

/** The schema the document shows for a route schema part. */
export function documentedSchema<T>(schema: T): T | z.ZodType {
  return schema instanceof z.ZodType ? (documentedOnlyParts.get(schema) ?? schema) : schema;
}

function isEmpty(value: unknown): boolean {
  for (const _ in value as object) return false;
  return true;
}

export const validatorCompiler: FastifySchemaCompiler<z.ZodType> = (route) => {
  // Left as it came: not even null for an absent body, so services see what they always saw.
  if (documentedOnlyParts.has(route.schema)) return () => true;
  const validate = zodValidatorCompiler(route);
  if (route.httpPart !== 'querystring') return validate;
  // The plain `GET /` is the hot path: a query string the schema takes empty and leaves empty
  // is checked once, here, rather than parsed on every request.
  const empty = validate({}) as { value?: unknown };
  if (empty.value === undefined || !isEmpty(empty.value)) return validate;
  return (data) => (isEmpty(data) ? true : validate(data));
};

/**
 * Answers are not parsed by their zod schemas on the way out: the schemas type the handlers and
 * make the document, and test/openapi.test.ts checks real answers against it. Parsing every
 * answer cost 4.5 times the serialisation (a 1000-tool page: 5 ms with JSON.stringify, 23 ms
 * with zod parse and stringify) and would rebuild objects in schema key order.
 */
export const serializerCompiler: FastifySerializerCompiler<unknown> = () => (data) => JSON.stringify(data);
