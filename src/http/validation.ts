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

/** Precompiled checks of hot request parts, by their schema (see withFastPath). */
const fastPaths = new WeakMap<z.ZodType, (data: unknown) => unknown>();

/**
 * Gives a request part's schema a precompiled check for the common, plainly valid inputs:
 * `check` returns the value zod would give, or undefined to let zod decide. Only zod refuses,
 * so every refusal (its problem+json with the same field errors) is what it was; the hot routes
 * skip zod's parse, ~3 us a request in the profile of `GET /?limit=100`.
 */
export function withFastPath<T extends z.ZodType>(schema: T, check: (data: Record<string, unknown>) => z.output<T> | undefined): T {
  fastPaths.set(schema, (data) => (typeof data === 'object' && data !== null ? check(data as Record<string, unknown>) : undefined));
  return schema;
}

/** Every key of a path's params object a plain required `z.string()`: any string passes as is. */
function plainStringParams(schema: z.ZodType): ReadonlySet<string> | null {
  if (!(schema instanceof z.ZodObject) || schema.def.catchall !== undefined) return null;
  const keys = Object.keys(schema.shape);
  const plain = keys.every((key) => {
    const field = schema.shape[key] as z.ZodType;
    return field instanceof z.ZodString && (field.def.checks ?? []).length === 0;
  });
  return plain ? new Set(keys) : null;
}

export const validatorCompiler: FastifySchemaCompiler<z.ZodType> = (route) => {
  // Left as it came: not even null for an absent body, so services see what they always saw.
  if (documentedOnlyParts.has(route.schema)) return () => true;
  const validate = zodValidatorCompiler(route);
  const fast = fastPaths.get(route.schema);
  if (fast) {
    const emptyPasses = route.httpPart === 'querystring' && leavesEmptyAlone(validate);
    return (data) => {
      if (emptyPasses && isEmpty(data)) return true;
      const value = fast(data);
      return value === undefined ? validate(data) : { value };
    };
  }
  // Path parameters are strings with exactly the route's keys: zod would copy them as they are.
  const params = route.httpPart === 'params' ? plainStringParams(route.schema) : null;
  if (params) {
    return (data) => {
      let count = 0;
      for (const key in data as object) {
        if (!params.has(key) || typeof (data as Record<string, unknown>)[key] !== 'string') return validate(data);
        count++;
      }
      return count === params.size ? true : validate(data);
    };
  }
  if (route.httpPart !== 'querystring' || !leavesEmptyAlone(validate)) return validate;
  return (data) => (isEmpty(data) ? true : validate(data));
};

/**
 * The plain `GET /` is the hot path: a query string the schema takes empty and leaves empty is
 * checked once, here, rather than parsed on every request.
 */
function leavesEmptyAlone(validate: (data: unknown) => unknown): boolean {
  const empty = validate({}) as { value?: unknown };
  return empty.value !== undefined && isEmpty(empty.value);
}

/**
 * Answers are not parsed by their zod schemas on the way out: the schemas type the handlers and
 * make the document, and test/http/openapi.test.ts checks real answers against it. Parsing every
 * answer cost 4.5 times the serialisation (a 1000-tool page: 5 ms with JSON.stringify, 23 ms
 * with zod parse and stringify) and would rebuild objects in schema key order.
 */
export const serializerCompiler: FastifySerializerCompiler<unknown> = () => (data) => JSON.stringify(data);
