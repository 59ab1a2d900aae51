/**
 * Issue 30's "read again on demand and on an interval; changes go through the same pinning and
 * review as upstream MCP servers, and removals apply at once": a source read from a documentUrl
 * served by a real HTTP server on loopback, whose document changes between reads.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

const ok = { '200': { description: 'ok' } };
type Ops = Record<string, { path: string; description: string; deprecated?: boolean }>;
const documentOf = (ops: Ops) => ({
  openapi: '3.1.0',
  info: { title: 'Changing', version: String(Object.keys(ops).length) },
  servers: [{ url: 'https://api.example.com' }],
  paths: Object.fromEntries(
    Object.entries(ops).map(([id, op]) => [
      op.path,
      { get: { operationId: id, description: op.description, ...(op.deprecated && { deprecated: true }), responses: ok } },
    ]),
  ),
});

/** A document server whose document (or failure) the test sets. */
async function documentServer(): Promise<{
  url: string;
  serve: (ops: Ops | 500) => void;
  reads: () => number;
  close: () => Promise<void>;
}> {
  let current: Ops | 500 = {};
  let reads = 0;
  const server: Server = createServer((_req, res) => {
    reads += 1;
    if (current === 500) res.writeHead(500).end('down');
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(documentOf(current)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/openapi.json`,
    serve: (ops) => (current = ops),
    reads: () => reads,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

const V1: Ops = {
  keep: { path: '/keep', description: 'Kept as it is.' },
  text: { path: '/text', description: 'First text.' },
  gone: { path: '/gone', description: 'Removed later.' },
  moved: { path: '/moved', description: 'Its path changes.' },
};
const V2: Ops = {
  keep: { path: '/keep', description: 'Kept as it is.', deprecated: true },
  text: { path: '/text', description: 'Second text.' },
  moved: { path: '/elsewhere', description: 'Its path changes.' },
  added: { path: '/added', description: 'New in version 2.' },
};

describe('OpenAPI sources read again (issue 30)', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let docs: Awaited<ReturnType<typeof documentServer>>;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    admin = bearer(t.token(['registry:write']));
    docs = await documentServer();
  });
  afterAll(async () => {
    await t.close();
    await docs.close();
  });

  const inject = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) =>
    t.app.inject({ method, url, headers: admin, ...(payload && { payload }) });
  const listed = async () => (await t.app.inject({ method: 'GET', url: '/' })).json().tools as { name: string; description: string }[];

  it('holds what a re-read finds new or changed for review, removes what it dropped at once, and applies what an operator accepts', async () => {
    docs.serve(V1);
    const put = await inject('PUT', '/openapi-sources/changing', { prefix: 'ch_', documentUrl: docs.url });
    expect(put.statusCode, put.body).toBe(201);
    expect(put.json()).toMatchObject({
      descriptor: { policy: 'review' },
      tools: ['ch_gone', 'ch_keep', 'ch_moved', 'ch_text'],
      refresh: { lastError: null, pending: 0, nextReadAt: expect.any(String) },
    });
    // The default interval (OPENAPI_REFRESH_S, an hour) counts from the PUT's read.
    const next = Date.parse(put.json().refresh.nextReadAt as string);
    expect(next - Date.now()).toBeGreaterThan(3500_000);

    docs.serve(V2);
    const refreshed = await inject('POST', '/openapi-sources/changing/refresh');
    expect(refreshed.statusCode, refreshed.body).toBe(200);
    expect(refreshed.json()).toMatchObject({
      id: 'changing',
      version: '4',
      written: [],
      deleted: ['ch_gone'],
      pending: ['ch_text', 'ch_moved', 'ch_added'],
      unchanged: 1,
    });
    // The removal is a write agents see at once; the deprecation mark follows the document at once too.
    expect(refreshed.headers['x-registry-index']).toBe(String(refreshed.json().index));
    expect((await inject('GET', '/tools/ch_gone')).statusCode).toBe(404);
    expect((await inject('GET', '/tools/ch_keep')).json().status).toBe('deprecated');
    const served = await listed();
    expect(served.map((tool) => tool.name).filter((n) => n.startsWith('ch_'))).toEqual(['ch_keep', 'ch_moved', 'ch_text']);
    expect(served.find((tool) => tool.name === 'ch_text')?.description).toContain('First text.');
    expect((await inject('GET', '/tools/ch_moved')).json().descriptor.target.path).toBe('/moved');

    const pending = await inject('GET', '/openapi-sources/changing/pending');
    expect(pending.statusCode, pending.body).toBe(200);
    const changes = pending.json().changes as {
      tool: string;
      digest: string;
      change: string;
      diff: { pointer: string; old?: unknown; new?: unknown }[];
    }[];
    expect(pending.json().pending).toBe(3);
    expect(changes.map((c) => [c.tool, c.change])).toEqual([
      ['ch_added', 'added'],
      ['ch_moved', 'changed'],
      ['ch_text', 'changed'],
    ]);
    // Where calls go is part of the version under review, not only what the model reads.
    expect(changes[1]?.diff).toContainEqual({ op: 'replace', pointer: '/target/path', old: '/moved', new: '/elsewhere' });
    expect(changes[2]?.diff).toContainEqual(expect.objectContaining({ op: 'replace', pointer: '/description' }));
    expect((await inject('GET', '/openapi-sources/changing')).json().refresh).toMatchObject({ pending: 3, lastError: null });

    // A digest the operator did not read refuses the whole review, naming it.
    const [added, moved, text] = changes as [(typeof changes)[0], (typeof changes)[0], (typeof changes)[0]];
    const stale = await inject('POST', '/openapi-sources/changing/accept', {
      changes: [
        { tool: 'ch_text', digest: text.digest },
        { tool: 'ch_added', digest: `sha256:${'0'.repeat(64)}` },
      ],
    });
    expect(stale.statusCode).toBe(409);
    expect(stale.json().errors).toEqual([{ path: 'changes.1.digest', message: expect.stringContaining('read the queue again') }]);
    expect((await inject('GET', '/tools/ch_text')).json().descriptor.description).toContain('First text.');

    const accepted = await inject('POST', '/openapi-sources/changing/accept', {
      changes: [
        { tool: 'ch_text', digest: text.digest },
        { tool: 'ch_added', digest: added.digest },
      ],
    });
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect(accepted.json().changes).toEqual([
      { tool: 'ch_text', digest: text.digest, acceptedDigest: expect.stringMatching(/^sha256:/) },
      { tool: 'ch_added', digest: added.digest, acceptedDigest: null },
    ]);
    expect(Number(accepted.headers['x-registry-index'])).toBeGreaterThan(refreshed.json().index as number);
    const after = await listed();
    expect(after.find((tool) => tool.name === 'ch_text')?.description).toContain('Second text.');
    expect(after.some((tool) => tool.name === 'ch_added')).toBe(true);

    // A rejected version stays out of the queue when the same document is read again.
    const rejected = await inject('POST', '/openapi-sources/changing/reject', { changes: [{ tool: 'ch_moved', digest: moved.digest }] });
    expect(rejected.statusCode, rejected.body).toBe(200);
    const again = await inject('POST', '/openapi-sources/changing/refresh');
    expect(again.json()).toMatchObject({ index: null, written: [], deleted: [], pending: [], unchanged: 4 });
    expect((await inject('GET', '/openapi-sources/changing/pending')).json()).toMatchObject({ changes: [], pending: 0 });
    const withRejected = await inject('GET', '/openapi-sources/changing/pending?rejected=true');
    expect(withRejected.json().changes).toEqual([expect.objectContaining({ tool: 'ch_moved', rejectedAt: expect.any(String) })]);
    expect((await inject('GET', '/tools/ch_moved')).json().descriptor.target.path).toBe('/moved');

    // Audited under the operator, with the digests.
    const audit = (await inject('GET', '/audit?limit=20')).json().entries as { action: string; target: string; detail: string | null }[];
    expect(audit.map((e) => e.action)).toEqual(
      expect.arrayContaining(['openapi-source.refresh', 'openapi-source.accept', 'openapi-source.reject']),
    );
    // The refused accept is audited too (409, no detail); the one that wrote names each digest.
    const acceptEntries = audit.filter((e) => e.action === 'openapi-source.accept');
    expect(acceptEntries.map((e) => e.detail)).toContainEqual(expect.stringContaining(`ch_added none -> ${added.digest}`));

    // The operator's own PUT is the source's word: it applies at once and empties the queue.
    const reput = await inject('PUT', '/openapi-sources/changing', { prefix: 'ch_', documentUrl: docs.url });
    expect(reput.statusCode, reput.body).toBe(200);
    expect(reput.json().written).toEqual(['ch_moved']);
    expect((await inject('GET', '/openapi-sources/changing/pending?rejected=true')).json().changes).toEqual([]);
  });

  it('keeps the tools as they are when the document cannot be read again, and says why', async () => {
    docs.serve(500);
    const before = t.app.catalog.index;
    const failed = await inject('POST', '/openapi-sources/changing/refresh');
    expect(failed.statusCode).toBe(400);
    expect(failed.json().errors).toEqual([{ path: 'documentUrl', message: expect.stringContaining('answered 500') }]);
    expect(t.app.catalog.index).toBe(before);
    expect((await inject('GET', '/openapi-sources/changing')).json().refresh).toMatchObject({
      lastReadAt: expect.any(String),
      lastError: expect.stringContaining('answered 500'),
    });
    expect((await inject('GET', '/tools/ch_text')).statusCode).toBe(200);
  });

  it('has nothing to read again for a source given inline (409), and 404 for none', async () => {
    const inline = await inject('PUT', '/openapi-sources/inline', { prefix: 'in_', document: documentOf(V1) });
    expect(inline.statusCode).toBe(201);
    expect(inline.json().refresh).toBeUndefined();
    const res = await inject('POST', '/openapi-sources/inline/refresh');
    expect(res.statusCode).toBe(409);
    expect(res.json().detail).toContain('no documentUrl');
    expect((await inject('POST', '/openapi-sources/nowhere/refresh')).statusCode).toBe(404);
    const anonymous = await t.app.inject({ method: 'POST', url: '/openapi-sources/changing/refresh' });
    expect(anonymous.statusCode).toBe(401);
  });
});

describe('OpenAPI sources read again on their interval (issue 30)', () => {
  let t: TestApp;
  let admin: Record<string, string>;
  let docs: Awaited<ReturnType<typeof documentServer>>;
  beforeAll(async () => {
    // A second's interval for the test; sources may not set less than a minute.
    t = await createTestApp({ RATE_LIMIT_MAX: '0', OPENAPI_REFRESH_S: '1' });
    admin = bearer(t.token(['registry:write']));
    docs = await documentServer();
  });
  afterAll(async () => {
    await t.close();
    await docs.close();
  });

  const until = async (check: () => Promise<boolean>, what: string) => {
    for (let i = 0; i < 100; i++) {
      if (await check()) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const source = async (id: string) => (await t.app.inject({ method: 'GET', url: `/openapi-sources/${id}`, headers: admin })).json();

  it('applies a policy `auto` source at once and queues a `review` one, on the interval', async () => {
    docs.serve(V1);
    for (const [id, policy] of [
      ['auto', 'auto'],
      ['reviewed', 'review'],
    ] as const) {
      const put = await t.app.inject({
        method: 'PUT',
        url: `/openapi-sources/${id}`,
        headers: admin,
        payload: { prefix: `${id}_`, documentUrl: docs.url, policy },
      });
      expect(put.statusCode, put.body).toBe(201);
    }
    const reads = docs.reads();
    docs.serve(V2);
    await until(async () => (await source('auto')).tools.includes('auto_added'), 'the auto source to take the new operation');
    await until(async () => (await source('reviewed')).refresh.pending === 3, 'the reviewed source to queue its changes');
    expect(docs.reads()).toBeGreaterThan(reads);
    const auto = await source('auto');
    expect(auto.tools).toEqual(['auto_added', 'auto_keep', 'auto_moved', 'auto_text']);
    expect(auto.refresh).toMatchObject({ lastReadAt: expect.any(String), lastError: null, pending: 0 });
    const reviewed = await source('reviewed');
    expect(reviewed.tools).toEqual(['reviewed_keep', 'reviewed_moved', 'reviewed_text']);
    // Written by the source itself, which the audit names.
    const audit = (await t.app.inject({ method: 'GET', url: '/audit?limit=50', headers: admin })).json().entries as {
      action: string;
      sub: string;
    }[];
    expect(audit).toContainEqual(expect.objectContaining({ action: 'openapi-source.refresh', sub: 'openapi-source:auto' }));
  });

  it('refuses a source interval under a minute, but takes 0 for on demand only', async () => {
    const short = await t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/short',
      headers: admin,
      payload: { prefix: 'sh_', documentUrl: docs.url, refreshIntervalS: 5 },
    });
    expect(short.statusCode).toBe(400);
    expect(short.json().errors).toEqual([{ path: 'refreshIntervalS', message: expect.stringContaining('60 to 604800') }]);
    const manual = await t.app.inject({
      method: 'PUT',
      url: '/openapi-sources/manual',
      headers: admin,
      payload: { prefix: 'ma_', documentUrl: docs.url, refreshIntervalS: 0 },
    });
    expect(manual.statusCode, manual.body).toBe(201);
    expect(manual.json().refresh).toMatchObject({ nextReadAt: null });
  });
});
