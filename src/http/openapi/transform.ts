/**
 * How @fastify/swagger turns the routes' zod schemas into the document. The type provider's
 * `jsonSchemaTransform` converts the request parts and the zod registry's named schemas; what
 * @fastify/swagger cannot express from a route's `response` map (a media type per status,
 * `required` headers, responses and headers shared through `components`) is written here, and
 * so are the answers the server gives before any route runs (pre-route.ts), on every operation
 * they can reach.
 */
import type { SwaggerTransform, SwaggerTransformObject } from '@fastify/swagger';
import type { FastifySchema, RouteOptions } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { documentedSchema } from '../validation.js';
import { mergeResponses, PRE_ROUTE_ANSWERS } from './pre-route.js';
import { headers as sharedHeaderDocs, problems as sharedResponseDocs, type HeaderDoc, type ResponseDoc } from './responses.js';

type Json = Record<string, unknown>;
type OpenapiObject = Parameters<typeof jsonSchemaTransformObject>[0] & { openapiObject: Json };

/** What the route transform hands to the object transform, on the operation. */
const OPERATION_EXTRAS = 'x-registry-operation';
interface OperationExtras {
  responses: Json;
  requestBodyRequired: boolean;
}

const SCHEMAS = '#/components/schemas/';
const RESPONSES = '#/components/responses/';
/**
 * In place of a response until the whole document is known: a shared response of the route
 * with an answer the server gives before any route runs merged in (`[route's, pre-route's]`
 * names). transformObject names it.
 */
const MERGED = 'x-registry-merged';
const responseNames = new Map<object, string>(Object.entries(sharedResponseDocs).map(([name, doc]) => [doc, name]));
const headerNames = new Map<object, string>(Object.entries(sharedHeaderDocs).map(([name, doc]) => [doc, name]));

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** zod's identifiers of a generated schema, which mean nothing inside an OpenAPI document. */
function withoutIdentifiers(schema: Json): Json {
  const { $id: _id, $schema: _schema, ...rest } = schema;
  return rest;
}

/** A zod schema as the document's JSON Schema (named schemas become `$ref`s to components). */
function jsonSchemaOf(schema: z.ZodType, document: OpenapiObject): Json {
  const route = { method: 'GET', url: '/', handler: () => undefined } satisfies RouteOptions;
  const { schema: converted } = jsonSchemaTransform({ ...document, url: '/', route, schema: { response: { 200: schema } } });
  return withoutIdentifiers((converted.response as Record<string, Json>)['200'] ?? {});
}

function headerObject(doc: HeaderDoc, document: OpenapiObject): Json {
  return { description: doc.description, ...(doc.required && { required: true }), schema: jsonSchemaOf(doc.schema, document) };
}

function responseObject(doc: ResponseDoc, document: OpenapiObject): Json {
  const result: Json = { description: doc.description };
  if (doc.headers !== undefined) {
    result['headers'] = Object.fromEntries(
      Object.entries(doc.headers).map(([name, header]) => {
        const shared = headerNames.get(header);
        return [name, shared === undefined ? headerObject(header, document) : { $ref: `#/components/headers/${shared}` }];
      }),
    );
  }
  if (doc.content !== undefined) {
    result['content'] = Object.fromEntries(
      Object.entries(doc.content).map(([type, media]) => [
        type,
        {
          schema: jsonSchemaOf(media.schema, document),
          ...(media.example !== undefined && { example: media.example }),
          ...(media.events && {
            'x-events': Object.fromEntries(Object.entries(media.events).map(([event, data]) => [event, jsonSchemaOf(data, document)])),
          }),
        },
      ]),
    );
  }
  return result;
}

/**
 * Every documented route declares its schemas, or the document is not made (and the test that
 * makes it fails): a response map always, the path parameters of a URL that has some, the body
 * of a method that takes one, and the prose that names the operation.
 */
function requireSchemas(route: RouteOptions, schema: FastifySchema | undefined): void {
  const missing: string[] = [];
  if (!isObject(schema?.response) || Object.keys(schema.response).length === 0) missing.push('response');
  if (route.url.includes(':') && schema?.params === undefined) missing.push('params');
  const methods = [route.method].flat();
  if (methods.some((m) => m === 'POST' || m === 'PUT' || m === 'PATCH') && schema?.body === undefined) missing.push('body');
  for (const key of ['operationId', 'summary', 'tags'] as const) if (schema?.[key] === undefined) missing.push(key);
  if (missing.length > 0) {
    throw new Error(
      `${methods.join(',')} ${route.url} declares no ${missing.join(', ')}: every route declares its schemas (src/http/openapi/transform.ts)`,
    );
  }
}

export const transform: SwaggerTransform = (input) => {
  const { schema, route } = input;
  if (schema?.hide) return { schema, url: input.url };
  requireSchemas(route, schema);
  const document = input as OpenapiObject;
  const { response, body, querystring, params, headers, ...rest } = schema;
  const requestParts = Object.fromEntries(
    Object.entries({ body, querystring, params, headers })
      .filter(([, part]) => part !== undefined)
      .map(([key, part]) => [key, documentedSchema(part)]),
  );
  const converted = jsonSchemaTransform({ ...input, schema: { ...rest, ...requestParts } });
  const documentedBody = requestParts['body'];
  const own = response as Record<string, ResponseDoc>;
  const reference = (doc: ResponseDoc): Json => {
    const shared = responseNames.get(doc);
    return shared === undefined ? responseObject(doc, document) : { $ref: RESPONSES + shared };
  };
  // Integer-like keys enumerate in ascending order, so the statuses stay sorted.
  const responses: Json = Object.fromEntries(Object.entries(own).map(([status, doc]) => [status, reference(doc)]));
  for (const { status, name, reaches } of PRE_ROUTE_ANSWERS) {
    if (!reaches(route)) continue;
    const preRoute = sharedResponseDocs[name];
    const doc = own[status];
    if (doc === undefined || doc === preRoute) {
      responses[status] = reference(preRoute);
      continue;
    }
    const shared = responseNames.get(doc);
    responses[status] = shared === undefined ? responseObject(mergeResponses(doc, preRoute), document) : { [MERGED]: [shared, name] };
  }
  const extras: OperationExtras = {
    responses,
    // A body schema that takes no body at all documents an optional body.
    requestBodyRequired: !(documentedBody instanceof z.ZodType && documentedBody.safeParse(undefined).success),
  };
  return { url: converted.url, schema: { ...converted.schema, [OPERATION_EXTRAS]: extras } };
};

// ---------------------------------------------------------------------------------------------
// The whole document

function walk(node: unknown, visit: (object: Json) => void): void {
  if (Array.isArray(node)) node.forEach((item) => walk(item, visit));
  else if (isObject(node)) {
    visit(node);
    Object.values(node).forEach((value) => walk(value, visit));
  }
}

function rewriteRefs(node: unknown, rename: ReadonlyMap<string, string>): void {
  walk(node, (object) => {
    const ref = object['$ref'];
    if (typeof ref === 'string' && ref.startsWith(SCHEMAS)) {
      const target = rename.get(ref.slice(SCHEMAS.length));
      if (target !== undefined) object['$ref'] = SCHEMAS + target;
    }
  });
}

const JSON_VALUE = 'JsonValue';
const SHARED = /^#\/components\/schemas\/(__shared(?:Input)?)#\/\$defs\/(.+)$/;

/**
 * zod writes recursive schemas that have no id into a `__shared` pseudo-schema, which is no
 * component. Here the only ones are `z.json()` values (hints, defaults, enums), each the same
 * definition: they become one `JsonValue` component. Another recursive schema needs an id.
 */
function hoistJsonValues(document: Json, schemas: Record<string, Json>): void {
  let definition: string | undefined;
  for (const pseudo of ['__shared', '__sharedInput']) {
    const defs = (schemas[pseudo]?.['$defs'] ?? {}) as Record<string, Json>;
    for (const [name, def] of Object.entries(defs)) {
      const text = JSON.stringify(def).replaceAll(`#/components/schemas/${pseudo}#/$defs/${name}`, SCHEMAS + JSON_VALUE);
      if (definition !== undefined && text !== definition)
        throw new Error(`a recursive schema without an id (${pseudo} ${name}): give it one with .meta({ id })`);
      definition = text;
    }
    delete schemas[pseudo];
  }
  if (definition === undefined) return;
  // The empty schema, which any JSON value satisfies, rather than zod's recursive union: clients
  // generated from the document type it as `unknown`, where openapi-typescript's recursive alias
  // does not compile (TS2502: referenced directly or indirectly in its own type annotation).
  schemas[JSON_VALUE] = { description: 'Any JSON value: a string, number, boolean, null, array or object.' };
  walk([document, schemas], (object) => {
    const ref = object['$ref'];
    if (typeof ref === 'string' && SHARED.test(ref)) object['$ref'] = SCHEMAS + JSON_VALUE;
  });
}

/**
 * The type provider writes every named schema twice, as read (`FooInput`) and as written
 * (`Foo`). Pairs that are the same are kept once; schemas nothing refers to are left out; an
 * input form whose output form is not used takes the plain name.
 */
function tidySchemas(document: Json, generated: Record<string, Json>): Record<string, Json> {
  const schemas = Object.fromEntries(Object.entries(generated).map(([name, schema]) => [name, withoutIdentifiers(schema)]));
  hoistJsonValues(document, schemas);
  const rename = new Map<string, string>();
  const same = (a: string, b: string) => {
    const copies = [structuredClone(schemas[a]), structuredClone(schemas[b])];
    rewriteRefs(copies, rename);
    return JSON.stringify(copies[0]) === JSON.stringify(copies[1]);
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const name of Object.keys(schemas)) {
      const output = name.replace(/Input$/, '');
      if (output === name || rename.has(name) || !(output in schemas) || !same(name, output)) continue;
      rename.set(name, output);
      changed = true;
    }
  }
  rewriteRefs(document, rename);
  rewriteRefs(schemas, rename);

  const used = new Set<string>();
  const use = (node: unknown) =>
    walk(node, (object) => {
      const ref = object['$ref'];
      if (typeof ref !== 'string' || !ref.startsWith(SCHEMAS)) return;
      const name = ref.slice(SCHEMAS.length);
      if (used.has(name)) return;
      used.add(name);
      use(schemas[name]);
    });
  use(document);

  const plain = new Map<string, string>();
  for (const name of used) {
    const output = name.replace(/Input$/, '');
    if (output !== name && !used.has(output)) plain.set(name, output);
  }
  const finalName = (name: string) => plain.get(name) ?? name;
  rewriteRefs(document, plain);
  const kept: Record<string, Json> = {};
  for (const name of [...used].sort((a, b) => (finalName(a) < finalName(b) ? -1 : 1))) {
    const schema = schemas[name];
    if (schema === undefined) continue;
    rewriteRefs(schema, plain);
    kept[finalName(name)] = schema;
  }
  return kept;
}

/**
 * Names the shared responses that had a pre-route answer merged in (MERGED): after the route's
 * response when that one is used nowhere unmerged, else `{route's}Or{pre-route's}`. Returns the
 * `components.responses` to write.
 */
function nameMergedResponses(paths: Json, document: OpenapiObject): Json {
  const placeholders: Json[] = [];
  const plain = new Set<string>();
  walk(paths, (object) => {
    const ref = object['$ref'];
    if (Array.isArray(object[MERGED])) placeholders.push(object);
    else if (typeof ref === 'string' && ref.startsWith(RESPONSES)) plain.add(ref.slice(RESPONSES.length));
  });
  const docs: Record<string, ResponseDoc> = sharedResponseDocs;
  const merged = new Map<string, ResponseDoc>();
  for (const placeholder of placeholders) {
    const [own = '', preRoute = ''] = placeholder[MERGED] as string[];
    const name = plain.has(own) ? `${own}Or${preRoute}` : own;
    const ownDoc = docs[own];
    const preRouteDoc = docs[preRoute];
    if (ownDoc === undefined || preRouteDoc === undefined) throw new Error(`no shared response ${own} or ${preRoute}`);
    if (!merged.has(name)) merged.set(name, mergeResponses(ownDoc, preRouteDoc));
    delete placeholder[MERGED];
    placeholder['$ref'] = RESPONSES + name;
  }
  const responses: Json = {};
  for (const [name, doc] of Object.entries(docs)) {
    responses[name] = responseObject(merged.get(name) ?? doc, document);
    for (const [mergedName, mergedDoc] of merged)
      if (mergedName.startsWith(`${name}Or`)) responses[mergedName] = responseObject(mergedDoc, document);
  }
  return responses;
}

export const transformObject: SwaggerTransformObject = (input) => {
  const document = input as OpenapiObject;
  const withSchemas = jsonSchemaTransformObject(document) as Json;
  const paths = (withSchemas['paths'] ?? {}) as Record<string, Record<string, Json>>;
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item)) {
      const extras = operation[OPERATION_EXTRAS] as OperationExtras | undefined;
      if (extras === undefined) continue;
      delete operation[OPERATION_EXTRAS];
      operation['responses'] = extras.responses;
      if (isObject(operation['requestBody'])) operation['requestBody']['required'] = extras.requestBodyRequired;
    }
  }
  const components = (withSchemas['components'] ?? {}) as Json;
  const rest = Object.fromEntries(Object.entries(components).filter(([key]) => !['schemas', 'responses', 'headers'].includes(key)));
  const shared = {
    responses: nameMergedResponses(paths, document),
    headers: Object.fromEntries(Object.entries(sharedHeaderDocs).map(([name, doc]) => [name, headerObject(doc, document)])),
  };
  const schemas = tidySchemas({ paths, shared }, (components['schemas'] ?? {}) as Record<string, Json>);
  describeRequestDefaults(paths, schemas);
  const { openapi, info, servers, tags, security } = withSchemas;
  // Written in the order a reader wants: what it is, then the operations, then the parts.
  return {
    openapi,
    info,
    ...(servers !== undefined && { servers }),
    ...(security !== undefined && { security }),
    ...(tags !== undefined && { tags }),
    paths,
    components: { ...rest, ...shared, schemas },
  } as ReturnType<SwaggerTransformObject>;
};

const SCHEMA_LISTS = ['anyOf', 'oneOf', 'allOf', 'prefixItems'] as const;
const SCHEMA_PARTS = ['items', 'additionalProperties', 'not', 'contains'] as const;

/** The component names a schema refers to, directly or through its subschemas. */
function referencedComponents(schema: unknown, into: Set<string>, schemas: Record<string, Json>): void {
  if (Array.isArray(schema)) {
    for (const item of schema) referencedComponents(item, into, schemas);
    return;
  }
  if (!isObject(schema)) return;
  const ref = schema['$ref'];
  if (typeof ref === 'string' && ref.startsWith(SCHEMAS)) {
    const name = ref.slice(SCHEMAS.length);
    if (!into.has(name)) {
      into.add(name);
      referencedComponents(schemas[name], into, schemas);
    }
  }
  for (const value of Object.values(schema)) referencedComponents(value, into, schemas);
}

/** Moves a schema's `default`, and its subschemas', into its description. */
function describeDefaults(schema: unknown): void {
  if (!isObject(schema)) return;
  if (Object.hasOwn(schema, 'default')) {
    const said = `Default: \`${JSON.stringify(schema['default'])}\`.`;
    const description = schema['description'];
    schema['description'] = typeof description === 'string' && description !== '' ? `${description} ${said}` : said;
    delete schema['default'];
  }
  if (isObject(schema['properties'])) for (const property of Object.values(schema['properties'])) describeDefaults(property);
  for (const key of SCHEMA_LISTS) if (Array.isArray(schema[key])) for (const item of schema[key]) describeDefaults(item);
  for (const key of SCHEMA_PARTS) describeDefaults(schema[key]);
}

/**
 * The component schemas of request bodies say their defaults in words, not as `default`:
 * openapi-typescript (and other generators) make a field with a `default` required in a
 * component, because an answer always has it; a client's request need not. The answers' own
 * components (the output side) list those fields as required, so nothing is lost there. Inline
 * request schemas keep `default`: the generators leave those optional already.
 */
function describeRequestDefaults(paths: Record<string, Record<string, Json>>, schemas: Record<string, Json>): void {
  const reached = new Set<string>();
  for (const item of Object.values(paths))
    for (const operation of Object.values(item)) if (isObject(operation)) referencedComponents(operation['requestBody'], reached, schemas);
  for (const name of reached) describeDefaults(schemas[name]);
}
