/**
 * The OpenAPI document the routes' schemas make (src/http/openapi): it is valid OpenAPI 3.1,
 * it documents exactly the routes the app registers (a route without schemas stops it being
 * made), openapi.yaml is the current one, and real answers (status, content type, required
 * headers, body) match it, checked with ajv.
 */
import { readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { generateOpenapi, OPENAPI_PATH } from '../../scripts/openapi.js';
import { MAX_PAGE } from '../../src/catalog/listing.js';
import { documentYaml } from '../../src/http/openapi/document.js';
import { json } from '../../src/http/openapi/responses.js';
import { MAX_PAGE_SIZE } from '../../src/model/api.js';
import { ERRORS, problemType } from '../../src/model/errors.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const ROOT = join(import.meta.dirname, '..', '..');
const REGENERATE = 'npx tsx scripts/openapi.ts';
const DOC_ID = 'https://tool-registry.test/openapi.json';
// ajv-formats is CommonJS with `exports.default`, which NodeNext types as the module itself.
const addFormats = ajvFormats.default;
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const escape = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

// -------------------------------------------------------------------------------------------
// Reading the document, checking values against it with ajv

class OpenApiDocument {
  readonly #ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  readonly #validators = new Map<string, ValidateFunction>();

  constructor(readonly doc: Json) {
    addFormats(this.#ajv);
    // The whole document is one schema resource, so that `#/components/schemas/...` resolves.
    this.#ajv.addSchema(structuredClone(doc), DOC_ID);
  }

  /** The value at a JSON pointer. */
  at(pointer: string): unknown {
    let node: unknown = this.doc;
    for (const raw of pointer.split('/').slice(1)) {
      if (!isObject(node) && !Array.isArray(node)) return undefined;
      node = (node as Json)[raw.replaceAll('~1', '/').replaceAll('~0', '~')];
    }
    return node;
  }

  /** Follows Reference Objects (responses, headers) to the pointer of what they name. */
  resolve(pointer: string): string {
    const node = this.at(pointer);
    return isObject(node) && typeof node['$ref'] === 'string' ? this.resolve(node['$ref'].slice(1)) : pointer;
  }

  /** The errors of `value` against the schema at `pointer`, in words. */
  problems(pointer: string, value: unknown): string[] {
    let validate = this.#validators.get(pointer);
    if (validate === undefined) {
      validate = this.#ajv.getSchema(`${DOC_ID}#${pointer}`);
      if (validate === undefined) throw new Error(`no schema at ${pointer}`);
      this.#validators.set(pointer, validate);
    }
    return validate(value)
      ? []
      : (validate.errors ?? []).map((e) => `${e.instancePath || '(value)'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
  }

  expectValid(pointer: string, value: unknown, what: string): void {
    expect(this.problems(pointer, value), `${what} against ${pointer}`).toEqual([]);
  }

  operations(): Set<string> {
    const ops = new Set<string>();
    for (const [path, item] of Object.entries(this.doc['paths'] as Json)) {
      for (const key of Object.keys(item as Json)) if (HTTP_METHODS.includes(key)) ops.add(`${key.toUpperCase()} ${path}`);
    }
    return ops;
  }

  operation(path: string, method: string): string {
    const pointer = `/paths/${escape(path)}/${method}`;
    expect(this.at(pointer), `${method.toUpperCase()} ${path} is documented`).toBeDefined();
    return pointer;
  }

  /** A component schema's pointer. */
  schema(name: string): string {
    expect(this.at(`/components/schemas/${name}`), `schema ${name}`).toBeDefined();
    return `/components/schemas/${name}`;
  }
}

// -------------------------------------------------------------------------------------------
// The app's routes

/**
 * Every METHOD path pair the app serves, read from `printRoutes({ commonPrefix: false })`:
 * each line is `<indent>├── <segment> (METHOD, ...)`, 4 characters of indent per level, and a
 * route's path is its ancestors' segments joined. HEAD routes Fastify adds for GET routes are
 * left out, and so are the pages' own (/docs and /dashboard, hidden from the document).
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
    stack.length = (match[1] ?? '').length / 4;
    stack.push(match[2] ?? '');
    for (const method of match[3]?.split(', ') ?? []) found.push({ method, path: stack.join('') });
  }
  const ops = new Set<string>();
  for (const { method, path } of found) {
    if (path === '/docs' || path.startsWith('/docs/') || path === '/docs*') continue;
    // @fastify/cors's catch-all, which answers 404 there (src/http/routes/mcp.ts).
    if (path === '/mcp*') continue;
    // The dashboard's page and assets (src/http/routes/dashboard.ts): pages, not API.
    if (path === '/dashboard' || path.startsWith('/dashboard/')) continue;
    // OAuth clients' refusal where no authorization server is named (src/http/routes/well-known.ts): RFC 7591's, not API.
    if (path === '/register') continue;
    expect(app.hasRoute({ method: method as never, url: path }), `${method} ${path} read from printRoutes`).toBe(true);
    if (method === 'HEAD' && found.some((r) => r.method === 'GET' && r.path === path)) continue;
    ops.add(`${method} ${path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  }
  return ops;
}

// -------------------------------------------------------------------------------------------
// Checking answers against the document

/** What the checks read of an answer: app.inject's, or one read off a socket. */
type Answer = Pick<LightMyRequestResponse, 'statusCode' | 'body'> & {
  headers: IncomingHttpHeaders | LightMyRequestResponse['headers'];
  json(): unknown;
};

/** Operations a check saw answered with a 2xx or 304. */
const exercised = new Set<string>();

/**
 * Asserts every query parameter of `url` is documented for the operation and, when the request
 * was accepted, that its value fits the parameter's schema (integers read as numbers).
 */
function expectDocumentedQuery(document: OpenApiDocument, path: string, method: string, url: string, status: number): void {
  const operation = document.operation(path, method);
  const parameters = (document.at(`${operation}/parameters`) ?? []) as Json[];
  for (const [name, value] of new URL(url, 'http://registry.test').searchParams) {
    const index = parameters.findIndex((p) => p['in'] === 'query' && p['name'] === name);
    expect(index, `${method.toUpperCase()} ${path}: query parameter ${name} is documented`).toBeGreaterThanOrEqual(0);
    if (index < 0 || status >= 300) continue;
    const schema = `${operation}/parameters/${index}/schema`;
    const numeric = (document.at(schema) as Json)['type'] === 'integer' && /^-?[0-9]+$/u.test(value);
    document.expectValid(schema, numeric ? Number(value) : value, `${method.toUpperCase()} ${path}: ${name}=${value}`);
  }
}

/**
 * Asserts the answer's status is documented for the operation, its content type is one the
 * document lists, its required headers are there and every documented header it carries
 * fits, and its body fits the schema. Returns the body.
 */
function expectDocumented(document: OpenApiDocument, path: string, method: string, res: Answer): unknown {
  const label = `${method.toUpperCase()} ${path} -> ${res.statusCode}`;
  const operation = document.operation(path, method);
  const documented = `${operation}/responses/${res.statusCode}`;
  expect(document.at(documented), `${label} is documented (body: ${res.body.slice(0, 300)})`).toBeDefined();
  const response = document.resolve(documented);

  for (const name of Object.keys((document.at(`${response}/headers`) ?? {}) as Json)) {
    const header = document.resolve(`${response}/headers/${escape(name)}`);
    const value = res.headers[name.toLowerCase()];
    if ((document.at(header) as Json)['required'] === true) expect(value, `${label} header ${name}`).toBeDefined();
    if (typeof value === 'string') document.expectValid(`${header}/schema`, value, `${label} header ${name}`);
  }

  const content = document.at(`${response}/content`) as Json | undefined;
  let body: unknown;
  if (content === undefined) {
    expect(res.body, `${label} has no body`).toBe('');
  } else {
    const mediaType =
      String(res.headers['content-type'] ?? '')
        .split(';')[0]
        ?.trim() ?? '';
    expect(content[mediaType], `${label} content type ${mediaType} is documented`).toBeDefined();
    body = mediaType.endsWith('json') ? res.json() : res.body;
    document.expectValid(`${response}/content/${escape(mediaType)}/schema`, body, `${label} body`);
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

/** The events of an AG-UI stream: one `data:` line of JSON each, no event names. */
function agUiEvents(text: string): { type: string }[] {
  return text
    .split('\n\n')
    .filter((block) => block !== '')
    .map((block) => {
      if (!block.startsWith('data: ')) throw new Error(`not an AG-UI event: ${JSON.stringify(block)}`);
      return JSON.parse(block.slice('data: '.length)) as { type: string };
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

function openStream(port: number, path: string, headers: Record<string, string>, body?: unknown): Promise<OpenStream> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers, agent: false, method: body === undefined ? 'GET' : 'POST' });
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
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/**
 * Checks a change feed's events against the document and its promises: each `data` is a
 * ChangeEvent, indexes never go down, and exactly the last event of each write carries `id:`,
 * equal to the write's index. Returns the events grouped by write.
 */
function expectChangeFeed(document: OpenApiDocument, events: ChangeFeedEvent[], what: string): ChangeFeedEvent[][] {
  const groups: ChangeFeedEvent[][] = [];
  let group: ChangeFeedEvent[] = [];
  for (const event of events) {
    document.expectValid(document.schema('ChangeEvent'), event.data, `${what}: ${JSON.stringify(event.data)}`);
    const previous = group.at(-1) ?? groups.at(-1)?.at(-1);
    if (previous)
      expect(Number(event.data['index']), `${what}: indexes never go down`).toBeGreaterThanOrEqual(Number(previous.data['index']));
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

/**
 * Sends `request` as raw bytes on a fresh connection and reads the answer until the server closes
 * it (every answer given before a route runs closes its connection): for what app.inject cannot
 * show, Node's own refusals and the connection limits.
 */
function rawExchange(port: number, request: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(request));
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (text += chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers: IncomingHttpHeaders = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = rest.join('\r\n\r\n');
      resolve({ statusCode: Number(statusLine.split(' ')[1]), headers, body, json: () => JSON.parse(body) as unknown });
    });
  });
}

/** A concrete path for a documented one (`{name}` -> `x`). */
const concrete = (path: string, value = 'x') => path.replace(/\{[A-Za-z0-9_]+\}/g, value);

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

describe('the OpenAPI document', () => {
  let handle: TestApp;
  let app: FastifyInstance;
  let document: OpenApiDocument;
  let toolServer: Server;
  let toolPort: number;

  beforeAll(async () => {
    handle = await createTestApp();
    app = handle.app;
    await app.ready();
    document = new OpenApiDocument(app.swagger() as unknown as Json);
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
  async function call(
    docPath: string,
    options: InjectOptions & { method: string; url: string },
  ): Promise<{ res: LightMyRequestResponse; body: unknown }> {
    const res = await app.inject(options);
    const method = options.method.toLowerCase();
    expectDocumentedQuery(document, docPath, method, options.url, res.statusCode);
    return { res, body: expectDocumented(document, docPath, method, res) };
  }

  describe('as a document', () => {
    it('is valid OpenAPI 3.1', async () => {
      expect(document.doc['openapi']).toBe('3.1.0');
      const validated = await SwaggerParser.validate(structuredClone(document.doc) as never);
      expect('openapi' in validated && validated.openapi).toBe('3.1.0');
    });

    it(`is what openapi.yaml holds (if not: ${REGENERATE})`, async () => {
      const committed = readFileSync(OPENAPI_PATH, 'utf8');
      expect(committed === (await generateOpenapi()), `openapi.yaml is out of date: run \`${REGENERATE}\` and commit it`).toBe(true);
    });

    it('is served as JSON and YAML, without credentials', async () => {
      const asJson = await call('/openapi.json', { method: 'GET', url: '/openapi.json', headers: bearer('not.a.jwt') });
      expect(asJson.res.statusCode).toBe(200);
      expect(asJson.body).toEqual(document.doc);
      const asYaml = await call('/openapi.yaml', { method: 'GET', url: '/openapi.yaml' });
      expect(asYaml.res.headers['content-type']).toMatch(/^application\/yaml/);
      expect(asYaml.res.body).toBe(documentYaml(document.doc));
      expect(parse(asYaml.res.body)).toEqual(document.doc);
    });

    it('is shown at /docs from the package itself, without credentials', async () => {
      const page = await app.inject({ method: 'GET', url: '/docs', headers: bearer('not.a.jwt') });
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      const initializer = await app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
      expect(initializer.statusCode).toBe(200);
      // Nothing fetched from elsewhere: scripts and styles are relative, no online validator.
      for (const text of [page.body, initializer.body]) expect(text).not.toMatch(/(src|href)="(https?:)?\/\//);
      expect(initializer.body).toContain('validatorUrl: null');
      for (const asset of [...page.body.matchAll(/(?:src|href)="\.\/([^"]+)"/g)].map((m) => m[1])) {
        expect((await app.inject({ method: 'GET', url: `/docs/${asset ?? ''}` })).statusCode, asset).toBe(200);
      }
      expect((await app.inject({ method: 'GET', url: '/docs/json' })).json()).toEqual(document.doc);
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
      walk(document.doc);
      expect(patterns.length).toBeGreaterThan(5);
      for (const p of patterns) expect(() => new RegExp(p, 'u'), p).not.toThrow();
    });

    it('lists every error code of the catalogue (src/model/errors.ts) as a Problem code', () => {
      const code = document.at('/components/schemas/Problem/properties/code') as Json;
      expect([...(code['enum'] as string[])].sort()).toEqual(Object.keys(ERRORS).sort());
    });

    it('has examples that fit their own schemas', () => {
      let count = 0;
      const walkResponses = (pointer: string) => {
        for (const status of Object.keys((document.at(pointer) ?? {}) as Json)) {
          const response = document.resolve(`${pointer}/${status}`);
          for (const [type, media] of Object.entries((document.at(`${response}/content`) ?? {}) as Json)) {
            if (!isObject(media) || media['example'] === undefined) continue;
            document.expectValid(`${response}/content/${escape(type)}/schema`, media['example'], `${response} ${type} example`);
            count++;
          }
        }
      };
      walkResponses('/components/responses');
      for (const op of document.operations()) {
        const [method = '', path = ''] = op.split(' ');
        walkResponses(`${document.operation(path, method.toLowerCase())}/responses`);
      }
      expect(count).toBeGreaterThan(10);
    });

    it('describes the request bodies the registry accepts, and not others', () => {
      const body = (path: string, method: string) => `${document.operation(path, method)}/requestBody/content/application~1json/schema`;
      const tool = body('/tools/register', 'post');
      const service = body('/tool-services/{id}', 'put');
      const bundle = body('/import', 'post');
      for (const name of [
        'calculator',
        'database_query',
        'file_reader',
        'simulation_data',
        'weather_forecast',
        'tell-joke',
        'query-customers',
        'query-products',
      ]) {
        document.expectValid(tool, seed(name), `seed ${name} as a tool`);
      }
      for (const name of ['joke-service', 'joke-service.topic-form', 'custom-rag'])
        document.expectValid(service, seed(name), `seed ${name} as a tool service`);
      document.expectValid(
        service,
        { id: 'svc', topic: 'svc', 'config-params': ['a', { name: 'b', required: true }] },
        'bare config params',
      );
      document.expectValid(bundle, JSON.parse(readFileSync(join(ROOT, 'examples', 'seed.json'), 'utf8')), 'examples/seed.json');
      document.expectValid(
        bundle,
        { source_workspace: 'default', source_version: 3, config: { 'tool-service': { s: '{"id": "s", "topic": "s"}' }, tool: {} } },
        'a TrustGraph config dump (issue 15)',
      );
      document.expectValid(tool, { ...seed('tell-joke'), style: { nested: [true] } }, 'an object config value (issue 15)');
      document.expectValid(
        `${document.operation('/tools/{name}/invoke', 'post')}/requestBody/content/application~1json/schema`,
        { expression: '2 + 2' },
        'arguments',
      );
      expect(
        document.at(`${document.operation('/tools/{name}/invoke', 'post')}/requestBody/required`),
        'the arguments may be left out',
      ).toBe(false);

      const refused: [string, unknown][] = [
        ['an HTTP tool with an unknown field', { ...seed('calculator'), foo: 1 }],
        ['a relative endpoint', { ...seed('calculator'), endpoint: 'tools/calculator' }],
        ['a group that is not a list (issue 15)', { ...seed('tell-joke'), group: 'fun' }],
        ['a message-bus tool without service', { ...seed('tell-joke'), service: undefined }],
      ];
      for (const [what, value] of refused) expect(document.problems(tool, JSON.parse(JSON.stringify(value))), what).not.toEqual([]);
      expect(document.problems(service, { ...seed('joke-service'), queue: 'x' }), 'a service with an unknown field').not.toEqual([]);
      expect(document.problems(bundle, { tools: [], extra: [] }), 'a bundle with an unknown key').not.toEqual([]);
    });

    it('pages no more tools than the listing does', () => {
      expect(MAX_PAGE_SIZE).toBe(MAX_PAGE);
    });
  });

  describe('against the routes', () => {
    it('documents exactly the routes the app registers', () => {
      const inApp = appOperations(app);
      const inDoc = document.operations();
      expect(
        [...inApp].filter((op) => !inDoc.has(op)),
        'routes missing from the document',
      ).toEqual([]);
      expect(
        [...inDoc].filter((op) => !inApp.has(op)),
        'documented operations the app does not serve',
      ).toEqual([]);
      expect(inDoc.size).toBeGreaterThanOrEqual(20);
    });

    it('gives every answer a schema, and every refusal the problem shape', () => {
      for (const op of document.operations()) {
        const [method = '', path = ''] = op.split(' ');
        const operation = document.operation(path, method.toLowerCase());
        for (const key of ['operationId', 'summary', 'tags', 'security'])
          expect(document.at(`${operation}/${key}`), `${op} ${key}`).toBeDefined();
        const statuses = Object.keys(document.at(`${operation}/responses`) as Json);
        expect(
          statuses.some((s) => s.startsWith('2')),
          `${op} documents a success`,
        ).toBe(true);
        for (const status of statuses) {
          const response = document.resolve(`${operation}/responses/${status}`);
          expect(document.at(`${response}/description`), `${op} ${status} description`).not.toBe('Default Response');
          const content = document.at(`${response}/content`) as Json | undefined;
          // 304, and the MCP transport's 202 (a notification taken) and 204 (a session ended).
          if (['202', '204', '304'].includes(status)) expect(content, `${op} ${status} has no body`).toBeUndefined();
          else expect(Object.keys(content ?? {}).length, `${op} ${status} has a body schema`).toBeGreaterThan(0);
          if (Number(status) < 400) continue;
          const types = Object.keys(content ?? {});
          // POST /mcp's refusals at MCP 2026-07-28: the same problem body, in the application/json
          // that revision's transport requires of an answer to a request (src/http/mcp/openapi.ts).
          if (op === 'POST /mcp' && types.includes('application/json')) {
            expect(types, `${op} ${status}`).toEqual(['application/problem+json', 'application/json']);
            const schemaOf = (type: string) => (content?.[type] as Json | undefined)?.['schema'];
            expect(schemaOf('application/json'), `${op} ${status}`).toEqual(schemaOf('application/problem+json'));
          } else expect(types, `${op} ${status}`).toEqual(['application/problem+json']);
        }
      }
    });

    it.each([
      [
        'a route with no schema at all',
        'GET /bare declares no response, operationId, summary, tags',
        (t: FastifyInstance) => t.get('/bare', async () => 'bare'),
      ],
      [
        'a route whose URL has parameters and whose method takes a body',
        'POST /bare/:id declares no params, body',
        (t: FastifyInstance) =>
          t.post(
            '/bare/:id',
            { schema: { tags: ['tools'], operationId: 'bare', summary: 'Bare', response: { 200: json(z.string(), 'Bare.') } } },
            async () => 'bare',
          ),
      ],
    ])('is not made with %s', async (_what, message, add) => {
      const t = await createTestApp();
      try {
        add(t.app);
        await t.app.ready();
        expect(() => t.app.swagger()).toThrow(message);
        expect((await t.app.inject({ method: 'GET', url: '/openapi.json' })).statusCode).toBe(500);
      } finally {
        await t.close();
      }
    });
  });

  it('matches real answers, route by route', async () => {
    const admin = bearer(handle.token(['registry:write']));
    const agent = bearer(handle.token(['calculator:use']));

    // Discovery, empty, then conditional.
    const first = await call('/', { method: 'GET', url: '/' });
    expect(first.res.statusCode).toBe(200);
    const etag = String(first.res.headers['etag']);
    expect((await call('/', { method: 'GET', url: '/', headers: { 'if-none-match': `W/${etag}` } })).res.statusCode).toBe(304);

    // Tools: create, replace, refusals.
    expect(
      (await call('/tools/register', { method: 'POST', url: '/tools/register', headers: admin, payload: seed('calculator') })).res
        .statusCode,
    ).toBe(201);
    expect(
      (await call('/tools/register', { method: 'POST', url: '/tools/register', headers: admin, payload: seed('calculator') })).res
        .statusCode,
    ).toBe(200);
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', payload: seed('calculator') })).res.statusCode).toBe(
      401,
    );
    expect(
      (await call('/tools/register', { method: 'POST', url: '/tools/register', headers: agent, payload: seed('calculator') })).res
        .statusCode,
    ).toBe(403);
    const invalid = await call('/tools/register', {
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: { name: 'x', foo: 1 },
    });
    expect(invalid.res.statusCode).toBe(400);
    expect(invalid.body).toMatchObject({ code: 'TR_ERR_VALIDATION', detail: expect.stringMatching(/^invalid HTTP tool: /) });
    const unsupported = { ...admin, 'content-type': 'application/xml' };
    expect(
      (await call('/tools/register', { method: 'POST', url: '/tools/register', headers: unsupported, payload: '<tool/>' })).res.statusCode,
    ).toBe(415);
    const huge = { ...seed('calculator'), description: 'x'.repeat(handle.config.bodyLimit) };
    expect((await call('/tools/register', { method: 'POST', url: '/tools/register', headers: admin, payload: huge })).res.statusCode).toBe(
      413,
    );
    const { name: _name, ...nameless } = seed('weather_forecast');
    expect(
      (await call('/tools/{name}', { method: 'PUT', url: '/tools/weather_forecast', headers: admin, payload: nameless })).res.statusCode,
    ).toBe(201);
    expect(
      (await call('/tools/{name}', { method: 'PUT', url: '/tools/weather_forecast', headers: admin, payload: nameless })).res.statusCode,
    ).toBe(200);
    expect(
      (await call('/tools/{name}', { method: 'PUT', url: '/tools/other', headers: admin, payload: seed('weather_forecast') })).res
        .statusCode,
    ).toBe(400);

    // Tool services.
    const putService = (id: string, payload: unknown, headers: Record<string, string> = admin) =>
      call('/tool-services/{id}', { method: 'PUT', url: `/tool-services/${id}`, headers, payload: payload as never });
    expect((await putService('joke-service', seed('joke-service.topic-form'))).res.statusCode).toBe(201);
    expect((await putService('joke-service', seed('joke-service'))).res.statusCode).toBe(200);
    expect((await putService('joke-service', seed('joke-service'), agent)).res.statusCode).toBe(403);
    expect((await call('/tool-services', { method: 'GET', url: '/tool-services' })).res.statusCode).toBe(401);
    expect((await call('/tool-services', { method: 'GET', url: '/tool-services', headers: agent })).res.statusCode).toBe(403);
    expect((await call('/tool-services/{id}', { method: 'GET', url: '/tool-services/joke-service', headers: admin })).res.statusCode).toBe(
      200,
    );
    expect((await call('/tool-services/{id}', { method: 'GET', url: '/tool-services/nope', headers: admin })).res.statusCode).toBe(404);
    // Conditional (issue 34): the record's ETag, a 304 on it, a write on it, and the 412s of a stale one.
    const serviceTag = String(
      (await call('/tool-services/{id}', { method: 'GET', url: '/tool-services/joke-service', headers: admin })).res.headers['etag'],
    );
    expect(
      (
        await call('/tool-services/{id}', {
          method: 'GET',
          url: '/tool-services/joke-service',
          headers: { ...admin, 'if-none-match': serviceTag },
        })
      ).res.statusCode,
    ).toBe(304);
    const conditional = await putService('joke-service', seed('joke-service'), { ...admin, 'if-match': serviceTag });
    expect(conditional.res.statusCode).toBe(200);
    expect(conditional.res.headers['etag']).not.toBe(serviceTag);
    expect((await putService('joke-service', seed('joke-service'), { ...admin, 'if-match': serviceTag })).res.statusCode).toBe(412);
    expect(
      (
        await call('/tool-services/{id}', {
          method: 'DELETE',
          url: '/tool-services/joke-service',
          headers: { ...admin, 'if-match': serviceTag },
        })
      ).res.statusCode,
    ).toBe(412);
    expect(
      (
        await call('/tools/{name}', {
          method: 'PUT',
          url: '/tools/tell-joke',
          headers: admin,
          payload: { ...seed('tell-joke'), group: ['fun'] },
        })
      ).res.statusCode,
    ).toBe(201);
    const breaking = { topic: 'joke', 'config-params': [{ name: 'mood', required: true }] };
    expect((await putService('joke-service', breaking)).res.statusCode).toBe(409);
    expect(
      (await call('/tool-services/{id}', { method: 'DELETE', url: '/tool-services/joke-service', headers: admin })).res.statusCode,
    ).toBe(409);

    // Upstream MCP servers (nothing listens at the URL: its state is then `down`).
    const mcpServer = { url: 'http://127.0.0.1:9/mcp', credential: { bearer: 'not-shown' }, prefix: 'up_' };
    const putMcp = (payload: unknown) =>
      call('/mcp-servers/{id}', { method: 'PUT', url: '/mcp-servers/up', headers: admin, payload: payload as never });
    expect((await putMcp(mcpServer)).res.statusCode).toBe(201);
    expect((await putMcp({ ...mcpServer, credential: { set: true } })).res.statusCode).toBe(200);
    expect((await putMcp({ ...mcpServer, url: 'ftp://127.0.0.1/mcp' })).res.statusCode).toBe(400);
    expect((await call('/mcp-servers', { method: 'GET', url: '/mcp-servers', headers: admin })).res.statusCode).toBe(200);
    expect((await call('/mcp-servers/{id}', { method: 'GET', url: '/mcp-servers/up', headers: admin })).res.statusCode).toBe(200);
    expect((await call('/mcp-servers/{id}', { method: 'GET', url: '/mcp-servers/nope', headers: admin })).res.statusCode).toBe(404);
    // Its review queue (issue 29), filled as a listing of the upstream would fill it.
    const listedTool = (name: string, description: string) => ({
      type: 'mcp' as const,
      name: `up_${name}`,
      server: 'up',
      upstreamName: name,
      description,
      inputSchema: { type: 'object' as const, properties: { q: { type: 'string' } } },
      scopes: [],
    });
    await app.registry.syncMcpTools('up', app.catalog.getMcpServer('up')!.index, [listedTool('a', 'A.'), listedTool('b', 'B.')]);
    const queue = await call('/mcp-servers/{id}/pending', { method: 'GET', url: '/mcp-servers/up/pending?limit=1', headers: admin });
    expect(queue.res.statusCode).toBe(200);
    const pendingA = (queue.body as { changes: { tool: string; digest: string }[]; next: string | null }).changes[0]!;
    expect((queue.body as { next: string | null }).next).toBe('up_a');
    const second = await call('/mcp-servers/{id}/pending', { method: 'GET', url: '/mcp-servers/up/pending?after=up_a', headers: admin });
    const other = (second.body as { changes: { tool: string; digest: string }[] }).changes[0]!;
    const review = (verb: string, changes: unknown) =>
      call(`/mcp-servers/{id}/${verb}`, { method: 'POST', url: `/mcp-servers/up/${verb}`, headers: admin, payload: { changes } as never });
    expect((await review('accept', [pendingA])).res.statusCode).toBe(200);
    expect((await review('accept', [pendingA])).res.statusCode).toBe(409);
    expect((await review('reject', [other])).res.statusCode).toBe(200);
    expect((await review('reject', [{ tool: 'up_b', digest: 'sha256:0' }])).res.statusCode).toBe(400);
    expect(
      (await call('/mcp-servers/{id}/pending', { method: 'GET', url: '/mcp-servers/nope/pending', headers: admin })).res.statusCode,
    ).toBe(404);
    expect((await call('/mcp-servers/{id}', { method: 'DELETE', url: '/mcp-servers/up', headers: admin })).res.statusCode).toBe(200);

    // Deprecation (issue 34): set, refused for an unknown tool, lifted.
    const deprecation = (method: 'PUT' | 'DELETE', name: string, payload?: unknown) =>
      call('/tools/{name}/deprecation', {
        method,
        url: `/tools/${name}/deprecation`,
        headers: admin,
        ...(payload !== undefined && { payload: payload as never }),
      });
    expect((await deprecation('PUT', 'calculator', { reason: 'checked by the document test' })).res.statusCode).toBe(200);
    expect((await deprecation('PUT', 'nope', {})).res.statusCode).toBe(404);
    expect((await deprecation('DELETE', 'calculator')).res.statusCode).toBe(200);

    // OpenAPI sources (issue 30): a small document, its one operation a tool.
    const source = {
      prefix: 'ex_',
      credential: { bearer: 'example-api-token' },
      document: {
        openapi: '3.1.0',
        info: { title: 'Example', version: '1' },
        servers: [{ url: 'https://api.example.com/v1' }],
        paths: {
          '/items/{id}': {
            get: {
              operationId: 'getItem',
              parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
              responses: { '200': { description: 'the item' } },
            },
          },
        },
      },
    };
    const putSource = (payload: unknown) =>
      call('/openapi-sources/{id}', { method: 'PUT', url: '/openapi-sources/example', headers: admin, payload: payload as never });
    expect((await putSource(source)).res.statusCode).toBe(201);
    expect((await putSource({ ...source, credential: { set: true } })).res.statusCode).toBe(200);
    expect((await putSource({ ...source, document: 'openapi: [' })).res.statusCode).toBe(400);
    expect((await call('/openapi-sources', { method: 'GET', url: '/openapi-sources', headers: admin })).res.statusCode).toBe(200);
    expect((await call('/openapi-sources/{id}', { method: 'GET', url: '/openapi-sources/example', headers: admin })).res.statusCode).toBe(
      200,
    );
    expect((await call('/openapi-sources/{id}', { method: 'GET', url: '/openapi-sources/nope', headers: admin })).res.statusCode).toBe(404);
    // A tool's own credential (issue 30), on an HTTP tool of the source's host; not on the source's own tools (409).
    const cred = (method: 'PUT' | 'GET' | 'DELETE', name: string, payload?: unknown) =>
      call('/tools/{name}/credential', {
        method,
        url: `/tools/${name}/credential`,
        headers: admin,
        ...(payload !== undefined && { payload: payload as never }),
      });
    expect((await cred('PUT', 'ex_getItem', { bearer: 'x' })).res.statusCode).toBe(409);
    expect((await cred('PUT', 'nope', { bearer: 'x' })).res.statusCode).toBe(404);
    expect(
      (
        await call('/tools/{name}', {
          method: 'PUT',
          url: '/tools/own_credential',
          headers: admin,
          payload: { description: 'x', target: { baseUrl: 'https://api.example.com', method: 'GET', path: '/x' } } as never,
        })
      ).res.statusCode,
    ).toBe(201);
    expect((await cred('PUT', 'own_credential', { bearer: 'x' })).res.statusCode).toBe(200);
    expect((await cred('PUT', 'own_credential', { bearer: '' })).res.statusCode).toBe(400);
    expect((await cred('GET', 'own_credential')).res.statusCode).toBe(200);
    expect((await cred('DELETE', 'own_credential')).res.statusCode).toBe(200);
    expect((await cred('GET', 'own_credential')).res.statusCode).toBe(404);
    expect((await cred('DELETE', 'own_credential')).res.statusCode).toBe(404);
    // Read again (issue 30): a source given inline has no URL (409); one read from a URL queues what changed.
    const refresh = (id: string) =>
      call('/openapi-sources/{id}/refresh', { method: 'POST', url: `/openapi-sources/${id}/refresh`, headers: admin });
    expect((await refresh('example')).res.statusCode).toBe(409);
    let served: unknown = source.document;
    const documentHost = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(served)),
    );
    await new Promise<void>((r) => documentHost.listen(0, '127.0.0.1', r));
    try {
      const documentUrl = `http://127.0.0.1:${(documentHost.address() as AddressInfo).port}/openapi.json`;
      const putServed = await call('/openapi-sources/{id}', {
        method: 'PUT',
        url: '/openapi-sources/served',
        headers: admin,
        payload: { prefix: 'sv_', documentUrl } as never,
      });
      expect(putServed.res.statusCode).toBe(201);
      served = {
        ...source.document,
        paths: { ...source.document.paths, '/other': { get: { operationId: 'other', responses: { '200': { description: 'ok' } } } } },
      };
      expect((await refresh('served')).res.statusCode).toBe(200);
      const pending = await call('/openapi-sources/{id}/pending', {
        method: 'GET',
        url: '/openapi-sources/served/pending',
        headers: admin,
      });
      expect(pending.res.statusCode).toBe(200);
      const change = (pending.res.json().changes as { tool: string; digest: string }[])[0];
      expect(change?.tool).toBe('sv_other');
      const review = (verb: 'accept' | 'reject', changes: unknown) =>
        call(`/openapi-sources/{id}/${verb}`, {
          method: 'POST',
          url: `/openapi-sources/served/${verb}`,
          headers: admin,
          payload: { changes } as never,
        });
      expect((await review('reject', [{ tool: 'sv_other', digest: change?.digest }])).res.statusCode).toBe(200);
      expect((await review('accept', [{ tool: 'sv_other', digest: `sha256:${'1'.repeat(64)}` }])).res.statusCode).toBe(409);
      expect((await review('accept', [{ tool: 'sv_other', digest: change?.digest }])).res.statusCode).toBe(200);
      expect((await review('reject', [{ tool: 'sv_other', digest: change?.digest }])).res.statusCode).toBe(409);
    } finally {
      await new Promise<void>((r) => documentHost.close(() => r()));
    }
    expect(
      (await call('/openapi-sources/{id}', { method: 'DELETE', url: '/openapi-sources/example', headers: admin })).res.statusCode,
    ).toBe(200);
    expect(
      (await call('/openapi-sources/{id}', { method: 'DELETE', url: '/openapi-sources/example', headers: admin })).res.statusCode,
    ).toBe(404);

    // Bulk.
    const bundle: unknown = JSON.parse(readFileSync(join(ROOT, 'examples', 'seed.json'), 'utf8'));
    expect((await call('/import', { method: 'POST', url: '/import', headers: admin, payload: bundle as never })).res.statusCode).toBe(200);
    expect(
      (await call('/import', { method: 'POST', url: '/import', headers: admin, payload: { tools: [{ name: 'bad' }] } })).res.statusCode,
    ).toBe(400);
    expect((await call('/import', { method: 'POST', url: '/import', headers: agent, payload: {} })).res.statusCode).toBe(403);
    const exported = await call('/export', { method: 'GET', url: '/export', headers: admin });
    expect(exported.res.statusCode).toBe(200);
    document.expectValid(document.schema('ImportBundle'), exported.body, 'an export is an import bundle');
    expect((await call('/export', { method: 'GET', url: '/export' })).res.statusCode).toBe(401);
    // TrustGraph's config form both ways (issue 15).
    const dump = await call('/export', { method: 'GET', url: '/export?format=trustgraph', headers: admin });
    expect(dump.res.statusCode).toBe(200);
    document.expectValid(document.schema('TrustGraphConfigDump'), dump.body, 'a TrustGraph dump');
    const reimported = await call('/import', { method: 'POST', url: '/import', headers: admin, payload: dump.body as never });
    expect(reimported.res.statusCode).toBe(200);
    expect((reimported.body as { skipped: unknown[] }).skipped).toEqual([]);

    // The audit log, its query checked by its schema after the admin scope.
    const audit = await call('/audit', { method: 'GET', url: '/audit?limit=5', headers: admin });
    expect(audit.res.statusCode).toBe(200);
    expect((audit.body as { entries: unknown[] }).entries).toHaveLength(5);
    const next = (audit.body as { nextCursor: string }).nextCursor;
    expect((await call('/audit', { method: 'GET', url: `/audit?limit=5&cursor=${next}&outcome=ok`, headers: admin })).res.statusCode).toBe(
      200,
    );
    expect((await call('/audit', { method: 'GET', url: '/audit', headers: agent })).res.statusCode).toBe(403);
    expect((await app.inject({ method: 'GET', url: '/audit?limit=0&colour=red' })).statusCode, 'the admin scope before the query').toBe(
      401,
    );
    const badAudit = await app.inject({ method: 'GET', url: '/audit?limit=0&colour=red', headers: admin });
    expect(badAudit.statusCode).toBe(400);
    expect(badAudit.json()).toMatchObject({
      code: 'TR_ERR_BAD_REQUEST',
      detail: 'invalid audit query',
      errors: expect.arrayContaining([
        { path: 'limit', message: expect.any(String) },
        { path: 'colour', message: 'unknown query parameter "colour"' },
      ]),
    });
    expectDocumented(document, '/audit', 'get', badAudit);
    expect((await call('/tool-services', { method: 'GET', url: '/tool-services', headers: admin })).res.statusCode).toBe(200);

    // Calls: HTTP tools served by the tiny tool server, a message-bus tool without a bus.
    const httpTool = (name: string, endpoint: string, extra: Record<string, unknown> = {}) => ({
      name,
      description: `${name}, a test tool`,
      endpoint,
      host: '127.0.0.1',
      port: toolPort,
      scopes: ['echo:use'],
      ...extra,
    });
    // echo takes an optional `text`: calls are checked against the input schema (issue 12 of the schemas).
    const echoParameters = { parameters: { text: { type: 'string', required: false } } };
    for (const tool of [
      httpTool('echo', '/echo', echoParameters),
      httpTool('broken', '/fail'),
      httpTool('slow', '/slow', { timeoutMs: 50 }),
    ]) {
      expect(
        (await call('/tools/{name}', { method: 'PUT', url: `/tools/${tool.name}`, headers: admin, payload: tool })).res.statusCode,
      ).toBe(201);
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
    document.expectValid(document.schema('InvokeChunk'), events[0]?.data, 'chunk event');
    document.expectValid(document.schema('InvokeResult'), events[1]?.data, 'result event');
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
    // Without a token, an unknown name answers like a known one: 401; and the arguments are
    // looked at only after the caller: not an object, but refused for want of a token first.
    expect((await invoke('nope', { payload: {} })).res.statusCode).toBe(401);
    expect((await invoke('echo', { payload: [1, 2] })).res.statusCode).toBe(401);
    expect((await invoke('nope', { headers: user, payload: [1, 2] })).res.statusCode).toBe(404);
    expect((await invoke('echo', { headers: user, payload: [1, 2] })).body).toMatchObject({
      status: 400,
      code: 'TR_ERR_INVALID_ARGUMENTS',
      errors: [{ path: '' }],
    });
    // A JSON null is not an object either (no body at all means no arguments).
    expect((await invoke('echo', { headers: { ...user, 'content-type': 'application/json' }, payload: 'null' })).body).toMatchObject({
      status: 400,
      code: 'TR_ERR_INVALID_ARGUMENTS',
      errors: [{ path: '' }],
    });
    expect((await invoke('echo', { headers: { ...user, 'content-type': 'application/json' }, payload: '{' })).body).toMatchObject({
      status: 400,
      code: 'TR_ERR_INVALID_JSON',
    });
    expect((await invoke('echo', { headers: user, payload: { text: 'x'.repeat(handle.config.bodyLimit) } })).res.statusCode).toBe(413);
    expect((await invoke('echo', { headers: { ...user, 'content-type': 'text/plain' }, payload: 'hi' })).res.statusCode).toBe(415);
    const failed = await invoke('broken', { headers: user, payload: {} });
    expect(failed.body).toMatchObject({
      status: 502,
      code: 'TR_ERR_TOOL_SERVICE',
      serviceError: { type: 'http-500', message: 'the tool broke' },
    });
    const noBus = await invoke('tell-joke', { headers: user, payload: { topic: 'x' } });
    expect(noBus.body).toMatchObject({ status: 503, code: 'TR_ERR_BUS_UNAVAILABLE' });
    expect(noBus.res.headers['retry-after']).toBe('5');
    expect((await invoke('slow', { headers: user, payload: {} })).body).toMatchObject({ status: 504, code: 'TR_ERR_TIMEOUT' });

    // The calls show in the usage figures.
    const usage = (await call('/stats', { method: 'GET', url: '/stats' })).body as Record<string, Record<string, unknown>>;
    // Calls refused at the scope check count only as `denied` errors, not as uses.
    expect(usage['usage_by_tool']).toEqual({ broken: 1, echo: 3, slow: 1, 'tell-joke': 1 });
    // Per-agent figures name token subjects: operators only (issue 9).
    expect(usage['usage_by_agent']).toEqual({});
    const operatorUsage = (await call('/stats', { method: 'GET', url: '/stats', headers: admin })).body as Record<
      string,
      Record<string, unknown>
    >;
    expect(operatorUsage['usage_by_agent']).toEqual({ 'test-agent': { broken: 1, echo: 3, slow: 1, 'tell-joke': 1 } });
    expect(usage['errors_by_class']).toEqual({ denied: 5, 'service-error': 1, timeout: 1, unavailable: 1 });
    expect(usage['latency_ms_by_tool']?.['echo']).toMatchObject({ samples: 3 });
    // The same calls over the last hour, minute by minute (issue 34); a window it does not keep is a 400.
    const hour = (await call('/stats', { method: 'GET', url: '/stats?window=1h' })).body as Record<string, unknown>;
    expect(hour['usage_by_tool']).toEqual(usage['usage_by_tool']);
    expect(hour['errors_by_class']).toEqual(usage['errors_by_class']);
    expect((await call('/stats', { method: 'GET', url: '/stats?window=7d' })).res.statusCode).toBe(400);

    // AG-UI (issue 12): a run of an assistant message's calls, and one call answered as a run.
    const runInput = {
      threadId: 't',
      runId: 'r',
      messages: [{ id: 'a', role: 'assistant', toolCalls: [{ id: 'c', type: 'function', function: { name: 'echo', arguments: '' } }] }],
    };
    const run = await call('/ag-ui', { method: 'POST', url: '/ag-ui', headers: user, payload: runInput });
    expect(run.res.statusCode).toBe(200);
    const runEvents = agUiEvents(run.res.body);
    for (const event of runEvents) document.expectValid(document.schema('AgUiEvent'), event, `AG-UI ${event.type}`);
    expect(runEvents.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'ACTIVITY_SNAPSHOT',
      'TOOL_CALL_RESULT',
      'RUN_FINISHED',
    ]);
    expect((await call('/ag-ui', { method: 'POST', url: '/ag-ui', payload: runInput })).res.statusCode).toBe(401);
    expect((await call('/ag-ui', { method: 'POST', url: '/ag-ui', headers: user, payload: { threadId: 't' } })).body).toMatchObject({
      status: 400,
      code: 'TR_ERR_BAD_REQUEST',
    });
    const runCall = await call('/tools/{name}/invoke', {
      method: 'POST',
      url: '/tools/echo/invoke?stream=ag-ui',
      headers: user,
      payload: {},
    });
    expect(runCall.res.statusCode).toBe(200);
    const callEvents = agUiEvents(runCall.res.body);
    for (const event of callEvents) document.expectValid(document.schema('AgUiEvent'), event, `AG-UI ${event.type}`);
    expect(callEvents.map((e) => e.type)).toEqual([
      'RUN_STARTED',
      'TOOL_CALL_START',
      'TOOL_CALL_ARGS',
      'TOOL_CALL_END',
      'ACTIVITY_SNAPSHOT',
      'TOOL_CALL_RESULT',
      'RUN_FINISHED',
    ]);
    expect(
      (await call('/tools/{name}/invoke', { method: 'POST', url: '/tools/broken/invoke?stream=ag-ui', headers: user, payload: {} })).res
        .statusCode,
    ).toBe(502);

    // Reads in every view.
    for (const headers of [{}, agent, admin]) {
      expect((await call('/', { method: 'GET', url: '/', headers })).res.statusCode).toBe(200);
      expect((await call('/stats', { method: 'GET', url: '/stats', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}', { method: 'GET', url: '/tools/tell-joke', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}', { method: 'GET', url: '/tools/calculator', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}', { method: 'GET', url: '/tools/nope', headers })).res.statusCode).toBe(404);
      expect((await call('/tools/{name}', { method: 'GET', url: '/tools/not%20a%20name', headers })).res.statusCode).toBe(404);
      expect((await call('/tools/{name}/access', { method: 'GET', url: '/tools/calculator/access', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}/access', { method: 'GET', url: '/tools/tell-joke/access', headers })).res.statusCode).toBe(200);
      expect((await call('/tools/{name}/access', { method: 'GET', url: '/tools/nope/access', headers })).res.statusCode).toBe(404);
    }
    expect(
      (await call('/tools/{name}/access', { method: 'GET', url: '/tools/calculator/access', headers: bearer('not.a.jwt') })).res.statusCode,
    ).toBe(401);
    // Exports (issue 12): every format, a 304 on its own ETag, an unknown format.
    for (const format of ['openai', 'openai-responses', 'openai-strict', 'anthropic', 'mcp', 'ag-ui', 'prompt']) {
      const exported = await call('/', { method: 'GET', url: `/?format=${format}`, headers: agent });
      expect(exported.res.statusCode, format).toBe(200);
      const etag = String(exported.res.headers['etag']);
      expect(
        (await call('/', { method: 'GET', url: `/?format=${format}`, headers: { ...agent, 'if-none-match': etag } })).res.statusCode,
      ).toBe(304);
    }
    expect((await call('/', { method: 'GET', url: '/?format=gemini', headers: agent })).res.statusCode).toBe(400);
    const pagedExport = await call('/', { method: 'GET', url: '/?format=mcp&limit=1', headers: agent });
    expect(pagedExport.res.statusCode).toBe(200);
    expect(pagedExport.res.headers['link']).toMatch(/^<[^>]+>; rel="next"$/);
    expect(
      (
        await call('/', {
          method: 'GET',
          url: '/?format=mcp&limit=1',
          headers: { ...agent, 'if-none-match': String(pagedExport.res.headers['etag']) },
        })
      ).res.statusCode,
    ).toBe(304);
    expect((await call('/', { method: 'GET', url: '/', headers: { authorization: 'Basic abc' } })).res.statusCode).toBe(400);
    expect((await call('/', { method: 'GET', url: '/', headers: bearer('not.a.jwt') })).res.statusCode).toBe(401);
    expect((await call('/stats', { method: 'GET', url: '/stats', headers: bearer('not.a.jwt') })).res.statusCode).toBe(401);
    // A token in the query string is refused before the query is looked at.
    const queryToken = await app.inject({ method: 'GET', url: `/?access_token=${handle.token([])}&limit=0` });
    expect(queryToken.statusCode).toBe(401);
    expectDocumented(document, '/', 'get', queryToken);

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
    const heldUnchanged = await call('/', {
      method: 'GET',
      url: `/?index=${seenIndex}&wait=50ms`,
      headers: { ...agent, 'if-none-match': seenEtag },
    });
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
    const refusals: [string, string | null][] = [
      ['/?limit=0', 'limit'],
      ['/?limit=1001', 'limit'],
      ['/?limit=2&cursor=bogus', null],
      ['/?index=-1', 'index'],
      ['/?index=1&wait=forever', 'wait'],
      ['/?updated_since=yesterday', 'updated_since'],
      ['/?scope=two%20words', 'scope'],
    ];
    for (const [url, path] of refusals) {
      const refused = await call('/', { method: 'GET', url });
      expect(refused.res.statusCode, url).toBe(400);
      expect(refused.body, url).toMatchObject({ code: 'TR_ERR_BAD_REQUEST' });
      if (path !== null) expect(refused.body, url).toMatchObject({ detail: 'invalid discovery query', errors: [{ path }] });
    }

    // Deletes (after a moment, so that `updated_since` below tells them from earlier writes).
    await new Promise((resolve) => setTimeout(resolve, 5));
    const beforeDeletes = new Date().toISOString();
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect((await call('/tools/{name}', { method: 'DELETE', url: '/tools/calculator', headers: admin })).res.statusCode).toBe(200);
    expect((await call('/tools/{name}', { method: 'DELETE', url: '/tools/calculator', headers: admin })).res.statusCode).toBe(404);
    expect(
      (await call('/tools/{name}/invoke', { method: 'POST', url: '/tools/calculator/invoke', headers: agent, payload: {} })).res.statusCode,
    ).toBe(410);
    expect((await call('/tools/{name}', { method: 'DELETE', url: '/tools/tell-joke' })).res.statusCode).toBe(401);
    expect((await call('/tools/{name}', { method: 'DELETE', url: '/tools/tell-joke', headers: admin })).res.statusCode).toBe(200);
    expect(
      (await call('/tool-services/{id}', { method: 'DELETE', url: '/tool-services/joke-service', headers: admin })).res.statusCode,
    ).toBe(200);
    expect(
      (await call('/tool-services/{id}', { method: 'DELETE', url: '/tool-services/joke-service', headers: admin })).res.statusCode,
    ).toBe(404);

    // What changed since then, tombstones included.
    const changed = await call('/', { method: 'GET', url: `/?updated_since=${encodeURIComponent(beforeDeletes)}` });
    expect((changed.body as { tools: { name: string; status: string }[] }).tools.map((t) => [t.name, t.status])).toEqual([
      ['calculator', 'deleted'],
      ['tell-joke', 'deleted'],
    ]);
    const changedInScope = await call('/', {
      method: 'GET',
      url: `/?updated_since=${encodeURIComponent(beforeDeletes)}&scope=calculator:use`,
      headers: agent,
    });
    expect(changedInScope.body).toMatchObject({ tools: [{ name: 'calculator', status: 'deleted' }], nextCursor: null });

    // The change feed, read over a real socket.
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as AddressInfo).port;
    const lastWrite = Number((await call('/', { method: 'GET', url: '/' })).res.headers['x-registry-index']);
    const stream = async (path: string, headers: Record<string, string>, act: () => Promise<void>, done: (text: string) => boolean) => {
      const opened = await openStream(port, path, headers);
      expectDocumentedQuery(document, '/changes', 'get', path, opened.answer().statusCode);
      try {
        await opened.until((text) => text.startsWith(': connected\n\n'));
        await act();
        await opened.until(done);
        const answer = opened.answer();
        expectDocumented(document, '/changes', 'get', answer);
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
    const replayed = expectChangeFeed(document, replay.events, 'admin replay');
    expect(replayed.at(-1)?.at(-1)?.data).toEqual({ index: lastWrite, op: 'delete', kind: 'tool-service', name: 'joke-service' });
    expect(replayed.some((write) => write.length > 1)).toBe(true);
    expect(replay.events.some((e) => e.data['kind'] === 'tool')).toBe(true);
    // A live agent resuming from Last-Event-ID gets its view's writes only: not the tool
    // service, not a tool it cannot see.
    const resumed = await stream(
      '/changes',
      { ...agent, 'last-event-id': String(lastWrite) },
      async () => {
        expect(
          (
            await call('/tool-services/{id}', {
              method: 'PUT',
              url: '/tool-services/feed-service',
              headers: admin,
              payload: { topic: 'feed' },
            })
          ).res.statusCode,
        ).toBe(201);
        expect(
          (await call('/tools/{name}', { method: 'PUT', url: '/tools/hidden', headers: admin, payload: httpTool('hidden', '/echo') })).res
            .statusCode,
        ).toBe(201);
        expect(
          (await call('/tools/{name}', { method: 'PUT', url: '/tools/calculator', headers: admin, payload: seed('calculator') })).res
            .statusCode,
        ).toBe(201);
      },
      hasEventId(lastWrite + 3),
    );
    expect(expectChangeFeed(document, resumed.events, 'agent feed').map((write) => write.map((e) => e.data))).toEqual([
      [{ index: lastWrite + 3, op: 'upsert', kind: 'tool', name: 'calculator' }],
    ]);
    expect(resumed.answer.headers['x-registry-index']).toBe(String(lastWrite));
    // Its replay from the start shows no tool-service change either.
    const agentReplay = await stream('/changes', { ...agent, 'last-event-id': '0' }, nothingToDo, hasEventId(lastWrite + 3));
    expectChangeFeed(document, agentReplay.events, 'agent replay');
    expect(agentReplay.events.filter((e) => e.data['kind'] !== 'tool')).toEqual([]);
    expect(agentReplay.events.map((e) => e.data['name'])).not.toContain('hidden');
    for (const headers of [
      { ...agent, 'last-event-id': 'latest' },
      { ...agent, 'last-event-id': '-1' },
    ]) {
      const refused = await call('/changes', { method: 'GET', url: '/changes', headers });
      expect(refused.res.statusCode).toBe(400);
      expect(refused.body).toMatchObject({
        code: 'TR_ERR_BAD_REQUEST',
        detail: 'Last-Event-ID (or since) must be a registry index from this feed',
        errors: [{ path: 'last-event-id' }],
      });
    }
    expect((await call('/changes', { method: 'GET', url: '/changes?since=1.5', headers: agent })).res.statusCode).toBe(400);
    expect((await call('/changes', { method: 'GET', url: '/changes', headers: bearer('not.a.jwt') })).res.statusCode).toBe(401);
    expect((await call('/changes', { method: 'GET', url: '/changes', headers: { authorization: 'Basic abc' } })).res.statusCode).toBe(400);

    // Operations.
    expect((await call('/healthz', { method: 'GET', url: '/healthz', headers: bearer('ignored') })).res.statusCode).toBe(200);
    const ready = await call('/readyz', { method: 'GET', url: '/readyz' });
    expect(ready.res.statusCode).toBe(200);
    expect(ready.body).toMatchObject({ checks: { database: 'ok', bridge: 'not-configured' }, signingKeys: 'local', inflightCalls: 0 });
    // Prometheus metrics: operators only (METRICS_PORT unset).
    const metrics = await call('/metrics', { method: 'GET', url: '/metrics', headers: admin });
    expect(metrics.res.statusCode).toBe(200);
    expect(metrics.body).toContain('# TYPE tool_registry_tool_calls_total counter');
    expect((await call('/metrics', { method: 'GET', url: '/metrics' })).res.statusCode).toBe(401);
    expect((await call('/metrics', { method: 'GET', url: '/metrics', headers: agent })).res.statusCode).toBe(403);
    const metadata = '/.well-known/oauth-protected-resource';
    expect((await call(metadata, { method: 'GET', url: metadata, headers: bearer('ignored') })).res.statusCode).toBe(200);
    expect((await call('/openapi.yaml', { method: 'GET', url: '/openapi.yaml' })).res.statusCode).toBe(200);
    expect((await call('/openapi.json', { method: 'GET', url: '/openapi.json' })).res.statusCode).toBe(200);

    // MCP: a session opened, a list, its notification stream (over the socket), its end.
    const mcpBase = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const initialize = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'openapi-test', version: '1' } },
    };
    const initialized = await call('/mcp', { method: 'POST', url: '/mcp', headers: { ...agent, ...mcpBase }, payload: initialize });
    expect(initialized.res.statusCode).toBe(200);
    expect(String(initialized.body)).toContain('"protocolVersion":"2025-11-25"');
    const session = {
      ...agent,
      ...mcpBase,
      'mcp-session-id': String(initialized.res.headers['mcp-session-id']),
      'mcp-protocol-version': '2025-11-25',
    };
    expect(
      (
        await call('/mcp', {
          method: 'POST',
          url: '/mcp',
          headers: session,
          payload: { jsonrpc: '2.0', method: 'notifications/initialized' },
        })
      ).res.statusCode,
    ).toBe(202);
    const listed = await call('/mcp', {
      method: 'POST',
      url: '/mcp',
      headers: session,
      payload: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    });
    expect(listed.res.statusCode).toBe(200);
    // A first event to resume from (an id, empty data), then the answer with its event id (issue 31).
    expect(String(listed.body)).toMatch(/^id: [^\n]+\ndata: \n\nevent: message\nid: [^\n]+\ndata: \{"result":\{"tools":\[/);
    const notices = await openStream(port, '/mcp', { ...session, accept: 'text/event-stream' });
    expectDocumented(document, '/mcp', 'get', notices.answer());
    notices.close();
    // Revision 2026-07-28's subscriptions/listen: POST's event stream, without event ids (issue 31).
    const listening = await openStream(
      port,
      '/mcp',
      { ...agent, ...mcpBase, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
      {
        jsonrpc: '2.0',
        id: 'listen',
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'openapi-test', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      },
    );
    await listening.until((text) => text.includes('notifications/subscriptions/acknowledged'));
    expectDocumented(document, '/mcp', 'post', listening.answer());
    listening.close();
    // The revision's refusals: JSON-RPC answers in application/json (a _meta without the client's
    // capabilities, a missing Mcp-Method, and ping, which the revision removed).
    const modern = { ...agent, ...mcpBase, 'mcp-protocol-version': '2026-07-28' };
    const envelope = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
    for (const [headers, params, method, status] of [
      [
        { ...modern, 'mcp-method': 'tools/list' },
        { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
        'tools/list',
        400,
      ],
      [modern, { _meta: envelope }, 'tools/list', 400],
      [{ ...modern, 'mcp-method': 'ping' }, { _meta: envelope }, 'ping', 404],
    ] as const) {
      const refused = await call('/mcp', { method: 'POST', url: '/mcp', headers, payload: { jsonrpc: '2.0', id: 'r', method, params } });
      expect(refused.res.statusCode, refused.res.body).toBe(status);
      expect(refused.res.headers['content-type']).toMatch(/^application\/json/);
    }
    const { 'content-type': _bodyless, ...sessionHeaders } = session;
    expect((await call('/mcp', { method: 'DELETE', url: '/mcp', headers: sessionHeaders })).res.statusCode).toBe(204);
    expect(
      (await call('/mcp', { method: 'POST', url: '/mcp', headers: session, payload: { jsonrpc: '2.0', id: 3, method: 'tools/list' } })).res
        .statusCode,
    ).toBe(404);
    expect((await call('/mcp', { method: 'POST', url: '/mcp', headers: mcpBase, payload: initialize })).res.statusCode).toBe(401);
    expect(
      (
        await call('/mcp', {
          method: 'POST',
          url: '/mcp',
          headers: { ...agent, 'content-type': 'application/json', accept: 'application/json' },
          payload: initialize,
        })
      ).res.statusCode,
    ).toBe(406);
    const preflight = await call('/mcp', {
      method: 'OPTIONS',
      url: '/mcp',
      headers: { origin: handle.config.publicUrl.origin, 'access-control-request-method': 'POST' },
    });
    expect(preflight.res.statusCode).toBe(204);
    expect(preflight.res.headers['access-control-allow-origin']).toBe(handle.config.publicUrl.origin);
    expect((await call('/mcp', { method: 'OPTIONS', url: '/mcp', headers: { origin: 'http://elsewhere.example' } })).res.statusCode).toBe(
      403,
    );
    const mcpMetadata = '/.well-known/oauth-protected-resource/mcp';
    expect((await call(mcpMetadata, { method: 'GET', url: mcpMetadata })).res.statusCode).toBe(200);

    expect(
      [...document.operations()].filter((op) => !exercised.has(op)),
      'operations no check saw succeed',
    ).toEqual([]);
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
    const adminWrites = [
      'POST /tools/register',
      'PUT /tools/{name}',
      'DELETE /tools/{name}',
      'PUT /tool-services/{id}',
      'DELETE /tool-services/{id}',
      'POST /import',
    ];
    try {
      // Reads and calls share one count per caller: this request uses up the anonymous allowance.
      expect((await limited.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
      // Admin writes share one count of their own, which reads did not use up: the first write
      // gets through to the auth check (401), every later write is over the limit.
      let firstWrite = true;
      for (const op of document.operations()) {
        const res = await inject(op);
        if (adminWrites.includes(op)) {
          expect(res.statusCode, `${op}: the shared write count`).toBe(firstWrite ? 401 : 429);
          firstWrite = false;
        }
      }
      for (const op of document.operations()) {
        const [method = '', path = ''] = op.split(' ');
        const res = await inject(op);
        const documents429 = document.at(`${document.operation(path, method.toLowerCase())}/responses/429`) !== undefined;
        expect(res.statusCode === 429, `${op} -> ${res.statusCode}, 429 documented: ${documents429}`).toBe(documents429);
        if (res.statusCode === 429) expectDocumented(document, path, method.toLowerCase(), res);
      }
      // The documentation pages are not counted either.
      for (const url of ['/docs', '/docs/json', '/docs/static/swagger-initializer.js'])
        expect((await limited.app.inject({ method: 'GET', url })).statusCode, url).toBe(200);
    } finally {
      await limited.close();
    }
  });

  describe('answers given before any route runs', () => {
    /** Operations rate limiting does not count (src/http/routes: `rateLimit: false`). */
    const UNLIMITED = new Set([
      'GET /healthz',
      'GET /readyz',
      'GET /.well-known/oauth-protected-resource',
      'GET /.well-known/oauth-protected-resource/mcp',
      'GET /openapi.json',
      'GET /openapi.yaml',
    ]);
    /** What a probe-only connection still answers (src/http/plugins/connections.ts). */
    const PROBES = new Set(['GET /healthz', 'GET /readyz']);

    function preRouteStatuses(op: string): Record<string, string> {
      const [method = '', path = ''] = op.split(' ');
      const statuses: Record<string, string> = { 400: 'MalformedRequest', 408: 'RequestTimeout', 431: 'HeadersTooLarge' };
      if (method !== 'GET') Object.assign(statuses, { 413: 'PayloadTooLarge', 415: 'UnsupportedMediaType' });
      if (path.includes('{')) statuses[414] = 'PathSegmentTooLong';
      if (!UNLIMITED.has(op)) statuses[429] = 'TooManyRequests';
      if (!PROBES.has(op)) statuses[503] = 'ProbeOnlyConnection';
      return statuses;
    }

    it('are listed on every operation they can reach, each in its own words', () => {
      const seen = new Set<string>();
      for (const op of document.operations()) {
        const [method = '', path = ''] = op.split(' ');
        const operation = document.operation(path, method.toLowerCase());
        for (const [status, name] of Object.entries(preRouteStatuses(op))) {
          seen.add(status);
          expect(document.at(`${operation}/responses/${status}`), `${op} lists ${status}`).toBeDefined();
          const response = document.resolve(`${operation}/responses/${status}`);
          const own = document.at(`/components/responses/${name}/description`);
          expect(typeof own === 'string' && own.length > 0, name).toBe(true);
          expect(document.at(`${response}/description`), `${op} ${status} says what ${name} says`).toContain(own);
          expect(document.at(`${response}/content/application~1problem+json/schema`), `${op} ${status}`).toEqual({
            $ref: '#/components/schemas/Problem',
          });
        }
      }
      expect([...seen].sort()).toEqual(['400', '408', '413', '414', '415', '429', '431', '503']);
      for (const name of [
        'MalformedRequest',
        'RequestTimeout',
        'PayloadTooLarge',
        'PathSegmentTooLong',
        'UnsupportedMediaType',
        'HeadersTooLarge',
        'ProbeOnlyConnection',
      ]) {
        const example = document.at(`/components/responses/${name}/content/application~1problem+json/example`) as Json | undefined;
        expect(example, `${name} has an example`).toBeDefined();
        const code = example?.['code'] as keyof typeof ERRORS;
        expect(example, `${name}'s example is the catalogue's ${code}`).toMatchObject({
          type: problemType(code),
          title: ERRORS[code].title,
          status: ERRORS[code].status,
        });
      }
    });

    it('are what the server answers (414, 431, 400, 408)', async () => {
      const quick = await createTestApp({ HEADERS_TIMEOUT_MS: '100' });
      try {
        await quick.app.listen({ port: 0, host: '127.0.0.1' });
        const port = (quick.app.server.address() as AddressInfo).port;
        for (const op of document.operations()) {
          const [method = '', path = ''] = op.split(' ');
          const check = (res: Answer, status: number) => {
            expect(res.statusCode, `${op}: ${res.body.slice(0, 200)}`).toBe(status);
            expectDocumented(document, path, method.toLowerCase(), res);
          };
          // The router's limit on a path parameter; 200 characters are still taken.
          if (path.includes('{')) {
            check(await quick.app.inject({ method: method as InjectOptions['method'], url: concrete(path, 'a'.repeat(201)) }), 414);
            expect(
              (await quick.app.inject({ method: method as InjectOptions['method'], url: concrete(path, 'a'.repeat(200)) })).statusCode,
              op,
            ).not.toBe(414);
          }
          // Node's, before it knows the route.
          check(await rawExchange(port, `${method} ${concrete(path)} HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`), 431);
          check(await rawExchange(port, `${method} ${concrete(path)} HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n`), 400);
        }
        // Headers that never end: all at once, as each waits out HEADERS_TIMEOUT_MS.
        const ops = [...document.operations()].map((op) => op.split(' ') as [string, string]);
        const slow = await Promise.all(
          ops.map(([method, path]) => rawExchange(port, `${method} ${concrete(path)} HTTP/1.1\r\nHost: x\r\n`)),
        );
        slow.forEach((res, i) => {
          const [method, path] = ops[i] ?? ['', ''];
          expect(res.statusCode, `${method} ${path}`).toBe(408);
          expectDocumented(document, path, method.toLowerCase(), res);
        });
      } finally {
        await quick.close();
      }
    });

    it('are what the server answers on a probe-only connection (503)', async () => {
      const small = await createTestApp({ MAX_CONNECTIONS_PER_ADDRESS: '1' });
      let held: Socket | undefined;
      try {
        await small.app.listen({ port: 0, host: '127.0.0.1' });
        const port = (small.app.server.address() as AddressInfo).port;
        // The one ordinary connection this address may hold: every later one is probe-only.
        held = await new Promise<Socket>((resolve) => {
          const socket = connect(port, '127.0.0.1', () => resolve(socket));
        });
        for (let i = 0; i < 100 && small.app.connections.heldBy('127.0.0.1') < 1; i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        expect(small.app.connections.heldBy('127.0.0.1')).toBe(1);
        for (const op of document.operations()) {
          const [method = '', path = ''] = op.split(' ');
          const res = await rawExchange(port, `${method} ${concrete(path)} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`);
          if (PROBES.has(op)) {
            expect(res.statusCode, op).toBe(200);
          } else {
            expect(res.statusCode, op).toBe(503);
            expect(res.json(), op).toMatchObject({ code: 'TR_ERR_UNAVAILABLE' });
            expect(res.headers['retry-after'], op).toBe('5');
          }
          expectDocumented(document, path, method.toLowerCase(), res);
        }
      } finally {
        held?.destroy();
        await small.close();
      }
    });
  });

  it('lists discovery entries with every property PublicTool requires', async () => {
    const required = document.at('/components/schemas/PublicTool/required');
    expect(Array.isArray(required) && required.length > 0).toBe(true);
    const admin = bearer(handle.token(['registry:write']));
    const registered = await app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('database_query') });
    expect(registered.statusCode).toBeLessThan(300);
    // The admin scope does not widen discovery: the view needs the tool's own scope.
    const res = await app.inject({ method: 'GET', url: '/', headers: bearer(handle.token(['database:read'])) });
    expect(res.statusCode).toBe(200);
    const body = res.json<{ tools: Record<string, unknown>[] }>();
    expect(body.tools.map((t) => t['name'])).toContain('database_query');
    for (const tool of body.tools) expect(Object.keys(tool)).toEqual(expect.arrayContaining(required as string[]));
    document.expectValid(document.schema('DiscoveryResponse'), body, 'the full view');
  });

  it('documents the 401 that anonymous discovery gets when ANONYMOUS_DISCOVERY=none, before a bad query', async () => {
    const closed = await createTestApp({ ANONYMOUS_DISCOVERY: 'none' });
    try {
      for (const [path, url] of [
        ['/', '/'],
        ['/stats', '/stats'],
        ['/changes', '/changes'],
        ['/', '/?limit=0'],
        ['/changes', '/changes?since=x'],
      ] as const) {
        const res = await closed.app.inject({ method: 'GET', url });
        expect(res.statusCode, url).toBe(401);
        expectDocumented(document, path, 'get', res);
      }
      const res = await closed.app.inject({ method: 'GET', url: '/', headers: bearer(closed.token([])) });
      expect(res.statusCode).toBe(200);
      expectDocumented(document, '/', 'get', res);
    } finally {
      await closed.close();
    }
  });

  it('documents the 503 past MAX_WAITERS, and the public max-age of ANONYMOUS_MAX_AGE_S', async () => {
    const small = await createTestApp({ MAX_WAITERS: '1', ANONYMOUS_MAX_AGE_S: '60' });
    try {
      const first = await small.app.inject({ method: 'GET', url: '/' });
      expect(first.headers['cache-control']).toBe('public, max-age=60');
      expectDocumented(document, '/', 'get', first);
      const withToken = await small.app.inject({ method: 'GET', url: '/', headers: bearer(small.token([])) });
      expect(withToken.headers['cache-control']).toBe('private, no-cache');
      expectDocumented(document, '/', 'get', withToken);

      // One held blocking query takes the only slot.
      const index = String(first.headers['x-registry-index']);
      const held = small.app.inject({ method: 'GET', url: `/?index=${index}&wait=20s` });
      for (let i = 0; i < 200 && small.app.waiters.size < 1; i++) await new Promise((resolve) => setTimeout(resolve, 10));
      expect(small.app.waiters.size).toBe(1);
      for (const [path, url] of [
        ['/', `/?index=${index}&wait=20s`],
        ['/changes', '/changes'],
      ] as const) {
        const res = await small.app.inject({ method: 'GET', url });
        expect(res.statusCode, url).toBe(503);
        expect(res.headers['retry-after']).toBe('5');
        expect(res.json()).toMatchObject({ code: 'TR_ERR_UNAVAILABLE' });
        expectDocumented(document, path, 'get', res);
      }
      // A write to the view answers the held query.
      const admin = bearer(small.token(['registry:write']));
      expect(
        (await small.app.inject({ method: 'POST', url: '/tools/register', headers: admin, payload: seed('calculator') })).statusCode,
      ).toBe(201);
      const answered = await held;
      expect(answered.statusCode).toBe(200);
      expect(Number(answered.headers['x-registry-index'])).toBe(Number(index) + 1);
      expect(answered.json()).toMatchObject({ tools: [{ name: 'calculator' }] });
      expectDocumented(document, '/', 'get', answered);
    } finally {
      await small.close();
    }
  });
});
