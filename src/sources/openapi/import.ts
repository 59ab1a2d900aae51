/**
 * OpenAPI 3.0/3.1 document -> registry HTTP tool bodies (issue 30). Pure: no storage, no I/O.
 * Parsed with @apidevtools/swagger-parser because it is maintained, reads 3.0 and 3.1, validates
 * against the official schemas and detects circular $refs. External $refs are never resolved
 * (no file or URL reads) and circular ones are refused, both as a 400 naming the pointer.
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { parse as parseYaml } from 'yaml';
import { RegistryError } from '../../model/errors.js';
import { RESERVED_HEADERS, type HttpMethod } from '../../model/http-target.js';

/** Largest document text accepted: beyond it the import is refused before parsing. */
const DOCUMENT_BYTES_MAX = 10 * 1024 * 1024;
/** Most operations one document may convert. */
const OPERATIONS_MAX = 5000;
/** Expanded-schema budget (nodes visited while copying dereferenced schemas): refuses $ref bombs. */
const EXPANDED_NODES_MAX = 2_000_000;
const NAME_MAX = 64;
/** The registry's DescriptionSchema allows 8192 characters; an import keeps descriptions shorter, since every tool's text reaches agents. */
const DESCRIPTION_MAX = 4000;

export interface OpenApiImportOptions {
  document: string | Record<string, unknown>;
  /** Largest document text (default DOCUMENT_BYTES_MAX). */
  maxBytes?: number;
  prefix: string;
  baseUrl?: string;
  filter?: { tags?: string[]; operationIds?: string[]; pathPrefixes?: string[]; methods?: string[] };
  timeoutMs?: number;
  scopes?: string[];
  scopeMap?: Record<string, string>;
  /**
   * Whether the source's credential fills the document's apiKey schemes (default true): then a
   * parameter that such a scheme names (Petstore's `api_key` header) is the registry's to send,
   * not an argument. Without an API key of the registry's, it stays an argument of the call.
   */
  apiKeyFilled?: boolean;
  /** Where the document was read from: a relative `servers` URL is resolved against it (OpenAPI 3.1 section 4.8.5). */
  relativeTo?: string;
}
export interface ImportedOperation {
  name: string;
  operationId: string | null;
  method: HttpMethod;
  path: string;
  pointer: string;
  /** OpenAPI `deprecated`: a tool body cannot set its status, so the caller applies it. */
  deprecated: boolean;
  body: Record<string, unknown>;
  security: Array<Record<string, string[]>>;
}
type SchemeType = 'apiKey' | 'http' | 'oauth2' | 'openIdConnect' | 'mutualTLS';
export interface ImportedDocument {
  title: string;
  version: string;
  operations: ImportedOperation[];
  securitySchemes: Record<
    string,
    { type: SchemeType; in?: 'header' | 'query' | 'cookie'; name?: string; scheme?: string; tokenUrl?: string; scopes?: string[] }
  >;
  skipped: Array<{ pointer: string; reason: string }>;
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function bad(path: string, message: string): RegistryError {
  return new RegistryError('TR_ERR_VALIDATION', `OpenAPI document: ${message}`, { fieldErrors: [{ path, message }] });
}
const escape = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1');

/** Finds $refs before dereferencing: external ones are refused, internal ones must resolve. */
function checkRefs(doc: Json): void {
  const seen = new Set<unknown>();
  const walk = (node: unknown, at: string): void => {
    if (node === null || typeof node !== 'object' || seen.has(node)) return;
    seen.add(node);
    const ref = (node as Json).$ref;
    if (typeof ref === 'string') {
      if (!ref.startsWith('#')) throw bad(at, `external $ref ${ref} is not resolved`);
      let target: unknown = doc;
      for (const part of ref.slice(1).split('/').slice(1)) {
        const key = decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~');
        target = target !== null && typeof target === 'object' ? (target as Json)[key] : undefined;
        if (target === undefined) throw bad(at, `$ref ${ref} does not resolve`);
      }
    }
    for (const [k, v] of Object.entries(node)) walk(v, `${at}/${escape(k)}`);
  };
  walk(doc, '');
}

/** Resolves internal $refs by copy within the node budget; a cycle is refused naming its pointer. */
function expand(doc: Json, node: unknown, at: string, stack: string[], budget: { n: number }): unknown {
  if (--budget.n < 0) throw bad(at, 'expanded schemas exceed the size budget');
  if (node === null || typeof node !== 'object') return node;
  if (Array.isArray(node)) return node.map((v, i) => expand(doc, v, `${at}/${i}`, stack, budget));
  const ref = (node as Json).$ref;
  if (typeof ref === 'string') {
    if (stack.includes(ref)) throw bad(at, `circular $ref ${ref}`);
    let target: unknown = doc;
    for (const part of ref.slice(2).split('/')) target = (target as Json)[decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~')];
    return expand(doc, target, at, [...stack, ref], budget);
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(node)) out[k] = expand(doc, v, `${at}/${escape(k)}`, stack, budget);
  return out;
}

/** 3.0 `nullable` -> a type list; `readOnly`/`writeOnly` properties dropped per direction; OpenAPI-only keywords removed. */
function toJsonSchema(schema: unknown, drop: 'readOnly' | 'writeOnly'): unknown {
  if (schema === null || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) return schema.map((s) => toJsonSchema(s, drop));
  const out: Json = {};
  for (const [k, v] of Object.entries(schema as Json)) {
    // OpenAPI-only keywords and `x-` extensions are not JSON Schema 2020-12: the registry refuses unknown keywords.
    if (['nullable', 'discriminator', 'xml', 'externalDocs', 'example'].includes(k) || k.startsWith('x-')) continue;
    if (k === 'properties' && v && typeof v === 'object') {
      const props: Json = {};
      for (const [p, s] of Object.entries(v as Json)) if (!(s && (s as Json)[drop] === true)) props[p] = toJsonSchema(s, drop);
      out.properties = props;
    } else out[k] = toJsonSchema(v, drop);
  }
  if ((schema as Json).nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  if (Array.isArray(out.required) && out.properties) out.required = out.required.filter((r: string) => r in out.properties);
  return out;
}

/** The value of a text that is JSON (it starts with `{`), or undefined to read it as YAML. */
function jsonOrUndefined(text: string): unknown {
  if (!text.trimStart().startsWith('{')) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];
const isJson = (type: string) => /^application\/(.+\+)?json(;.*)?$/i.test(type);

export async function importOpenApi(options: OpenApiImportOptions): Promise<ImportedDocument> {
  if (!/^[a-zA-Z0-9_-]{1,32}$/.test(options.prefix)) throw bad('/prefix', 'prefix must be 1-32 of [a-zA-Z0-9_-]');
  let doc: Json;
  if (typeof options.document === 'string') {
    const max = options.maxBytes ?? DOCUMENT_BYTES_MAX;
    if (Buffer.byteLength(options.document) > max) throw bad('', `document too large (over ${max} bytes)`);
    try {
      // JSON first when it looks like JSON: the YAML parser takes 10 to 50 times as long for the same text.
      doc = (jsonOrUndefined(options.document) ?? parseYaml(options.document, { maxAliasCount: 100 })) as Json;
    } catch (error) {
      throw bad('', `not JSON or YAML: ${(error as Error).message.split('\n')[0]}`);
    }
  } else doc = structuredClone(options.document) as Json;
  if (doc === null || typeof doc !== 'object' || typeof doc.openapi !== 'string' || !/^3\.[01]\./.test(doc.openapi))
    throw bad('/openapi', 'not an OpenAPI 3.0 or 3.1 document');
  // Before the validation, which costs time per operation: a document can hold no more than
  // four times the operations it may keep, whatever its filter keeps.
  const paths: unknown = doc.paths;
  let declared = 0;
  if (paths !== null && typeof paths === 'object')
    for (const item of Object.values(paths as Json))
      if (item !== null && typeof item === 'object') declared += METHODS.filter((m) => m.toLowerCase() in item).length;
  if (declared > 4 * OPERATIONS_MAX)
    throw bad('/paths', `${declared} operations, more than the ${4 * OPERATIONS_MAX} a document may declare`);
  checkRefs(doc);
  try {
    await SwaggerParser.validate(structuredClone(doc) as never, { resolve: { external: false }, dereference: { circular: 'ignore' } });
  } catch (error) {
    throw bad('', `invalid: ${(error as Error).message.slice(0, 500)}`);
  }
  const budget = { n: EXPANDED_NODES_MAX };
  let baseUrl = options.baseUrl;
  if (baseUrl === undefined) {
    const server = doc.servers?.[0];
    let url: string = server?.url ?? '';
    for (const [k, v] of Object.entries((server?.variables ?? {}) as Json)) url = url.replaceAll(`{${k}}`, String(v.default));
    if (!/^https?:\/\//.test(url) && options.relativeTo !== undefined && URL.canParse(url, options.relativeTo))
      url = new URL(url, options.relativeTo).href;
    if (!/^https?:\/\//.test(url)) throw bad('/servers/0/url', 'a relative or missing servers url needs baseUrl');
    baseUrl = url;
  }
  baseUrl = baseUrl.replace(/\/$/, '');
  const schemes: ImportedDocument['securitySchemes'] = {};
  for (const [name, s] of Object.entries((doc.components?.securitySchemes ?? {}) as Json)) {
    const scheme = expand(doc, s, `/components/securitySchemes/${escape(name)}`, [], budget) as Json;
    const flows = Object.values((scheme.flows ?? {}) as Json) as Json[];
    schemes[name] = {
      type: scheme.type,
      ...(scheme.in ? { in: scheme.in } : {}),
      ...(scheme.name ? { name: scheme.name } : {}),
      ...(scheme.scheme ? { scheme: scheme.scheme } : {}),
      ...(flows.find((f) => f.tokenUrl) ? { tokenUrl: flows.find((f) => f.tokenUrl)!.tokenUrl } : {}),
      ...(flows.length ? { scopes: [...new Set(flows.flatMap((f) => Object.keys(f.scopes ?? {})))] } : {}),
    };
  }
  const credentialParams = new Set(
    Object.values(options.apiKeyFilled === false ? {} : schemes)
      .filter((s) => s.type === 'apiKey' && s.in && s.name)
      .map((s) => `${s.in}:${s.in === 'header' ? s.name!.toLowerCase() : s.name}`),
  );
  const operations: ImportedOperation[] = [];
  const skipped: ImportedDocument['skipped'] = [];
  const ids = new Map<string, string>();
  const names = new Set<string>();
  const f = options.filter ?? {};
  for (const [path, item0] of Object.entries((doc.paths ?? {}) as Json)) {
    const item = expand(doc, item0, `/paths/${escape(path)}`, [], budget) as Json;
    for (const method of METHODS) {
      const op = item[method.toLowerCase()] as Json | undefined;
      if (!op) continue;
      const pointer = `/paths/${escape(path)}/${method.toLowerCase()}`;
      const id: string | null = op.operationId ?? null;
      if (id !== null) {
        if (ids.has(id)) throw bad(pointer, `duplicate operationId ${id} (also at ${ids.get(id)})`);
        ids.set(id, pointer);
      }
      if (f.tags && !(op.tags ?? []).some((t: string) => f.tags!.includes(t))) continue;
      if (f.operationIds && (id === null || !f.operationIds.includes(id))) continue;
      if (f.pathPrefixes && !f.pathPrefixes.some((p) => path.startsWith(p))) continue;
      if (f.methods && !f.methods.map((m) => m.toUpperCase()).includes(method)) continue;
      if (operations.length >= OPERATIONS_MAX) throw bad('/paths', `more than ${OPERATIONS_MAX} operations`);
      const properties: Json = {};
      const required: string[] = [];
      const args: Json = {};
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])] as Json[];
      for (const p of params) {
        // A parameter that a security scheme names (Petstore's api_key header) is a credential the
        // outbound credential machinery fills, not an argument; nor is a header the registry sets.
        const name = String(p.name);
        // A header the registry sets itself (http-target.ts refuses it as an argument) is left out.
        if (p.in === 'header' && RESERVED_HEADERS.has(name.toLowerCase())) continue;
        if (credentialParams.has(`${p.in}:${p.in === 'header' ? name.toLowerCase() : name}`)) continue;
        properties[p.name] = toJsonSchema(p.schema ?? {}, 'readOnly');
        if (p.description && typeof properties[p.name] === 'object') properties[p.name].description ??= p.description;
        if (p.required || p.in === 'path') required.push(p.name);
        const placement: Json = { in: p.in };
        if (p.in === 'query' && p.style) placement.style = p.style;
        if (p.in === 'query' && typeof p.explode === 'boolean') placement.explode = p.explode;
        args[p.name] = placement;
      }
      if (op.requestBody) {
        const content = (op.requestBody.content ?? {}) as Json;
        const type = Object.keys(content).find(isJson);
        if (type === undefined) {
          skipped.push({ pointer, reason: 'only non-JSON request bodies' });
          continue;
        }
        const schema = toJsonSchema(content[type].schema ?? {}, 'readOnly') as Json;
        if (schema.type === 'object' && schema.properties) {
          // A body property named like a parameter (updateUser's `username`) becomes `body_<name>`
          // (`body_<name>_2`, ... where that is taken too, by a parameter or another property),
          // placed under its own name in the body, so that every one stays an argument.
          const keys = Object.keys(schema.properties as Json);
          const taken = new Set([...Object.keys(args), ...keys]);
          const renamed = new Map<string, string>();
          for (const k of keys) {
            if (!(k in args)) continue;
            let arg = `body_${k}`;
            for (let i = 2; taken.has(arg); i++) arg = `body_${k}_${i}`;
            taken.add(arg);
            renamed.set(k, arg);
          }
          const argOf = (k: string) => renamed.get(k) ?? k;
          for (const [k, v] of Object.entries(schema.properties as Json)) {
            const arg = argOf(k);
            properties[arg] = v;
            args[arg] = arg === k ? { in: 'body' } : { in: 'body', name: k };
          }
          for (const r of schema.required ?? []) required.push(argOf(r));
        } else {
          // A non-object body becomes one argument `body`: its whole value is the JSON body.
          properties.body = schema;
          args.body = { in: 'body' };
          if (op.requestBody.required) required.push('body');
        }
      }
      const security = (op.security ?? doc.security ?? []) as Array<Record<string, string[]>>;
      const map = (t: string) => options.scopeMap?.[t] ?? t;
      const entries = security.map((req) =>
        [...new Set(Object.entries(req).flatMap(([s, sc]) => (sc.length ? sc : [s]).map(map)))].sort().join(' '),
      );
      const scopes = entries.length === 0 || entries.includes('') ? (options.scopes ?? []) : [...new Set(entries)];
      let name = (options.prefix + (id ?? `${method.toLowerCase()}_${path}`)).replace(/[^a-zA-Z0-9_-]+/g, '_').slice(0, NAME_MAX);
      for (let i = 2; names.has(name); i++) name = name.slice(0, NAME_MAX - String(i).length - 1) + `_${i}`;
      names.add(name);
      const response = Object.entries((op.responses ?? {}) as Json).find(([code]) => /^2/.test(code))?.[1] as Json | undefined;
      const outType = Object.keys(response?.content ?? {}).find(isJson);
      const output = outType ? (toJsonSchema(response!.content[outType].schema, 'writeOnly') as Json) : undefined;
      const text = [op.summary, op.description].filter(Boolean).join('\n\n') || `${method} ${path}`;
      const body: Json = {
        name,
        type: 'http',
        description: text.slice(0, DESCRIPTION_MAX),
        inputSchema: { type: 'object', properties, ...(required.length ? { required: [...new Set(required)] } : {}) },
        target: { baseUrl, method, path, arguments: args },
        scopes,
        ...(output?.type === 'object' ? { outputSchema: output } : {}),
        ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
      };
      operations.push({ name, operationId: id, method, path, pointer, deprecated: op.deprecated === true, body, security });
    }
  }
  if (operations.length === 0 && skipped.length > 0) throw bad(skipped[0]!.pointer, 'no usable operation: ' + skipped[0]!.reason);
  return { title: doc.info?.title ?? '', version: doc.info?.version ?? '', operations, securitySchemes: schemes, skipped };
}
