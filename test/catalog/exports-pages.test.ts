/**
 * Issue 12: `GET /?format=` with pages, search and filters. Each format holds the same tools in
 * the same order as the plain answer (pinned walks and cursors alike), wrapped in its own
 * shape, with the next page in a `Link` header; a page has an ETag of its own (304), answers
 * blocking queries, and costs what it holds (no whole view is built for it).
 */
import { ListToolsResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EXPORT_FORMATS, type ExportFormat } from '../../src/model/exports.js';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
let admin: Record<string, string>;
let user: Record<string, string>;

const SCOPE = 'pages:use';

/** Tools of every kind of schema: strict-compatible, open (skipped by strict), with an output schema. */
function tool(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  // Names without a number are strict-compatible tools in the user's view.
  const i = Number(/\d+/.exec(name)?.[0] ?? 1);
  const inputSchema =
    i % 3 === 0
      ? { type: 'object', properties: { q: { type: 'string' } } }
      : {
          type: 'object',
          properties: { q: { type: 'string' }, n: { type: 'integer', minimum: 1 } },
          required: ['q'],
          additionalProperties: false,
        };
  return {
    name,
    endpoint: `/tools/${name}`,
    scopes: [i % 4 === 0 ? 'other:use' : SCOPE],
    description: `Looks things up, number ${i}${i % 2 === 0 ? ' (even weather)' : ''}`,
    inputSchema,
    ...(i % 5 === 0 && { outputSchema: { type: 'object', properties: { r: { type: 'string' } } } }),
    ...extra,
  };
}

const put = async (name: string, extra: Record<string, unknown> = {}) => {
  const res = await t.app.inject({ method: 'PUT', url: `/tools/${name}`, headers: admin, payload: tool(name, extra) });
  expect(res.statusCode, res.body).toBeLessThan(300);
};

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  admin = bearer(t.token(['registry:write']));
  user = bearer(t.token([SCOPE]));
  for (let i = 1; i <= 17; i++) await put(`tool_${String(i).padStart(2, '0')}`);
});

afterAll(async () => {
  await t.close();
});

const get = (url: string, headers: Record<string, string> = user) => t.app.inject({ method: 'GET', url, headers });

/** The path and query of a `Link: <url>; rel="next"` header, or null. */
function nextOf(link: unknown): string | null {
  if (link === undefined) return null;
  const match = /^<([^>]+)>; rel="next"$/.exec(String(link));
  expect(match, String(link)).not.toBeNull();
  const url = new URL((match as RegExpExecArray)[1] as string);
  return `${url.pathname}${url.search}`;
}

/** A body's items in order (for `openai-strict`, its tools then `skipped: ` items; for `prompt`, its lines), and the cursor it carries. */
function itemsOf(format: ExportFormat, body: string): { items: unknown[]; names: string[]; bodyCursor?: string | null } {
  if (format === 'prompt') {
    const lines = body.trimEnd().split('\n');
    expect(lines[0]).toBe('Available tools:');
    const rest = lines.slice(1);
    return { items: rest, names: rest.map((l) => /^- ([^(]+)\(/u.exec(l)?.[1] as string) };
  }
  const value = JSON.parse(body) as unknown;
  switch (format) {
    case 'openai-strict': {
      const { tools, skipped, nextCursor } = value as {
        tools: { function: { name: string } }[];
        skipped: { name: string }[];
        nextCursor?: string | null;
      };
      return {
        items: [...tools, ...skipped.map((s) => ({ skipped: s }))],
        names: [...tools.map((x) => x.function.name), ...skipped.map((x) => x.name)],
        bodyCursor: nextCursor,
      };
    }
    case 'mcp': {
      const parsed = ListToolsResultSchema.parse(value);
      const { tools, nextCursor } = value as { tools: { name: string }[]; nextCursor?: string };
      expect(parsed.tools.map((x) => x.name)).toEqual(tools.map((x) => x.name));
      return { items: tools, names: tools.map((x) => x.name), bodyCursor: nextCursor ?? null };
    }
    case 'openai':
      return { items: value as unknown[], names: (value as { function: { name: string } }[]).map((x) => x.function.name) };
    default:
      return { items: value as unknown[], names: (value as { name: string }[]).map((x) => x.name) };
  }
}

/** Sorts `openai-strict` items as the unpaged body lists them: tools first, then skipped, each in order. */
const strictOrder = (items: unknown[]) => [
  ...items.filter((i) => !Object.hasOwn(i as object, 'skipped')),
  ...items.filter((i) => Object.hasOwn(i as object, 'skipped')),
];

/** Follows `Link` from `first` to the last page; every page's items and names, and the plain walk's cursors alongside. */
async function walk(format: ExportFormat, first: string, headers = user) {
  const pages: { items: unknown[]; names: string[]; cursor: string | null }[] = [];
  let url: string | null = first;
  while (url !== null) {
    const res = await get(url, headers);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['etag']).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const next = nextOf(res.headers['link']);
    const { items, names, bodyCursor } = itemsOf(format, res.body);
    const cursor = next === null ? null : new URLSearchParams(next.split('?')[1]).get('cursor');
    if (format === 'mcp') expect(bodyCursor).toBe(cursor ?? null);
    if (format === 'openai-strict') expect(bodyCursor).toBe(cursor);
    pages.push({ items, names, cursor });
    url = next;
    expect(pages.length).toBeLessThan(50);
  }
  return pages;
}

describe('GET /?format= with pages (issue 12)', () => {
  it.each(EXPORT_FORMATS)("%s: a walk of pages is the unpaged export, once each, in the plain pages' order", async (format) => {
    const whole = itemsOf(format, (await get(`/?format=${format}`)).body);
    const pages = await walk(format, `/?format=${format}&limit=4`);
    expect(pages.length).toBeGreaterThan(2);
    for (const page of pages) expect(page.names.length).toBeLessThanOrEqual(4);
    const walked = pages.flatMap((p) => p.items);
    expect(format === 'openai-strict' ? strictOrder(walked) : walked).toEqual(
      format === 'openai-strict' ? strictOrder(whole.items) : whole.items,
    );
    const names = pages.flatMap((p) => p.names);
    expect(new Set(names).size).toBe(names.length);

    // Page for page, the plain walk's selection and cursors.
    let cursor: string | null = null;
    for (const page of pages) {
      const plain: { tools: { name: string }[]; nextCursor: string | null } = (
        await get(`/?limit=4${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`)
      ).json();
      expect([...page.names].sort()).toEqual(plain.tools.map((x) => x.name).sort());
      expect(page.cursor).toBe(plain.nextCursor);
      cursor = plain.nextCursor;
    }
  });

  it.each(EXPORT_FORMATS)('%s: search and filters select what the plain answer does', async (format) => {
    const since = (await get('/tools/tool_10', admin)).json<{ updatedAt: string }>().updatedAt;
    for (const query of [
      `scope=${SCOPE}&limit=1000`,
      'q=weather',
      `q=weather&scope=${SCOPE}`,
      `updated_since=${encodeURIComponent(since)}`,
    ]) {
      const plain = (await get(`/?${query}`)).json<{ tools: { name: string; status: string }[] }>();
      const exported = await get(`/?${query}&format=${format}`);
      expect(exported.statusCode, exported.body).toBe(200);
      const { names } = itemsOf(format, exported.body);
      const expected = plain.tools.filter((x) => x.status === 'active').map((x) => x.name);
      // Search ranks: the order is the plain answer's; strict lists its skipped tools after the others.
      if (format === 'openai-strict') expect([...names].sort()).toEqual([...expected].sort());
      else expect(names).toEqual(expected);
      expect(expected.length).toBeGreaterThan(0);
    }
  });

  it('keeps a pinned walk: tools deleted during it are left out, tools created since are not added', async () => {
    await put('walk_a');
    await put('walk_b');
    await put('walk_c');
    const page1 = await get('/?format=ag-ui&limit=2');
    const next = nextOf(page1.headers['link']) as string;
    expect(next).not.toBeNull();
    const seen = itemsOf('ag-ui', page1.body).names;
    expect((await t.app.inject({ method: 'DELETE', url: '/tools/walk_b', headers: admin })).statusCode).toBe(200);
    await put('walk_bb');
    const rest = (await walk('ag-ui', next)).flatMap((p) => p.names);
    expect(rest).toContain('walk_a');
    expect(rest).toContain('walk_c');
    expect([...seen, ...rest]).not.toContain('walk_b');
    expect([...seen, ...rest]).not.toContain('walk_bb');
    // The plain walk from the same cursor: the same live tools, and walk_b as a tombstone.
    const plainLive: string[] = [];
    const plainDeleted: string[] = [];
    let cursor: string | null = new URLSearchParams(next.split('?')[1]).get('cursor');
    while (cursor !== null) {
      const plain: { tools: { name: string; status: string }[]; nextCursor: string | null } = (
        await get(`/?limit=2&cursor=${encodeURIComponent(cursor)}`)
      ).json();
      for (const x of plain.tools) (x.status === 'active' ? plainLive : plainDeleted).push(x.name);
      cursor = plain.nextCursor;
    }
    expect(rest).toEqual(plainLive);
    expect(plainDeleted).toEqual(['walk_b']);
    await put('walk_b');
  });

  it('has an ETag per format and query, answers 304 to it (with the Link), and a write to a tool on the page changes it', async () => {
    const etags = new Set<string>();
    for (const format of EXPORT_FORMATS) {
      for (const query of ['limit=3', 'limit=4', `scope=${SCOPE}&limit=3`]) {
        const first = await get(`/?format=${format}&${query}`);
        const etag = String(first.headers['etag']);
        etags.add(etag);
        const again = await get(`/?format=${format}&${query}`, { ...user, 'if-none-match': etag });
        expect(again.statusCode, `${format} ${query}`).toBe(304);
        expect(again.body).toBe('');
        expect(again.headers['link']).toBe(first.headers['link']);
      }
    }
    expect(etags.size).toBe(EXPORT_FORMATS.length * 3);
    const plainFull = String((await get('/?format=openai')).headers['etag']);
    expect(etags.has(plainFull)).toBe(false);

    // A page behind a cursor is pinned: a write elsewhere leaves its bytes and ETag alone, a write to one of its tools does not.
    const page1 = await get('/?format=anthropic&limit=3');
    const second = nextOf(page1.headers['link']) as string;
    const before = await get(second);
    const names = itemsOf('anthropic', before.body).names;
    await put('zz_elsewhere');
    const unchanged = await get(second, { ...user, 'if-none-match': String(before.headers['etag']) });
    expect(unchanged.statusCode).toBe(304);
    await put(names[0] as string, { description: 'Rewritten' });
    const changed = await get(second, { ...user, 'if-none-match': String(before.headers['etag']) });
    expect(changed.statusCode).toBe(200);
    expect(changed.json<{ name: string; description: string }[]>()[0]).toMatchObject({ name: names[0], description: 'Rewritten' });
  });

  it('answers a blocking query when the view changes, and 304 when the wait ends without a change', async () => {
    const first = await get('/?format=mcp&limit=5');
    const index = String(first.headers['x-registry-index']);
    const etag = String(first.headers['etag']);
    const idle = await get(`/?format=mcp&limit=5&index=${index}&wait=50ms`, { ...user, 'if-none-match': etag });
    expect(idle.statusCode).toBe(304);

    const started = Date.now();
    const held = get(`/?format=mcp&limit=5&index=${index}&wait=10s`, { ...user, 'if-none-match': etag });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await put('aaa_first');
    const woken = await held;
    expect(Date.now() - started).toBeLessThan(5000);
    expect(woken.statusCode).toBe(200);
    expect(Number(woken.headers['x-registry-index'])).toBeGreaterThan(Number(index));
    expect(itemsOf('mcp', woken.body).names[0]).toBe('aaa_first');
    expect(woken.headers['etag']).not.toBe(etag);
  });

  it('costs what the page holds: no whole view is built for it', async () => {
    await put('zzz_new');
    const view = vi.spyOn(t.app.catalog, 'view');
    try {
      for (const format of EXPORT_FORMATS) expect((await get(`/?format=${format}&limit=2`)).statusCode).toBe(200);
      expect((await get(`/?format=openai&q=weather`)).statusCode).toBe(200);
      expect(view).not.toHaveBeenCalled();
    } finally {
      view.mockRestore();
    }
  });

  it('refuses an unknown format naming the formats, and points LangChain at openai', async () => {
    const unknown = await get('/?format=gemini&limit=2');
    expect(unknown.statusCode).toBe(400);
    for (const format of EXPORT_FORMATS) expect(unknown.body).toContain(format);
    expect(unknown.body).not.toContain('langchain');
    const langchain = await get('/?format=langchain');
    expect(langchain.statusCode).toBe(400);
    expect(langchain.json()).toMatchObject({
      code: 'TR_ERR_BAD_REQUEST',
      errors: [{ path: 'format', message: expect.stringMatching(/use format=openai/) }],
    });
    const badCursor = await get('/?format=openai&limit=2&cursor=bogus');
    expect(badCursor.statusCode).toBe(400);
  });
});
