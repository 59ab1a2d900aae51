/**
 * Keeps openapi.yaml in step with the app: the document is valid OpenAPI 3.1, it documents
 * exactly the routes the app registers, the app serves it byte for byte, and real responses
 * (status, content type, required headers, body) match what it declares.
 */
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ERRORS } from '../src/model/errors.js';
import { bearer, createTestApp, type TestApp } from './helpers/app.js';
import { seed } from './helpers/fixtures.js';

const ROOT = join(import.meta.dirname, '..');
const DOC_PATH = join(ROOT, 'openapi.yaml');
const DOC_TEXT = readFileSync(DOC_PATH, 'utf8');
const doc = asObject(parse(DOC_TEXT), 'openapi.yaml');

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

// -------------------------------------------------------------------------------------------
// Reading the document

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asObject(value: unknown, what: string): Record<string, unknown> {
  if (!isObject(value)) throw new Error(`${what} is not an object`);
  return value;
}

/** Follows a local `$ref` (JSON pointer into the document). */
function pointer(ref: string): unknown {
  if (!ref.startsWith('#/')) throw new Error(`only local $refs are supported: ${ref}`);
  let node: unknown = doc;
  for (const raw of ref.slice(2).split('/')) {
    const key = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    node = asObject(node, ref)[key];
    if (node === undefined) throw new Error(`dangling $ref ${ref}`);
  }
  return node;
}

/** A Reference Object or the object itself, resolved. */
function deref(value: unknown, what: string): Record<string, unknown> {
  const object = asObject(value, what);
  return typeof object['$ref'] === 'string' ? deref(pointer(object['$ref']), object['$ref']) : object;
}

function schemaNamed(name: string): Record<string, unknown> {
  return asObject(pointer(`#/components/schemas/${name}`), name);
}

function operation(path: string, method: string): Record<string, unknown> {
  const item = asObject(asObject(doc['paths'], 'paths')[path], `paths[${path}]`);
  return asObject(item[method], `${method.toUpperCase()} ${path}`);
}

/** The query parameters an operation documents (its path's included), by name. */
function queryParameters(path: string, method: string): Map<string, Record<string, unknown>> {
  const item = asObject(asObject(doc['paths'], 'paths')[path], `paths[${path}]`);
  const all = [...((item['parameters'] as unknown[] | undefined) ?? []), ...((operation(path, method)['parameters'] as unknown[] | undefined) ?? [])];
  const params = new Map<string, Record<string, unknown>>();
  for (const p of all) {
    const param = deref(p, `${method.toUpperCase()} ${path} parameter`);
    if (param['in'] === 'query') params.set(String(param['name']), param);
  }
  return params;
}

function documentedOperations(): Set<string> {
  const ops = new Set<string>();
  for (const [path, item] of Object.entries(asObject(doc['paths'], 'paths'))) {
    for (const key of Object.keys(asObject(item, path))) {
      if (HTTP_METHODS.includes(key)) ops.add(`${key.toUpperCase()} ${path}`);
    }
  }
  return ops;
}

// -------------------------------------------------------------------------------------------
// A small JSON Schema checker for the keywords the document uses (2020-12 semantics).

function typeMatches(type: unknown, value: unknown): boolean {
  switch (type) {
    case 'object':
      return isObject(value);
    case 'array':
      return Array.isArray(value);
    case 'string':
      return typeof value === 'string';
    case 'boolean':
      return typeof value === 'boolean';
    case 'number':
      return typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return Number.isInteger(value);
    case 'null':
      return value === null;
    default:
      throw new Error(`unknown JSON Schema type ${String(type)}`);
  }
}

function jsonEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

const SUPPORTED_KEYWORDS = new Set([
  '$ref', 'type', 'const', 'enum', 'allOf', 'oneOf', 'anyOf', 'not', 'pattern', 'minLength', 'maxLength',
  'minimum', 'maximum', 'items', 'minItems', 'maxItems', 'required', 'properties', 'additionalProperties',
  'propertyNames', 'format', 'description', 'title', 'default', 'example', 'examples',
]);

/** Returns the problems of `value` against `schema`, each with a path. */
function check(schema: unknown, value: unknown, at = '$'): string[] {
  if (schema === true || schema === undefined) return [];
  if (schema === false) return [`${at}: not allowed`];
  const s = asObject(schema, `schema at ${at}`);
  for (const keyword of Object.keys(s)) {
    if (!SUPPORTED_KEYWORDS.has(keyword)) throw new Error(`the test's schema checker does not know "${keyword}" (at ${at})`);
  }
  const errors: string[] = [];
  if (typeof s['$ref'] === 'string') errors.push(...check(pointer(s['$ref']), value, at));
  if ('const' in s && !jsonEqual(s['const'], value)) errors.push(`${at}: must be ${JSON.stringify(s['const'])}`);
  if (Array.isArray(s['enum']) && !s['enum'].some((v) => jsonEqual(v, value))) {
    errors.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(s['enum'])}`);
  }
  if (s['type'] !== undefined) {
    const types = Array.isArray(s['type']) ? s['type'] : [s['type']];
    if (!types.some((t) => typeMatches(t, value))) return [...errors, `${at}: must be of type ${types.join(' or ')}`];
  }
  for (const sub of (s['allOf'] as unknown[] | undefined) ?? []) errors.push(...check(sub, value, at));
  if (Array.isArray(s['oneOf'])) {
    const results = s['oneOf'].map((sub) => check(sub, value, at));
    const matches = results.filter((r) => r.length === 0).length;
    if (matches !== 1) errors.push(`${at}: matches ${matches} of oneOf (${results.map((r) => r[0] ?? 'ok').join(' | ')})`);
  }
  if (Array.isArray(s['anyOf']) && !s['anyOf'].some((sub) => check(sub, value, at).length === 0)) {
    errors.push(`${at}: matches none of anyOf`);
  }
  if (s['not'] !== undefined && check(s['not'], value, at).length === 0) errors.push(`${at}: matches "not"`);

  if (typeof value === 'string') {
    const length = [...value].length;
    if (typeof s['pattern'] === 'string' && !new RegExp(s['pattern'], 'u').test(value)) {
      errors.push(`${at}: ${JSON.stringify(value)} does not match ${s['pattern']}`);
    }
    if (typeof s['minLength'] === 'number' && length < s['minLength']) errors.push(`${at}: shorter than ${s['minLength']}`);
    if (typeof s['maxLength'] === 'number' && length > s['maxLength']) errors.push(`${at}: longer than ${s['maxLength']}`);
  }
  if (typeof value === 'number') {
    if (typeof s['minimum'] === 'number' && value < s['minimum']) errors.push(`${at}: below ${s['minimum']}`);
    if (typeof s['maximum'] === 'number' && value > s['maximum']) errors.push(`${at}: above ${s['maximum']}`);
  }
  if (Array.isArray(value)) {
    if (typeof s['minItems'] === 'number' && value.length < s['minItems']) errors.push(`${at}: fewer than ${s['minItems']} items`);
    if (typeof s['maxItems'] === 'number' && value.length > s['maxItems']) errors.push(`${at}: more than ${s['maxItems']} items`);
    if (s['items'] !== undefined) value.forEach((item, i) => errors.push(...check(s['items'], item, `${at}[${i}]`)));
  }
  if (isObject(value)) {
    for (const key of (s['required'] as string[] | undefined) ?? []) {
      if (!(key in value)) errors.push(`${at}: missing required property "${key}"`);
    }
    const properties = (s['properties'] as Record<string, unknown> | undefined) ?? {};
    for (const [key, item] of Object.entries(value)) {
      if (s['propertyNames'] !== undefined) errors.push(...check(s['propertyNames'], key, `${at} key ${JSON.stringify(key)}`));
      if (key in properties) errors.push(...check(properties[key], item, `${at}.${key}`));
      else if (s['additionalProperties'] !== undefined) errors.push(...check(s['additionalProperties'], item, `${at}.${key}`));
    }
  }
  return errors;
}

function expectValid(schema: unknown, value: unknown, what: string): void {
  expect(check(schema, value), what).toEqual([]);
}

function expectInvalid(schema: unknown, value: unknown, what: string): void {
  expect(check(schema, value).length, what).toBeGreaterThan(0);
}

// -------------------------------------------------------------------------------------------
// The app's routes

/**
 * Every METHOD path pair the app serves, read from `printRoutes({ commonPrefix: false })`.
 * Each tree line is `<indent>├── <segment> (METHOD, ...)`, 4 characters of indent per level,
 * and a route's path is its ancestors' segments concatenated. HEAD routes that Fastify adds
 * for GET routes are left out.
 */
function appOperations(app: FastifyInstance): Set<string> {
  const stack: string[] = [];
  const found: { method: string; path: string }[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^((?:│ {3}| {4})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/u.exec(line);
    if (!match) {
      if (line.trim() !== '') throw new Error(`cannot read printRoutes line: ${JSON.stringify(line)}`);
      continue;
    }
    const depth = (match[1] ?? '').length / 4;
    stack.length = depth;
    stack.push(match[2] ?? '');
    const path = stack.join('');
    for (const method of match[3]?.split(', ') ?? []) found.push({ method, path });
  }
  const ops = new Set<string>();
  for (const { method, path } of found) {
    // Check the reading against the router itself.
    expect(app.hasRoute({ method: method as never, url: path }), `${method} ${path} read from printRoutes`).toBe(true);
    if (method === 'HEAD' && found.some((r) => r.method === 'GET' && r.path === path)) continue;
    ops.add(`${method} ${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  }
  return ops;
}

// -------------------------------------------------------------------------------------------
// Checking responses against the document

/** Operations a contract check has exercised with a 2xx or 304. */
const exercised = new Set<string>();

/** What the checks read of a response: app.inject's, or one read off a socket. */
type Answer = Pick<LightMyRequestResponse, 'statusCode' | 'body'> & { headers: IncomingHttpHeaders | LightMyRequestResponse['headers']; json(): unknown };

/**
 * Asserts every query parameter of `url` is documented for the operation and, when the request
 * was accepted, that its value matches the parameter's schema (integers read as numbers).
 */
function expectDocumentedQuery(path: string, method: string, url: string, status: number): void {
  const documented = queryParameters(path, method);
  for (const [name, value] of new URL(url, 'http://registry.test').searchParams) {
    const param = documented.get(name);
    expect(param, `${method.toUpperCase()} ${path}: query parameter ${name} is documented`).toBeDefined();
    if (param === undefined || status >= 300) continue;
    const schema = param['schema'];
    const numeric = deref(schema, `${path} ${name} schema`)['type'] === 'integer' && /^-?[0-9]+$/u.test(value);
    expectValid(schema, numeric ? Number(value) : value, `${method.toUpperCase()} ${path}: query parameter ${name}=${value}`);
  }
}

/**
 * Asserts the response's status is documented for the operation, its content type is one the
 * document lists, its required headers are present and match, and its body matches the schema.
 */
function expectDocumented(path: string, method: string, res: Answer): unknown {
  const label = `${method.toUpperCase()} ${path} -> ${res.statusCode}`;
  const responses = asObject(operation(path, method)['responses'], `${label} responses`);
  const documented = responses[String(res.statusCode)];
  expect(documented, `${label} is documented (body: ${res.body.slice(0, 300)})`).toBeDefined();
  const response = deref(documented, label);

  for (const [name, header] of Object.entries((response['headers'] as Record<string, unknown> | undefined) ?? {})) {
    const spec = deref(header, `${label} header ${name}`);
    const value = res.headers[name.toLowerCase()];
    if (spec['required'] === true) expect(value, `${label} header ${name}`).toBeDefined();
    if (typeof value === 'string') expectValid(spec['schema'], value, `${label} header ${name}`);
  }

  const content = response['content'] as Record<string, unknown> | undefined;
  let body: unknown;
  if (content === undefined) {
    expect(res.body, `${label} has no body`).toBe('');
  } else {
    const mediaType = String(res.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
    const media = content[mediaType];
    expect(media, `${label} content type ${mediaType} is documented`).toBeDefined();
    const schema = asObject(media, `${label} ${mediaType}`)['schema'];
    body = mediaType.endsWith('json') ? res.json() : res.body;
    expectValid(schema, body, `${label} body`);
  }
  if (res.statusCode < 300 || res.statusCode === 304) exercised.add(`${method.toUpperCase()} ${path}`);
  return body;
}

/** The events of a `text/event-stream` body: one `event:` line and one `data:` line of JSON each. */
function sseEvents(text: string): { event: string; data: unknown }[] {
  return text
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      const match = /^event: ([a-z]+)\ndata: (.*)$/u.exec(block);
      if (!match) throw new Error(`not a server-sent event: ${JSON.stringify(block)}`);
      return { event: match[1] ?? '', data: JSON.parse(match[2] ?? '') as unknown };
    });
}

interface ChangeFeedEvent {
  id?: number;
  data: Record<string, unknown>;
}

/** The `change` events of a `GET /changes` body, each with its `id:` line if it has one; comments are skipped. */
function changeEvents(text: string): ChangeFeedEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block !== '' && !block.startsWith(':'))
    .map((block) => {
      const match = /^(?:id: ([0-9]+)\n)?event: change\ndata: (.*)$/u.exec(block);
      if (!match) throw new Error(`not a change event: ${JSON.stringify(block)}`);
      const data = JSON.parse(match[2] ?? '') as Record<string, unknown>;
      return match[1] === undefined ? { data } : { id: Number(match[1]), data };
    });
}

/** Whether a change-feed text holds the whole event that carries `id: <index>`. */
const hasEventId = (index: number) => (text: string) => new RegExp(`(?:^|\n)id: ${index}\nevent: change\ndata: [^\n]*\n\n`, 'u').test(text);

/** An open `GET /changes` stream, read over a real socket (it never ends, so app.inject cannot read it). */
interface OpenStream {
  /** The answer so far, cut after the last whole event. */
  answer(): Answer;
  /** Resolves once the text received so far satisfies `done`. */
  until(done: (text: string) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

function openStream(port: number, path: string, headers: Record<string, string>): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false });
    req.on('error', reject);
    req.on('response', (res) => {
      let text = '';
      const checks = new Set<() => void>();
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        for (const check of checks) check();
      });
      // Destroying the request ends the response with an error; that is how the test closes it.
      res.on('error', () => undefined);
      const body = () => text.slice(0, text.lastIndexOf('\n\n') + 2);
      resolve({
        answer: () => ({ statusCode: res.statusCode ?? 0, headers: res.headers, body: body(), json: () => JSON.parse(body()) as unknown }),
        until: (done, timeoutMs = 5000) =>
          new Promise<void>((settle, fail) => {
            const timer = setTimeout(() => {
              checks.delete(check);
              fail(new Error(`GET ${path}: nothing matching after ${timeoutMs} ms; received ${JSON.stringify(text.slice(-600))}`));
            }, timeoutMs);
            const check = () => {
              if (!done(text)) return;
              clearTimeout(timer);
              checks.delete(check);
              settle();
            };
            checks.add(check);
            check();
          }),
        close: () => req.destroy(),
      });
    });
    req.end();
  });
}

/**
 * Checks a change feed's events against the document and its promises: each `data` is a
 * ChangeEvent, indexes never go down, and exactly the last event of each write carries `id:`,
 * equal to the write's index. Returns the events grouped by write.
 */
function expectChangeFeed(events: ChangeFeedEvent[], what: string): ChangeFeedEvent[][] {
  const groups: ChangeFeedEvent[][] = [];
  let group: ChangeFeedEvent[] = [];
  for (const event of events) {
    expectValid(schemaNamed('ChangeEvent'), event.data, `${what}: ${JSON.stringify(event.data)}`);
    const previous = group.at(-1) ?? groups.at(-1)?.at(-1);
    if (previous) expect(Number(event.data['index']), `${what}: indexes never go down`).toBeGreaterThanOrEqual(Number(previous.data['index']));
    if (group.length > 0) expect(event.data['index'], `${what}: a write's events come in a row`).toBe(group[0]?.data['index']);
    group.push(event);
    if (event.id !== undefined) {
      expect(event.id, `${what}: the id is the write's index`).toBe(event.data['index']);
      groups.push(group);
      group = [];
    }
  }
  expect(group, `${what}: the last event of a write carries an id`).toEqual([]);
  for (let i = 1; i < groups.length; i++) {
    expect(Number(groups[i]?.[0]?.data['index']), `${what}: one id per write`).toBeGreaterThan(Number(groups[i - 1]?.[0]?.data['index']));
  }
  return groups;
}

// -------------------------------------------------------------------------------------------
// A tiny HTTP tool for the invoke route: POST /echo answers {echo: <arguments>}, POST /fail
// answers 500, POST /slow answers after 2 s (longer than the slow tool's timeoutMs).

function startToolServer(): Promise<Server> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      if (req.method !== 'POST') {
        res.writeHead(405).end();
      } else if (req.url === '/echo') {
        const text = Buffer.concat(chunks).toString('utf8');
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: text === '' ? null : JSON.parse(text) }));
      } else if (req.url === '/fail') {
        res.writeHead(500, { 'content-type': 'text/plain' }).end('the tool broke');
      } else if (req.url === '/slow') {
        const timer = setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('"late"'), 2000);
        res.on('close', () => clearTimeout(timer));
      } else {
        res.writeHead(404).end();
      }
    });
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

// -------------------------------------------------------------------------------------------

describe('openapi.yaml', () => {
  let handle: TestApp;
  let app: FastifyInstance;
  let toolServer: Server;
  let toolPort: number;

  beforeAll(async () => {
    handle = await createTestApp();
    app = handle.app;
    await app.ready();
    toolServer = await startToolServer();
    toolPort = (toolServer.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await handle?.close();
    if (toolServer) {
      toolServer.closeAllConnections();
      await new Promise<void>((resolve, reject) => toolServer.close((err) => (err ? reject(err) : resolve())));
    }
  });

  /** Injects `options` (its url a concrete path) and checks the answer against `docPath`. */
  async function call(docPath: string, options: InjectOptions & { method: string; url: string }): Promise<{
    res: LightMyRequestResponse;
    body: unknown;
  }> {
    const res = await app.inject(options);
    expectDocumentedQuery(docPath, options.method.toLowerCase(), options.url, res.statusCode);
    return { res, body: expectDocumented(docPath, options.method.toLowerCase(), res) };
  }

  it('is a valid OpenAPI 3.1 document', async () => {
    expect(String(doc['openapi'])).toMatch(/^3\.1\./);
    const validated = await SwaggerParser.validate(DOC_PATH);
    expect('openapi' in validated && validated.openapi).toMatch(/^3\.1\./);
  });

  it('uses only patterns that compile as ECMA-262 unicode regular expressions', () => {
    const patterns: string[] = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (isObject(node)) {
        for (const [key, value] of Object.entries(node)) {
          if (key === 'pattern' && typeof value === 'string') patterns.push(value);
          else walk(value);
        }
      }
    };
    walk(doc);
    expect(patterns.length).toBeGreaterThan(5);
    for (const p of patterns) expect(() => new RegExp(p, 'u'), p).not.toThrow();
  });

  it('documents exactly the routes the app registers', () => {
    const inApp = appOperations(app);
    const inDoc = documentedOperations();
    expect([...inApp].filter((op) => !inDoc.has(op)), 'routes missing from openapi.yaml').toEqual([]);
    expect([...inDoc].filter((op) => !inApp.has(op)), 'documented operations the app does not serve').toEqual([]);
    for (const op of inDoc) {
      const [method = '', path = ''] = op.split(' ');
      expect(app.hasRoute({ method: method as never, url: path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1') }), op).toBe(true);
    }
    expect(inDoc.size).toBeGreaterThanOrEqual(15);
  });

  it('is served by GET /openapi.yaml byte for byte', async () => {
    const { res, body } = await call('/openapi.yaml', { method: 'GET', url: '/openapi.yaml' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/yaml/);
    expect(body).toBe(DOC_TEXT);
    expect(parse(res.body)).toEqual(doc);
  });

  it("has examples that match their own schemas", () => {
    let count = 0;
    for (const [name, schema] of Object.entries(asObject(asObject(doc['components'], 'components')['schemas'], 'schemas'))) {
      const example = asObject(schema, name)['example'];
      if (example === undefined) continue;
      expectValid(schema, example, `example of ${name}`);
      count++;
    }
    const walkResponses = (responses: unknown, where: string) => {
      for (const [status, response] of Object.entries(asObject(responses, where))) {
        const content = deref(response, `${where} ${status}`)['content'];
        if (!isObject(content)) continue;
        for (const [type, media] of Object.entries(content)) {
          const { schema, example } = asObject(media, `${where} ${status} ${type}`);
          if (example === undefined) continue;
          expectValid(schema, example, `${where} ${status} ${type} example`);
          count++;
        }
      }
    };
    walkResponses(asObject(doc['components'], 'components')['responses'], 'components.responses');
    for (const op of documentedOperations()) {
      const [method = '', path = ''] = op.split(' ');
      walkResponses(operation(path, method.toLowerCase())['responses'], op);
    }
    expect(count).toBeGreaterThan(5);
  });

  it('describes the request bodies the registry accepts, and not others', () => {
    const tool = schemaNamed('ToolDescriptor');
    const service = schemaNamed('ToolServiceDescriptor');
    for (const name of ['calculator', 'database_query', 'file_reader', 'simulation_data', 'weather_forecast', 'tell-joke', 'query-customers', 'query-products']) {
      expectValid(tool, seed(name), `seed ${name} as ToolDescriptor`);
    }
    for (const name of ['joke-service', 'joke-service.topic-form', 'custom-rag']) {
      expectValid(service, seed(name), `seed ${name} as ToolServiceDescriptor`);
    }
    expectValid(service, { id: 'svc', topic: 'svc', 'config-params': ['a', { name: 'b', required: true }] }, 'bare config params');
    const bundle: unknown = JSON.parse(readFileSync(join(ROOT, 'examples', 'seed.json'), 'utf8'));
    expectValid(schemaNamed('ImportBundle'), bundle, 'examples/seed.json as ImportBundle');

    expectInvalid(tool, { ...seed('calculator'), foo: 1 }, 'HTTP tool with an unknown field');
    expectInvalid(tool, { ...seed('calculator'), endpoint: 'tools/calculator' }, 'relative endpoint');
    expectInvalid(tool, { ...seed('tell-joke'), style: { nested: true } }, 'object config value');
    expectInvalid(tool, { ...seed('tell-joke'), service: undefined }, 'message-bus tool without service');
    expectInvalid(service, { ...seed('joke-service'), topic: 'joke' }, 'both topic and queues');
    expectInvalid(service, { id: 'svc', 'request-queue': 'non-persistent://tg/request/x' }, 'one queue only');
    expectInvalid(service, { id: 'svc', topic: 'x', 'config-params': ['name'] }, 'config param named like a tool field');
    expectInvalid(schemaNamed('ImportBundle'), { tools: [], extra: [] }, 'bundle with an unknown key');
  });

  it('matches real responses, route by route', async () => {
    const admin = bearer(handle.token(['registry:write']));
    const agent = bearer(handle.token(['calculator:use']));

    // Discovery, empty, then conditional.
    const first = await call('/', { method: 'GET', url: '/' });
    expect(first.res.statusCode).toBe(200);
    const etag = String(first.res.headers['etag']);
    expect((await call('/', { method: 'GET', url: '/', headers: { 'if-none-match': `W/${etag}` } })).res.statusCode).toBe(304);

    // Tools: create, replace, refusals.
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', headers: admin, payload: seed('calculator') })).res.statusCode).toBe(201);
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', headers: admin, payload: seed('calculator') })).res.statusCode).toBe(200);
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', payload: seed('calculator') })).res.statusCode).toBe(401);
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', headers: agent, payload: seed('calculator') })).res.statusCode).toBe(403);
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', headers: admin, payload: { name: 'x', foo: 1 } })).res.statusCode).toBe(400);
    const unsupported = { ...admin, 'content-type': 'application/xml' };
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', headers: unsupported, payload: '<tool/>' })).res.statusCode).toBe(415);
    const huge = { ...seed('calculator'), description: 'x'.repeat(handle.config.bodyLimit) };
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', headers: admin, payload: huge })).res.statusCode).toBe(413);
    const { name: _name, ...nameless } = seed('weather_forecast');
    expect((await call('/tools/{name}', { method: 'PUT', url: '/tools/weather_forecast', headers: admin, payload: nameless })).res.statusCode).toBe(201);
    expect((await call('/tools/{name}', { method: 'PUT', url: '/tools/weather_forecast', headers: admin, payload: nameless })).res.statusCode).toBe(200);
    expect((await call('/tools/{name}', { method: 'PUT', url: '/tools/other', headers: admin, payload: seed('weather_forecast') })).res.statusCode).toBe(400);

    // Tool services.
    const putService = (id: string, payload: unknown, headers = admin) =>
      call('/tool-services/{id}', { method: 'PUT', url: `/tool-services/${id}`, headers, payload: payload as never });
    expect((await putService('joke-service', seed('joke-service.topic-form'))).res.statusCode).toBe(201);
    expect((await putService('joke-service', seed('joke-service'))).res.statusCode).toBe(200);
    expect((await putService('joke-service', seed('joke-service'), agent)).res.statusCode).toBe(403);
    expect((await call('/tool-services', { method: 'GET', url: '/tool-services' })).res.statusCode).toBe(401);
    expect((await call('/tool-services', { method: 'GET', url: '/tool-services', headers: agent })).res.statusCode).toBe(403);
    expect((await call('/tool-services/{id}', { method: 'GET', url: '/tool-services/joke-service', headers: admin })).res.statusCode).toBe(200);
    expect((await call('/tool-services/{id}', { method: 'GET', url: '/tool-services/nope', headers: admin })).res.statusCode).toBe(404);
    expect((await call('/tools/{name}', { method: 'PUT', url: '/tools/tell-joke', headers: admin, payload: { ...seed('tell-joke'), group: ['fun'] } })).res.statusCode).toBe(201);
    const breaking = { topic: 'joke', 'config-params': [{ name: 'mood', required: true }] };
    expect((await putService('joke-service', breaking)).res.statusCode).toBe(409);
    expect((await call('/tool-services/{id}', { method: 'DELETE', url: '/tool-services/joke-service', headers: admin })).res.statusCode).toBe(409);

    // Bulk.
    const bundle: unknown = JSON.parse(readFileSync(join(ROOT, 'examples', 'seed.json'), 'utf8'));
    expect((await call('/import', { method: 'POST', url: '/import', headers: admin, payload: bundle as never })).res.statusCode).toBe(200);
    expect((await call('/import', { method: 'POST', url: '/import', headers: admin, payload: { tools: [{ name: 'bad' }] } })).res.statusCode).toBe(400);
    expect((await call('/import', { method: 'POST', url: '/import', headers: agent, payload: {} })).res.statusCode).toBe(403);
    const exported = await call('/export', { method: 'GET', url: '/export', headers: admin });
    expect(exported.res.statusCode).toBe(200);
    expectValid(schemaNamed('ImportBundle'), exported.body, 'an export is an import bundle');
    expect((await call('/export', { method: 'GET', url: '/export' })).res.statusCode).toBe(401);
    const audit = await call('/audit', { method: 'GET', url: '/audit?limit=5', headers: admin });
    expect(audit.res.statusCode).toBe(200);
    expect((audit.body as { entries: unknown[] }).entries).toHaveLength(5);
    expect((await call('/audit', { method: 'GET', url: '/audit', headers: agent })).res.statusCode).toBe(403);
    expect((await call('/tool-services', { method: 'GET', url: '/tool-services', headers: admin })).res.statusCode).toBe(200);

    // Calls: HTTP tools served by the tiny tool server, a message-bus tool without a bus.
    const httpTool = (name: string, endpoint: string, extra: Record<string, unknown> = {}) => ({
      name, description: `${name}, a test tool`, endpoint, host: '127.0.0.1', port: toolPort, scopes: ['echo:use'], ...extra,
    });
    for (const tool of [httpTool('echo', '/echo'), httpTool('broken', '/fail'), httpTool('slow', '/slow', { timeoutMs: 50 })]) {
      expect((await call('/tools/{name}', { method: 'PUT', url: `/tools/${tool.name}`, headers: admin, payload: tool })).res.statusCode).toBe(201);
    }
    const user = bearer(handle.token(['echo:use']));
    const invoke = (name: string, options: Omit<InjectOptions, 'method' | 'url'> = {}) =>
      call('/tools/{name}/invoke', { method: 'POST', url: `/tools/${name}/invoke`, ...options });

    const answered = await invoke('echo', { headers: user, payload: { text: 'hi' } });
    expect(answered.res.statusCode).toBe(200);
    expect(answered.body).toMatchObject({ tool: 'echo', result: JSON.stringify({ echo: { text: 'hi' } }) });
    const bodiless = await invoke('echo', { headers: user });
    expect(bodiless.res.statusCode).toBe(200);
    expect(bodiless.body).toMatchObject({ result: JSON.stringify({ echo: {} }) });
    const streamed = await invoke('echo', { headers: { ...user, accept: 'text/event-stream' }, payload: { text: 'hi' } });
    expect(streamed.res.statusCode).toBe(200);
    const events = sseEvents(streamed.res.body);
    expect(events.map((e) => e.event)).toEqual(['chunk', 'result']);
    expectValid(schemaNamed('InvokeChunk'), events[0]?.data, 'chunk event');
    expectValid(schemaNamed('InvokeResult'), events[1]?.data, 'result event');
    expect(events[1]?.data).toMatchObject({ tool: 'echo', result: JSON.stringify({ echo: { text: 'hi' } }) });

    const anonymous = await invoke('echo', { payload: {} });
    expect(anonymous.res.statusCode).toBe(401);
    expect(anonymous.res.headers['www-authenticate']).toContain('scope="echo:use"');
    // Calling needs a token even when the tool needs no scope; a refused stream keeps its status.
    expect((await invoke('tell-joke', { payload: { topic: 'x' } })).res.statusCode).toBe(401);
    expect((await invoke('echo', { headers: { accept: 'text/event-stream' }, payload: {} })).res.statusCode).toBe(401);
    expect((await invoke('echo', { headers: bearer('not.a.jwt'), payload: {} })).res.statusCode).toBe(401);
    const forbidden = await invoke('echo', { headers: agent, payload: {} });
    expect(forbidden.res.statusCode).toBe(403);
    expect(forbidden.res.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect((await invoke('nope', { headers: user, payload: {} })).res.statusCode).toBe(404);
    // Without a token, an unknown name answers like a known one: 401.
    expect((await invoke('nope', { payload: {} })).res.statusCode).toBe(401);
    expect((await invoke('echo', { headers: user, payload: [1, 2] })).body).toMatchObject({ status: 400, code: 'TR_ERR_INVALID_ARGUMENTS', errors: [{ path: '' }] });
    expect((await invoke('echo', { headers: { ...user, 'content-type': 'application/json' }, payload: '{' })).body).toMatchObject({ status: 400, code: 'TR_ERR_INVALID_JSON' });
    expect((await invoke('echo', { headers: user, payload: { text: 'x'.repeat(handle.config.bodyLimit) } })).res.statusCode).toBe(413);
    expect((await invoke('echo', { headers: { ...user, 'content-type': 'text/plain' }, payload: 'hi' })).res.statusCode).toBe(415);
    const failed = await invoke('broken', { headers: user, payload: {} });
    expect(failed.body).toMatchObject({ status: 502, code: 'TR_ERR_TOOL_SERVICE', serviceError: { type: 'http-500', message: 'the tool broke' } });
    const noBus = await invoke('tell-joke', { headers: user, payload: { topic: 'x' } });
    expect(noBus.body).toMatchObject({ status: 503, code: 'TR_ERR_BUS_UNAVAILABLE' });
    expect(noBus.res.headers['retry-after']).toBe('5');
    expect((await invoke('slow', { headers: user, payload: {} })).body).toMatchObject({ status: 504, code: 'TR_ERR_TIMEOUT' });

    // The calls show in the usage figures.
    const usage = (await call('/stats', { method: 'GET', url: '/stats' })).body as Record<string, Record<string, unknown>>;
    // Calls refused at the scope check count only as `denied` errors, not as uses.
    expect(usage['usage_by_tool']).toEqual({ broken: 1, echo: 3, slow: 1, 'tell-joke': 1 });
    expect(usage['usage_by_agent']).toEqual({ 'test-agent': { broken: 1, echo: 3, slow: 1, 'tell-joke': 1 } });
    expect(usage['errors_by_class']).toEqual({ denied: 4, 'service-error': 1, timeout: 1, unavailable: 1 });
    expect(usage['latency_ms_by_tool']?.['echo']).toMatchObject({ samples: 3 });

    // Reads in every view.
    for (const headers of [{}, agent, admin]) {
      expect((await call('/', { method: 'GET', url: '/', headers })).res.statusCode).toBe(200);
      expect((await call('/stats', { method: 'GET', url: '/stats', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}', { method: 'GET', url: '/tools/tell-joke', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}', { method: 'GET', url: '/tools/calculator', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}', { method: 'GET', url: '/tools/nope', headers })).res.statusCode).toBe(404);
      expect((await call('/tools/{name}/access', { method: 'GET', url: '/tools/calculator/access', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}/access', { method: 'GET', url: '/tools/tell-joke/access', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}/access', { method: 'GET', url: '/tools/nope/access', headers })).res.statusCode).toBe(404);
    }
    expect((await call('/tools/{name}/access', { method: 'GET', url: '/tools/calculator/access', headers: bearer('not.a.jwt') })).res.statusCode).toBe(401);
    expect((await call('/', { method: 'GET', url: '/', headers: { authorization: 'Basic abc' } })).res.statusCode).toBe(400);
    expect((await call('/', { method: 'GET', url: '/', headers: bearer('not.a.jwt') })).res.statusCode).toBe(401);
    expect((await call('/stats', { method: 'GET', url: '/stats', headers: bearer('not.a.jwt') })).res.statusCode).toBe(401);

    // Blocking queries: an index the view changed after answers at once; the current index is
    // held for the wait, then answered with the same view (or 304 with If-None-Match).
    const seen = await call('/', { method: 'GET', url: '/', headers: agent });
    const seenIndex = Number(seen.res.headers['x-registry-index']);
    const seenEtag = String(seen.res.headers['etag']);
    const stale = await call('/', { method: 'GET', url: '/?index=0&wait=5m', headers: agent });
    expect(stale.res.statusCode).toBe(200);
    expect(stale.res.headers['etag']).toBe(seenEtag);
    const heldSince = Date.now();
    const held = await call('/', { method: 'GET', url: `/?index=${seenIndex}&wait=100ms`, headers: agent });
    expect(held.res.statusCode).toBe(200);
    expect(Date.now() - heldSince).toBeGreaterThanOrEqual(90);
    expect(held.res.headers['etag']).toBe(seenEtag);
    expect(held.res.headers['x-registry-index']).toBe(String(seenIndex));
    const heldUnchanged = await call('/', { method: 'GET', url: `/?index=${seenIndex}&wait=50ms`, headers: { ...agent, 'if-none-match': seenEtag } });
    expect(heldUnchanged.res.statusCode).toBe(304);

    // Pages: a walk two at a time lists the full view once, in order, without ETag.
    const fullView = (await call('/', { method: 'GET', url: '/' })).body as { tools: { name: string }[] };
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const url: string = `/?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page = await call('/', { method: 'GET', url, headers: user });
      expect(page.res.statusCode).toBe(200);
      expect(page.res.headers['etag']).toBeUndefined();
      expect(page.res.headers['x-hidden-tools']).toBeUndefined();
      expect(page.res.headers['cache-control']).toBe('private, no-cache');
      const body = page.body as { tools: { name: string }[]; nextCursor: string | null };
      expect(body.tools.length).toBeLessThanOrEqual(2);
      walked.push(...body.tools.map((t) => t.name));
      cursor = body.nextCursor;
    } while (cursor !== null);
    const userView = (await call('/', { method: 'GET', url: '/', headers: user })).body as { tools: { name: string }[] };
    expect(walked).toEqual(userView.tools.map((t) => t.name));
    expect(fullView.tools.length).toBeGreaterThan(walked.length);

    // Search and filters.
    const found = await call('/', { method: 'GET', url: '/?q=calc', headers: agent });
    expect(found.body).toMatchObject({ tools: [{ name: 'calculator' }], nextCursor: null });
    const nothing = await call('/', { method: 'GET', url: '/?q=calc', headers: user });
    expect(nothing.body).toMatchObject({ tools: [], nextCursor: null });
    const byScope = await call('/', { method: 'GET', url: '/?scope=echo:use&limit=1000' });
    expect((byScope.body as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(['broken', 'echo', 'slow']);
    expect(byScope.res.headers['cache-control']).toBe('public, no-cache');
    for (const url of ['/?limit=0', '/?limit=1001', '/?limit=2&cursor=bogus', '/?index=-1', '/?index=1&wait=forever', '/?updated_since=yesterday', '/?scope=two%20words']) {
      const refused = await call('/', { method: 'GET', url });
      expect(refused.res.statusCode, url).toBe(400);
      expect(refused.body, url).toMatchObject({ code: 'TR_ERR_BAD_REQUEST' });
    }

    // Deletes (after a moment, so that `updated_since` below tells them from earlier writes).
    await new Promise((resolve) => setTimeout(resolve, 5));
    const beforeDeletes = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await call('/tools/{name}', { method: 'DELETE', url: '/tools/calculator', headers: admin })).res.statusCode).toBe(200);
    expect((await call('/tools/{name}', { method: 'DELETE', url: '/tools/calculator', headers: admin })).res.statusCode).toBe(404);
    expect((await call('/tools/{name}/invoke', { method: 'POST', url: '/tools/calculator/invoke', headers: agent, payload: {} })).res.statusCode).toBe(410);
    expect((await call('/tools/{name}', { method: 'DELETE', url: '/tools/tell-joke' })).res.statusCode).toBe(401);
    expect((await call('/tools/{name}', { method: 'DELETE', url: '/tools/tell-joke', headers: admin })).res.statusCode).toBe(200);
    expect((await call('/tool-services/{id}', { method: 'DELETE', url: '/tool-services/joke-service', headers: admin })).res.statusCode).toBe(200);
    expect((await call('/tool-services/{id}', { method: 'DELETE', url: '/tool-services/joke-service', headers: admin })).res.statusCode).toBe(404);

    // What changed since then, tombstones included.
    const changed = await call('/', { method: 'GET', url: `/?updated_since=${encodeURIComponent(beforeDeletes)}` });
    expect((changed.body as { tools: { name: string; status: string }[] }).tools.map((t) => [t.name, t.status])).toEqual([
      ['calculator', 'deleted'],
      ['tell-joke', 'deleted'],
    ]);
    const changedInScope = await call('/', { method: 'GET', url: `/?updated_since=${encodeURIComponent(beforeDeletes)}&scope=calculator:use`, headers: agent });
    expect(changedInScope.body).toMatchObject({ tools: [{ name: 'calculator', status: 'deleted' }], nextCursor: null });

    // The change feed, read over a real socket.
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;
    const lastWrite = Number((await call('/', { method: 'GET', url: '/' })).res.headers['x-registry-index']);
    const stream = async (path: string, headers: Record<string, string>, act: () => Promise<void>, done: (text: string) => boolean) => {
      const opened = await openStream(port, path, headers);
      expectDocumentedQuery('/changes', 'get', path, opened.answer().statusCode);
      try {
        await opened.until((text) => text.startsWith(': connected\n\n'));
        await act();
        await opened.until(done);
        const answer = opened.answer();
        expectDocumented('/changes', 'get', answer);
        return { answer, events: changeEvents(answer.body) };
      } finally {
        opened.close();
      }
    };
    const nothingToDo = async () => undefined;
    // An admin replaying the whole log gets every write so far, tool services included, an
    // import's many events under one id.
    const replay = await stream('/changes?since=0', admin, nothingToDo, hasEventId(lastWrite));
    expect(replay.answer.statusCode).toBe(200);
    expect(replay.answer.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(replay.answer.headers['x-registry-index']).toBe(String(lastWrite));
    const replayed = expectChangeFeed(replay.events, 'admin replay');
    expect(replayed.at(-1)?.at(-1)?.data).toEqual({ index: lastWrite, op: 'delete', kind: 'tool-service', name: 'joke-service' });
    expect(replayed.some((write) => write.length > 1)).toBe(true);
    expect(replay.events.some((e) => e.data['kind'] === 'tool')).toBe(true);
    // A live agent resuming from Last-Event-ID gets its view's writes only: not the tool
    // service, not a tool it cannot see.
    const resumed = await stream(
      '/changes',
      { ...agent, 'last-event-id': String(lastWrite) },
      async () => {
        expect((await call('/tool-services/{id}', { method: 'PUT', url: '/tool-services/feed-service', headers: admin, payload: { topic: 'feed' } })).res.statusCode).toBe(201);
        expect((await call('/tools/{name}', { method: 'PUT', url: '/tools/hidden', headers: admin, payload: httpTool('hidden', '/echo') })).res.statusCode).toBe(201);
        expect((await call('/tools/{name}', { method: 'PUT', url: '/tools/calculator', headers: admin, payload: seed('calculator') })).res.statusCode).toBe(201);
      },
      hasEventId(lastWrite + 3),
    );
    expect(expectChangeFeed(resumed.events, 'agent feed').map((write) => write.map((e) => e.data))).toEqual([
      [{ index: lastWrite + 3, op: 'upsert', kind: 'tool', name: 'calculator' }],
    ]);
    expect(resumed.answer.headers['x-registry-index']).toBe(String(lastWrite));
    // Its replay from the start shows no tool-service change either.
    const agentReplay = await stream('/changes', { ...agent, 'last-event-id': '0' }, nothingToDo, hasEventId(lastWrite + 3));
    expectChangeFeed(agentReplay.events, 'agent replay');
    expect(agentReplay.events.filter((e) => e.data['kind'] !== 'tool')).toEqual([]);
    expect(agentReplay.events.map((e) => e.data['name'])).not.toContain('hidden');
    for (const headers of [{ ...agent, 'last-event-id': 'latest' }, { ...agent, 'last-event-id': '-1' }]) {
      const refused = await call('/changes', { method: 'GET', url: '/changes', headers });
      expect(refused.res.statusCode).toBe(400);
      expect(refused.body).toMatchObject({ code: 'TR_ERR_BAD_REQUEST' });
    }
    expect((await call('/changes', { method: 'GET', url: '/changes?since=1.5', headers: agent })).res.statusCode).toBe(400);
    expect((await call('/changes', { method: 'GET', url: '/changes', headers: bearer('not.a.jwt') })).res.statusCode).toBe(401);
    expect((await call('/changes', { method: 'GET', url: '/changes', headers: { authorization: 'Basic abc' } })).res.statusCode).toBe(400);

    // Operations.
    expect((await call('/healthz', { method: 'GET', url: '/healthz', headers: bearer('ignored') })).res.statusCode).toBe(200);
    const ready = await call('/readyz', { method: 'GET', url: '/readyz' });
    expect(ready.res.statusCode).toBe(200);
    expect(ready.body).toMatchObject({ checks: { database: 'ok', bridge: 'not-configured' }, inflightCalls: 0 });
    const metadata = '/.well-known/oauth-protected-resource';
    expect((await call(metadata, { method: 'GET', url: metadata, headers: bearer('ignored') })).res.statusCode).toBe(200);
    expect((await call('/openapi.yaml', { method: 'GET', url: '/openapi.yaml' })).res.statusCode).toBe(200);

    expect([...documentedOperations()].filter((op) => !exercised.has(op)), 'operations no contract check exercised').toEqual([]);
  });

  it('lists every error code in the catalogue (src/errors.ts) as a Problem code', () => {
    const code = asObject(asObject(schemaNamed('Problem')['properties'], 'Problem properties')['code'], 'Problem code');
    expect([...(code['enum'] as string[])].sort()).toEqual(Object.keys(ERRORS).sort());
  });

  it('documents 429 on exactly the operations rate limiting counts', async () => {
    const limited = await createTestApp({ RATE_LIMIT_MAX: '1', RATE_LIMIT_WRITE_MAX: '1' });
    const inject = (op: string) => {
      const [method = '', path = ''] = op.split(' ');
      // A bad Last-Event-ID makes a GET /changes that got through answer 400 rather than open a
      // stream, which app.inject would wait on for ever.
      const headers = path === '/changes' ? { 'last-event-id': 'none' } : {};
      return limited.app.inject({ method: method as InjectOptions['method'], url: path.replace(/\{[A-Za-z0-9_]+\}/g, 'x'), headers });
    };
    const adminWrites = ['POST /tools/register', 'PUT /tools/{name}', 'DELETE /tools/{name}', 'PUT /tool-services/{id}', 'DELETE /tool-services/{id}', 'POST /import'];
    try {
      // Reads and calls share one count per caller: this request uses up the anonymous allowance.
      expect((await limited.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
      // Admin writes share one count of their own, which reads did not use up: the first write
      // gets through to the auth check (401), every later write is over the limit.
      let firstWrite = true;
      for (const op of documentedOperations()) {
        const res = await inject(op);
        if (adminWrites.includes(op)) {
          expect(res.statusCode, `${op}: the shared write count`).toBe(firstWrite ? 401 : 429);
          firstWrite = false;
        }
      }
      for (const op of documentedOperations()) {
        const [method = '', path = ''] = op.split(' ');
        const res = await inject(op);
        const documents429 = '429' in asObject(operation(path, method.toLowerCase())['responses'], op);
        expect(res.statusCode === 429, `${op} -> ${res.statusCode}, 429 documented: ${documents429}`).toBe(documents429);
        if (res.statusCode === 429) expectDocumented(path, method.toLowerCase(), res);
      }
    } finally {
      await limited.close();
    }
  });

  it('lists discovery entries with every property PublicTool requires', async () => {
    const required = schemaNamed('PublicTool')['required'];
    expect(Array.isArray(required) && required.length > 0).toBe(true);
    const admin = bearer(handle.token(['registry:write']));
    const registered = await app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('database_query') });
    expect(registered.statusCode).toBeLessThan(300);
    // The admin scope does not widen discovery: the view needs the tool's own scope.
    const res = await app.inject({ method: 'GET', url: '/', headers: bearer(handle.token(['database:read'])) });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ tools: Record<string, unknown>[] }>();
    expect(body.tools.length).toBeGreaterThan(0);
    expect(body.tools.map((t) => t['name'])).toContain('database_query');
    for (const tool of body.tools) expect(Object.keys(tool)).toEqual(expect.arrayContaining(required as string[]));
    expect(Object.keys(body)).toEqual(expect.arrayContaining(schemaNamed('DiscoveryResponse')['required'] as string[]));
  });

  it('documents the 401 that anonymous discovery gets when ANONYMOUS_DISCOVERY=none', async () => {
    const closed = await createTestApp({ ANONYMOUS_DISCOVERY: 'none' });
    try {
      for (const path of ['/', '/stats', '/changes']) {
        const res = await closed.app.inject({ method: 'GET', url: path });
        expect(res.statusCode).toBe(401);
        expectDocumented(path, 'get', res);
      }
      const res = await closed.app.inject({ method: 'GET', url: '/', headers: bearer(closed.token([])) });
      expect(res.statusCode).toBe(200);
      expectDocumented('/', 'get', res);
    } finally {
      await closed.close();
    }
  });

  it('documents the 503 past MAX_WAITERS, and the public max-age of ANONYMOUS_MAX_AGE_S', async () => {
    const small = await createTestApp({ MAX_WAITERS: '1', ANONYMOUS_MAX_AGE_S: '60' });
    try {
      const first = await small.app.inject({ method: 'GET', url: '/' });
      expect(first.headers['cache-control']).toBe('public, max-age=60');
      expectDocumented('/', 'get', first);
      const withToken = await small.app.inject({ method: 'GET', url: '/', headers: bearer(small.token([])) });
      expect(withToken.headers['cache-control']).toBe('private, no-cache');
      expectDocumented('/', 'get', withToken);

      // One held blocking query takes the only slot.
      const index = String(first.headers['x-registry-index']);
      const held = small.app.inject({ method: 'GET', url: `/?index=${index}&wait=20s` });
      for (let i = 0; i < 200 && small.app.waiters.size < 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(small.app.waiters.size).toBe(1);
      for (const [path, url] of [['/', `/?index=${index}&wait=20s`], ['/changes', '/changes']] as const) {
        const res = await small.app.inject({ method: 'GET', url });
        expect(res.statusCode, url).toBe(503);
        expect(res.headers['retry-after']).toBe('5');
        expect(res.json()).toMatchObject({ code: 'TR_ERR_UNAVAILABLE' });
        expectDocumented(path, 'get', res);
      }
      // A write to the view answers the held query.
      const admin = bearer(small.token(['registry:write']));
      expect((await small.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('calculator') })).statusCode).toBe(201);
      const answered = await held;
      expect(answered.statusCode).toBe(200);
      expect(Number(answered.headers['x-registry-index'])).toBe(Number(index) + 1);
      expect(answered.json()).toMatchObject({ tools: [{ name: 'calculator' }] });
      expectDocumented('/', 'get', answered);
    } finally {
      await small.close();
    }
  });
});
