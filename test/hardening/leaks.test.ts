/**
 * Issue 9, "nothing leaks": what a caller may not list, it cannot learn exists (calls answer a
 * hidden tool exactly as a name never registered); per-agent usage only for operators;
 * operators see the whole catalogue; request ids are bounded; security headers. Every request
 * goes through the real HTTP server (listening on port 0).
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANONYMOUS_POLICIES, type AnonymousPolicy } from '../../src/model/visibility.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const ADMIN = 'registry:write';

interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

async function listening(settings: Parameters<typeof createTestApp>[0] = {}): Promise<{ t: TestApp; base: string }> {
  const t = await createTestApp({ RATE_LIMIT_MAX: '0', ...settings });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  return { t, base: `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}` };
}

async function send(base: string, path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await fetch(`${base}${path}`, init);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

const invoke = (base: string, name: string, token?: string) =>
  send(base, `/tools/${name}/invoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? bearer(token) : {}) },
    body: '{}',
  });

/** What a caller could tell two answers apart by, with the asked-for name taken out. */
function observable(answer: Answer, name: string) {
  return {
    status: answer.status,
    body: answer.text.replaceAll(name, 'NAME'),
    challenge: answer.headers.get('www-authenticate'),
    retryAfter: answer.headers.get('retry-after'),
  };
}

async function register(t: TestApp, descriptor: Record<string, unknown>): Promise<void> {
  const res = await t.app.inject({ method: 'POST', url: '/tools/register', headers: bearer(t.token([ADMIN])), payload: descriptor });
  expect(res.statusCode, res.body).toBe(201);
}

describe.each(ANONYMOUS_POLICIES)('issue 9: calls do not reveal hidden tools (ANONYMOUS_DISCOVERY=%s)', (policy: AnonymousPolicy) => {
  let t: TestApp;
  let base: string;
  /** A token that holds no tool's scope. */
  let outsider: string;

  beforeAll(async () => {
    ({ t, base } = await listening({ ANONYMOUS_DISCOVERY: policy }));
    await register(t, { ...seed('calculator'), name: 'vault', scopes: ['vault:open'] });
    await register(t, { ...seed('calculator'), name: 'vault-old', scopes: ['vault:open'] });
    const del = await t.app.inject({ method: 'DELETE', url: '/tools/vault-old', headers: bearer(t.token([ADMIN])) });
    expect(del.statusCode, del.body).toBe(200);
    outsider = t.token(['weather:read'], { sub: 'outsider' });
  });

  afterAll(async () => {
    await t?.close();
  });

  it('a token that may not list the tool cannot tell it from a name never registered', async () => {
    const hidden = observable(await invoke(base, 'vault', outsider), 'vault');
    const deleted = observable(await invoke(base, 'vault-old', outsider), 'vault-old');
    const never = observable(await invoke(base, 'never-was', outsider), 'never-was');
    if (policy === 'full') {
      // Names are public: the tool is visible, so the missing scope may be named; so may its deletion.
      expect(hidden.status).toBe(403);
      expect(hidden.challenge).toContain('vault:open');
      expect(deleted.status).toBe(410);
      expect(never.status).toBe(404);
      return;
    }
    expect(never.status).toBe(404);
    expect(hidden).toEqual(never);
    expect(deleted).toEqual(never);
    for (const answer of [hidden, deleted]) expect(`${answer.body} ${answer.challenge ?? ''}`).not.toContain('vault:open');
  });

  it('a caller without a token gets the same bare 401 for hidden, deleted and unknown names', async () => {
    const hidden = observable(await invoke(base, 'vault'), 'vault');
    const deleted = observable(await invoke(base, 'vault-old'), 'vault-old');
    const never = observable(await invoke(base, 'never-was'), 'never-was');
    expect(never.status).toBe(401);
    expect(deleted).toEqual(never);
    if (policy === 'full') {
      // In the anonymous view: the challenge may say which scope would do.
      expect(hidden.status).toBe(401);
      expect(hidden.challenge).toContain('scope="vault:open"');
    } else {
      expect(hidden).toEqual(never);
      expect(hidden.challenge).not.toContain('vault:open');
    }
  });

  it('a token that may list the tool still gets its 403 hint and its 410', async () => {
    const lister = t.token(['vault:read-only-lister', 'vault:open'], { sub: 'lister' });
    // Holds the scope: allowed past the check (the tool itself is unreachable: not a refusal).
    expect((await invoke(base, 'vault', lister)).status).not.toBe(403);
    expect((await invoke(base, 'vault-old', lister)).status).toBe(410);
  });

  it('an operator may learn of every tool (the admin scope sees the whole catalogue)', async () => {
    const admin = t.token([ADMIN], { sub: 'operator' });
    const res = await invoke(base, 'vault', admin);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('vault:open');
    expect((await invoke(base, 'vault-old', admin)).status).toBe(410);
  });
});

describe("issue 9: per-agent usage and the operators' view", () => {
  let t: TestApp;
  let base: string;
  let tool: Server;

  beforeAll(async () => {
    ({ t, base } = await listening({ ANONYMOUS_DISCOVERY: 'public', STATS_READ_SCOPE: 'registry:read' }));
    // A tool that answers at once, so that calls count as uses.
    tool = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
    await new Promise<void>((resolve) => tool.listen(0, '127.0.0.1', resolve));
    const port = (tool.address() as AddressInfo).port;
    // They take no arguments: calls are checked against the input schema (issue 12).
    await register(t, { ...seed('calculator'), name: 'echo', scopes: [], parameters: {}, host: '127.0.0.1', port });
    await register(t, { ...seed('calculator'), name: 'vault', scopes: ['vault:open'], parameters: {}, host: '127.0.0.1', port });
    const called = await invoke(base, 'echo', t.token([], { sub: 'agent-smith' }));
    expect(called.status, called.text).toBe(200);
    expect((await invoke(base, 'vault', t.token(['vault:open'], { sub: 'agent-jones' }))).status).toBe(200);
  });

  afterAll(async () => {
    await t?.close();
    tool?.closeAllConnections();
    await new Promise<void>((resolve) => tool?.close(() => resolve()));
  });

  const stats = async (token?: string) => {
    const res = await send(base, '/stats', { headers: token ? bearer(token) : {} });
    expect(res.status, res.text).toBe(200);
    return JSON.parse(res.text) as Record<string, unknown>;
  };

  it('anonymous callers and ordinary tokens get aggregates only, never token subjects', async () => {
    for (const token of [undefined, t.token([], { sub: 'agent-smith' }), t.token(['vault:open'], { sub: 'agent-jones' })]) {
      const figures = await stats(token);
      expect(figures['usage_by_agent']).toEqual({});
      expect(JSON.stringify(figures)).not.toMatch(/agent-smith|agent-jones/);
      expect(figures['total_tool_calls']).toBeGreaterThanOrEqual(1);
    }
  });

  it('the admin scope and STATS_READ_SCOPE get per-agent figures over the whole catalogue', async () => {
    for (const token of [t.token([ADMIN], { sub: 'operator' }), t.token(['registry:read'], { sub: 'dashboard' })]) {
      const figures = await stats(token);
      expect(figures['usage_by_agent']).toEqual({ 'agent-jones': { vault: 1 }, 'agent-smith': { echo: 1 } });
      expect(figures['tools_by_name']).toEqual(['echo', 'vault']);
      expect(figures['total_tool_calls']).toBe(2);
    }
  });

  it('operators see every tool in GET /, pages and the change feed; ordinary tokens do not', async () => {
    const names = (text: string) => (JSON.parse(text) as { tools: { name: string }[] }).tools.map((tool) => tool.name).sort();
    for (const [token, expected] of [
      [t.token([ADMIN]), ['echo', 'vault']],
      [t.token(['registry:read']), ['echo', 'vault']],
      [t.token([]), ['echo']],
    ] as const) {
      const full = await send(base, '/', { headers: bearer(token) });
      expect(names(full.text)).toEqual(expected);
      expect(full.headers.get('x-hidden-tools')).toBe(String(2 - expected.length));
      expect(names((await send(base, '/?limit=1', { headers: bearer(token) })).text).length).toBe(1);
      const page1 = JSON.parse((await send(base, '/?limit=1', { headers: bearer(token) })).text) as {
        nextCursor: string | null;
        tools: { name: string }[];
      };
      const rest = page1.nextCursor
        ? names((await send(base, `/?limit=10&cursor=${encodeURIComponent(page1.nextCursor)}`, { headers: bearer(token) })).text)
        : [];
      expect([...page1.tools.map((tool) => tool.name), ...rest].sort()).toEqual(expected);
    }
    // The change feed from the start: an operator's replay holds both registrations.
    const replay = await changeEvents(base, bearer(t.token(['registry:read'])), 2);
    expect(replay.map((e) => e['name']).sort()).toEqual(['echo', 'vault']);
  });

  it("an operator's blocking query wakes for a change outside every ordinary view", async () => {
    const admin = bearer(t.token([ADMIN]));
    const first = await send(base, '/', { headers: admin });
    const index = first.headers.get('x-registry-index');
    const waiting = send(base, `/?index=${index}&wait=10s`, { headers: admin });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await register(t, { ...seed('calculator'), name: 'vault-2', scopes: ['vault:open'] });
    const woke = await waiting;
    expect(woke.status).toBe(200);
    expect(Number(woke.headers.get('x-registry-index'))).toBeGreaterThan(Number(index));
    expect(woke.text).toContain('vault-2');
  });
});

/** Reads `change` events from /changes (since 0) until `count` arrived. */
function changeEvents(base: string, headers: Record<string, string>, count: number): Promise<Record<string, unknown>[]> {
  const url = new URL('/changes?since=0', base);
  return new Promise((resolve, reject) => {
    const events: Record<string, unknown>[] = [];
    const req = httpRequest(url, { headers }, (res: IncomingMessage) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (/^event: change$/m.test(block) && data) events.push(JSON.parse(data) as Record<string, unknown>);
        }
        if (events.length >= count) {
          req.destroy();
          resolve(events);
        }
      });
    });
    req.on('error', (err) => (events.length >= count ? undefined : reject(err)));
    req.setTimeout(5000, () => req.destroy(new Error(`only ${events.length} change events`)));
    req.end();
  });
}

describe('issue 9: request ids and security headers', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    ({ t, base } = await listening());
  });

  afterAll(async () => {
    await t?.close();
  });

  it('keeps a bounded, well-formed X-Request-Id and replaces any other, also in the audit log', async () => {
    const good = 'trace-01HZX.abc:42';
    expect((await send(base, '/healthz', { headers: { 'x-request-id': good } })).headers.get('x-request-id')).toBe(good);
    for (const bad of ['x'.repeat(65), 'a b', 'a\u00e9', '<script>', 'id,other', '']) {
      const id = (await send(base, '/healthz', { headers: { 'x-request-id': bad } })).headers.get('x-request-id');
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
    // A refused write is audited under the id the answer carries, never the client's long one.
    const long = 'L'.repeat(5000);
    const refused = await send(base, '/tools/register', {
      method: 'POST',
      headers: { 'x-request-id': long, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(401);
    const audit = await t.app.inject({ method: 'GET', url: '/audit', headers: bearer(t.token([ADMIN])) });
    expect(audit.body).not.toContain(long.slice(0, 100));
    expect(audit.body).toContain(refused.headers.get('x-request-id'));
  });

  it('sends X-Content-Type-Options: nosniff on every answer, errors and streams included', async () => {
    for (const path of ['/', '/healthz', '/stats', '/openapi.json', '/no-such-route', '/tools/nope', '/docs/static/index.html']) {
      expect((await send(base, path)).headers.get('x-content-type-options'), path).toBe('nosniff');
    }
    const stream = await fetch(`${base}/changes`);
    expect(stream.headers.get('x-content-type-options')).toBe('nosniff');
    await stream.body?.cancel();
  });

  it('serves /docs under a CSP of its own origin only, and every resource the page names loads under it', async () => {
    const page = await send(base, '/docs/');
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy') ?? '';
    const directives = new Map(
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name, values]),
    );
    expect(directives.get('default-src')).toEqual(["'none'"]);
    expect(directives.get('script-src')).toEqual(["'self'"]);
    expect(directives.get('style-src')).toEqual(["'self'"]);
    expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
    expect(csp).not.toContain('unsafe');
    // No inline script, style or handler: all of the page runs from files on this origin.
    expect(page.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(page.text).not.toMatch(/<style|\son[a-z]+=/i);
    const resources = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '');
    expect(resources.length).toBeGreaterThanOrEqual(4);
    for (const resource of resources) {
      const url = new URL(resource, `${base}/docs/`);
      expect(url.origin, resource).toBe(base);
      const res = await fetch(url);
      expect(res.status, resource).toBe(200);
      await res.arrayBuffer();
    }
    // What the initializer fetches: the document, from this origin (connect-src 'self').
    expect((await send(base, '/docs/static/swagger-initializer.js')).text).toContain("resolveUrl('./json')");
    expect((await send(base, '/docs/json')).status).toBe(200);
    expect((await send(base, '/docs')).headers.get('content-security-policy') ?? csp).toBe(csp);
  });
});
