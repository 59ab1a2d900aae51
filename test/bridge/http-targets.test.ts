/**
 * Issue 30, "HTTP targets as real APIs": an HTTP tool with a full `target` (base URL, method,
 * path template, where each argument goes) called through the registry against a real HTTPS
 * server on loopback whose certificate a throwaway CA signed, given to the registry with
 * OUTBOUND_CA_FILE. TLS is verified, redirects are not followed, answers map by content type
 * (JSON, text, image, other bytes) on invoke and on /mcp, and the outbound address policy holds
 * for targets at registration and at call time.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { throwawayCa, type ThrowawayCa } from '../helpers/throwaway-ca.js';
import { connect, mcpUrl } from '../mcp/support.js';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A PNG's first bytes and then some: any bytes do, the registry does not decode images. */
const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52, 1, 2, 3, 255]);
const PDF = Buffer.from('%PDF-1.7\n\u0000\u00ff binary', 'latin1');

describe('HTTP tools with a full target, over HTTPS (issue 30)', () => {
  let ca: ThrowawayCa;
  let server: Server;
  let base: string;
  let t: TestApp;
  let admin: Record<string, string>;
  const seen: Seen[] = [];

  beforeAll(async () => {
    ca = throwawayCa();
    server = createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString();
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const url = req.url ?? '';
        const json = (value: unknown) =>
          res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(value));
        if (url.startsWith('/v1/pets/')) return json({ id: url.slice('/v1/pets/'.length).split('?')[0], method: req.method });
        if (url.startsWith('/v1/search')) return json('searched');
        if (url === '/v1/moved') return res.writeHead(302, { location: `${base}/v1/landing` }).end();
        if (url === '/v1/landing') return json('followed');
        if (url === '/v1/readme') return res.writeHead(200, { 'content-type': 'text/markdown; charset=utf-8' }).end('# Pets\n');
        if (url === '/v1/photo') return res.writeHead(200, { 'content-type': 'image/png' }).end(PNG);
        if (url === '/v1/report') return res.writeHead(200, { 'content-type': 'application/pdf' }).end(PDF);
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `https://localhost:${(server.address() as AddressInfo).port}`;
    t = await createTestApp({ RATE_LIMIT_MAX: '0', OUTBOUND_CA_FILE: ca.caFile });
    admin = bearer(t.token(['registry:write']));
  });
  afterAll(async () => {
    await t.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    ca.remove();
  });

  const register = async (app: TestApp, tool: Record<string, unknown>) => {
    const res = await app.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: bearer(app.token(['registry:write'])),
      payload: { scopes: [], description: `The ${String(tool['name'])} tool`, ...tool },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json();
  };
  const invoke = (app: TestApp, name: string, payload: unknown) =>
    app.app.inject({ method: 'POST', url: `/tools/${name}/invoke`, headers: bearer(app.token([])), payload: payload as object });

  it('verifies TLS: a certificate of a CA the registry does not know is refused; with OUTBOUND_CA_FILE it is accepted', async () => {
    const tool = { name: 'get_pet_tls', target: { baseUrl: `${base}/v1`, method: 'GET', path: '/pets/{petId}' } };
    const tool2 = { ...tool, parameters: { petId: { type: 'string' } } };
    const stranger = await createTestApp({ RATE_LIMIT_MAX: '0' });
    try {
      await register(stranger, tool2);
      const before = seen.length;
      const refused = await invoke(stranger, 'get_pet_tls', { petId: '7' });
      expect(refused.statusCode, refused.body).toBe(502);
      expect(refused.json().serviceError.type).toBe('tls-unverified');
      expect(refused.json().serviceError.message).toMatch(/OUTBOUND_CA_FILE/);
      expect(seen.length).toBe(before); // no request got through the handshake
    } finally {
      await stranger.close();
    }
    await register(t, tool2);
    const accepted = await invoke(t, 'get_pet_tls', { petId: '7' });
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect(JSON.parse(accepted.json().result)).toEqual({ id: '7', method: 'GET' });
  });

  it('GET places path, query, header and cookie arguments', async () => {
    await register(t, {
      name: 'get_pet',
      target: {
        baseUrl: `${base}/v1/`,
        method: 'GET',
        path: '/pets/{petId}',
        arguments: {
          requestId: { in: 'header', name: 'X-Request-Id' },
          session: { in: 'cookie' },
          theme: { in: 'cookie', name: 'ui-theme' },
        },
      },
      parameters: {
        petId: { type: 'string' },
        verbose: { type: 'boolean' },
        requestId: { type: 'string' },
        session: { type: 'string' },
        theme: { type: 'string', required: false },
      },
    });
    const res = await invoke(t, 'get_pet', { petId: 'rex/1 2', verbose: true, requestId: 'r-42', session: 'a b;c', theme: 'dark' });
    expect(res.statusCode, res.body).toBe(200);
    const request = seen.at(-1)!;
    expect(request.method).toBe('GET');
    // The path argument is one segment however it is spelt; the rest goes in the query (GET's default).
    expect(request.url).toBe('/v1/pets/rex%2F1%202?verbose=true');
    expect(request.headers['x-request-id']).toBe('r-42');
    expect(request.headers['cookie']).toBe('session=a%20b%3Bc; ui-theme=dark');
    expect(request.headers['content-type']).toBeUndefined();
    expect(request.headers['authorization']).toBeUndefined();
    expect(request.body).toBe('');
    // A line break in a header argument would start a header of the caller's own: refused, nothing sent.
    const before = seen.length;
    const calls = async () =>
      ((await t.app.inject({ method: 'GET', url: '/stats', headers: admin })).json() as { usage_by_tool: Record<string, number> })
        .usage_by_tool['get_pet'];
    const counted = await calls();
    expect(counted).toBe(1);
    const injected = await invoke(t, 'get_pet', { petId: '1', verbose: false, requestId: 'r\r\nX-Evil: 1', session: 's' });
    expect(injected.statusCode, injected.body).toBe(400);
    expect(injected.json().code).toBe('TR_ERR_INVALID_ARGUMENTS');
    expect(seen.length).toBe(before);
    expect(await calls()).toBe(counted); // refused like arguments that do not fit: not a call
    // A target tool is reached through the registry: discovery names the invoke route, not the API.
    const entry = (await t.app.inject({ method: 'GET', url: '/tools/get_pet', headers: bearer(t.token([])) })).json();
    expect(entry).toMatchObject({ endpoint: '/tools/get_pet/invoke', host: '127.0.0.1' });
  });

  it("writes arrays and objects in the query in each of OpenAPI's styles", async () => {
    const array = { type: 'array', items: { type: 'string' } };
    const object = { type: 'object' };
    await register(t, {
      name: 'search',
      target: {
        baseUrl: base,
        method: 'GET',
        path: '/v1/search',
        arguments: {
          tags: { in: 'query', style: 'form', explode: true },
          ids: { in: 'query', name: 'id', style: 'form', explode: false },
          words: { in: 'query', style: 'spaceDelimited' },
          colours: { in: 'query', style: 'pipeDelimited' },
          filter: { in: 'query', style: 'deepObject' },
          point: { in: 'query', style: 'form', explode: true },
          box: { in: 'query', style: 'form', explode: false },
        },
      },
      inputSchema: {
        type: 'object',
        properties: { tags: array, ids: array, words: array, colours: array, filter: object, point: object, box: object },
      },
    });
    const res = await invoke(t, 'search', {
      tags: ['a', 'b c'],
      ids: ['1', '2'],
      words: ['x', 'y'],
      colours: ['red', 'blue'],
      filter: { colour: 'red', size: { max: 3 } },
      point: { lat: 1, lon: 2 },
      box: { w: 3, h: 4 },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().result).toBe('searched');
    expect(seen.at(-1)!.url).toBe(
      '/v1/search?tags=a&tags=b%20c&id=1,2&words=x%20y&colours=red%7Cblue&filter[colour]=red&filter[size][max]=3&lat=1&lon=2&box=w,3,h,4',
    );
    // As a server reads it back.
    const query = new URL(seen.at(-1)!.url, base).searchParams;
    expect(query.getAll('tags')).toEqual(['a', 'b c']);
    expect(query.get('colours')).toBe('red|blue');
    expect(query.get('filter[size][max]')).toBe('3');
  });

  it.each([
    ['POST', { name: 'Rex' }],
    ['PUT', { name: 'Rex', tags: ['good'] }],
    ['PATCH', { name: 'Rex' }],
    ['DELETE', { reason: 'adopted' }],
  ])('%s sends its body arguments as one JSON object', async (method, body) => {
    const name = `${method.toLowerCase()}_pet`;
    const bodyArguments = Object.fromEntries(Object.keys(body).map((key) => [key, { in: 'body' }]));
    const bodyParameters = Object.fromEntries(
      Object.entries(body).map(([key, value]) => [
        key,
        Array.isArray(value) ? { type: 'array', items: { type: 'string' } } : { type: 'string' },
      ]),
    );
    await register(t, {
      name,
      target: { baseUrl: `${base}/v1`, method, path: '/pets/{petId}', arguments: { ...bodyArguments, dryRun: { in: 'query' } } },
      parameters: { petId: { type: 'integer' }, dryRun: { type: 'boolean' }, ...bodyParameters },
    });
    const res = await invoke(t, name, { petId: 9, dryRun: false, ...body });
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse(res.json().result)).toEqual({ id: '9', method });
    const request = seen.at(-1)!;
    expect(request).toMatchObject({ method, url: '/v1/pets/9?dryRun=false' });
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual(body);
  });

  it("sends the caller's token to a target only when the tool says so", async () => {
    await register(t, {
      name: 'pet_with_token',
      target: { baseUrl: `${base}/v1`, method: 'GET', path: '/pets/{petId}' },
      parameters: { petId: { type: 'string' } },
      forwardAuthorization: true,
    });
    const token = t.token([]);
    const res = await t.app.inject({
      method: 'POST',
      url: '/tools/pet_with_token/invoke',
      headers: bearer(token),
      payload: { petId: '3' },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(seen.at(-1)).toMatchObject({ url: '/v1/pets/3' });
    expect(seen.at(-1)!.headers['authorization']).toBe(`Bearer ${token}`);
    // get_pet (registered above without the field) sent none.
    expect(seen.filter((s) => s.url.startsWith('/v1/pets/rex')).every((s) => s.headers['authorization'] === undefined)).toBe(true);
  });

  it('does not follow a redirect: a 3xx answer is a failed call that says so', async () => {
    await register(t, { name: 'moved', target: { baseUrl: base, method: 'GET', path: '/v1/moved' } });
    const res = await invoke(t, 'moved', {});
    expect(res.statusCode, res.body).toBe(502);
    expect(res.json().serviceError.type).toBe('http-302');
    expect(res.json().serviceError.message).toMatch(/redirect \(302\), which the registry does not follow/);
    expect(seen.at(-1)!.url).toBe('/v1/moved');
    expect(seen.some((s) => s.url === '/v1/landing')).toBe(false);
  });

  it('maps answers by content type on invoke: JSON, text, an image and other bytes (base64 with the media type)', async () => {
    for (const [name, path] of [
      ['readme', '/v1/readme'],
      ['photo', '/v1/photo'],
      ['report', '/v1/report'],
    ] as const)
      await register(t, { name, target: { baseUrl: base, method: 'GET', path } });
    const text = (await invoke(t, 'readme', {})).json();
    expect(text.result).toBe('# Pets\n');
    expect(text.content).toBeUndefined();
    const image = (await invoke(t, 'photo', {})).json();
    expect(image.result).toBe(`[image image/png, ${PNG.byteLength} bytes]`);
    expect(image.content).toEqual({ type: 'image', mimeType: 'image/png', data: PNG.toString('base64') });
    const pdf = (await invoke(t, 'report', {})).json();
    expect(pdf.content).toEqual({ type: 'resource', mimeType: 'application/pdf', data: PDF.toString('base64') });
    expect(Buffer.from(pdf.content.data, 'base64').equals(PDF)).toBe(true);
  });

  it('maps them on /mcp: structured content for a JSON object with an output schema, image content, an embedded resource', async () => {
    await register(t, {
      name: 'pet_structured',
      target: { baseUrl: `${base}/v1`, method: 'GET', path: '/pets/{petId}' },
      parameters: { petId: { type: 'string' } },
      outputSchema: { type: 'object', properties: { id: { type: 'string' }, method: { type: 'string' } }, required: ['id'] },
    });
    for (const [name, path] of [
      ['mcp_photo', '/v1/photo'],
      ['mcp_report', '/v1/report'],
    ] as const)
      await register(t, { name, target: { baseUrl: base, method: 'GET', path } });
    const c = await connect(await mcpUrl(t.app), t.token([]));
    try {
      const structured = await c.client.callTool({ name: 'pet_structured', arguments: { petId: '5' } });
      expect(structured.isError).toBeFalsy();
      expect(structured.structuredContent).toEqual({ id: '5', method: 'GET' });
      const image = await c.client.callTool({ name: 'mcp_photo', arguments: {} });
      expect(image.content).toEqual([{ type: 'image', mimeType: 'image/png', data: PNG.toString('base64') }]);
      const report = await c.client.callTool({ name: 'mcp_report', arguments: {} });
      const [resource] = report.content as { type: string; resource: { uri: string; mimeType: string; blob: string } }[];
      expect(resource?.type).toBe('resource');
      expect(resource?.resource).toMatchObject({ mimeType: 'application/pdf', blob: PDF.toString('base64') });
      expect(resource?.resource.uri).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    } finally {
      await c.close();
    }
  });

  it('holds targets to the outbound address policy, at registration and at call time', async () => {
    const metadata = await t.app.inject({
      method: 'POST',
      url: '/tools/register',
      headers: admin,
      payload: {
        name: 'metadata',
        description: 'x',
        target: { baseUrl: 'http://169.254.169.254/latest', method: 'GET', path: '/meta-data' },
      },
    });
    expect(metadata.statusCode, metadata.body).toBe(400);
    expect(metadata.body).toContain('target.baseUrl');
    // A name that resolves to a refused address only once the call connects (DNS rebinding).
    const rebinding = await createTestApp({ RATE_LIMIT_MAX: '0' }, { resolve: async () => [{ address: '169.254.169.254', family: 4 }] });
    try {
      await register(rebinding, { name: 'rebound', target: { baseUrl: 'https://api.rebinding.test', method: 'GET', path: '/x' } });
      const res = await invoke(rebinding, 'rebound', {});
      expect(res.statusCode, res.body).toBe(502);
      expect(res.json().code).toBe('TR_ERR_TARGET_REFUSED');
    } finally {
      await rebinding.close();
    }
  });
});
