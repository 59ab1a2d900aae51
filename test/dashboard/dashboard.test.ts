/**
 * The /dashboard page (issue 13) through app.inject: the HTML under its Content-Security-Policy,
 * its assets from this repository and uPlot from node_modules with long-cache headers and ETags,
 * 304s, the DASHBOARD switch, and the per-service figures /stats gives operators only. The page
 * itself runs in a real browser in browser.process.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const ADMIN = 'registry:write';

/** The page's script and stylesheet URLs, in the order it names them. */
const assetUrls = (html: string) =>
  [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1] ?? '').filter((url) => url.includes('/assets/'));

describe('GET /dashboard', () => {
  let t: TestApp;
  let html: string;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
    html = (await t.app.inject({ method: 'GET', url: '/dashboard' })).body;
  });
  afterAll(() => t?.close());

  it('serves the page under a CSP of this origin only, with no inline script or style', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/dashboard' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['referrer-policy']).toBe('no-referrer');
    expect(res.headers['cache-control']).toBe('no-cache');
    const csp = String(res.headers['content-security-policy']);
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
    expect(directives.get('connect-src')).toContain("'self'");
    expect(csp).not.toContain('unsafe');
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(res.body).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    // Nothing from elsewhere: no CDN, no web fonts.
    expect(res.body).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    // The token field has no name, so no form submission can carry it.
    expect(res.body).toMatch(/<input id="token" type="password"/);
    expect(res.body).not.toMatch(/<input[^>]*id="token"[^>]*\bname=/);
  });

  it('ignores credentials, even a token that does not verify (the page is the same for all)', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/dashboard', headers: bearer('not.a.jwt') });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe(html);
    expect((await t.app.inject({ method: 'GET', url: '/dashboard/' })).statusCode).toBe(200);
  });

  it('answers 304 to a current If-None-Match', async () => {
    const first = await t.app.inject({ method: 'GET', url: '/dashboard' });
    const etag = String(first.headers.etag);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    const again = await t.app.inject({ method: 'GET', url: '/dashboard', headers: { 'if-none-match': etag } });
    expect(again.statusCode).toBe(304);
    expect(again.body).toBe('');
    expect(again.headers.etag).toBe(etag);
    expect((await t.app.inject({ method: 'GET', url: '/dashboard', headers: { 'if-none-match': '"other"' } })).statusCode).toBe(200);
  });

  it('serves every asset the page names, uPlot included, for a year, with ETags and 304s', async () => {
    const urls = assetUrls(html);
    expect(urls.map((u) => u.split('/').pop())).toEqual(['uplot.css', 'dashboard.css', 'uplot.js', 'dashboard.js']);
    for (const url of urls) {
      expect(url).toMatch(/^\/dashboard\/assets\/[A-Za-z0-9_-]+\/[a-z.]+$/);
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type'], url).toBe(url.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8');
      expect(res.headers['cache-control'], url).toBe('public, max-age=31536000, immutable');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      const cached = await t.app.inject({ method: 'GET', url, headers: { 'if-none-match': String(res.headers.etag) } });
      expect(cached.statusCode, url).toBe(304);
    }
    const uplot = await t.app.inject({ method: 'GET', url: urls.find((u) => u.endsWith('uplot.js')) ?? '' });
    expect(uplot.body).toContain('export { uPlot as default }');
    // The modules the page's script imports, relative to it, are served too.
    const main = await t.app.inject({ method: 'GET', url: urls.find((u) => u.endsWith('dashboard.js')) ?? '' });
    const base = (urls.find((u) => u.endsWith('dashboard.js')) ?? '').replace(/[^/]+$/, '');
    const imported = new Set<string>();
    for (const script of [
      main.body,
      ...(await Promise.all(
        ['api.js', 'charts.js', 'review.js', 'review-diff.js', 'sign-in.js'].map(
          async (f) => (await t.app.inject({ method: 'GET', url: base + f })).body,
        ),
      )),
    ]) {
      for (const [, file] of script.matchAll(/from '\.\/([a-z-]+\.js)'/g)) imported.add(file ?? '');
    }
    expect([...imported].sort()).toEqual([
      'api.js',
      'charts.js',
      'console-format.js',
      'review-diff.js',
      'review.js',
      'sign-in.js',
      'uplot.js',
    ]);
    for (const file of imported) expect((await t.app.inject({ method: 'GET', url: base + file })).statusCode, file).toBe(200);
  });

  it('writes no markup from strings: upstream text in the review queue (issue 29) is hostile input', async () => {
    const base = (assetUrls(html).find((u) => u.endsWith('dashboard.js')) ?? '').replace(/[^/]+$/, '');
    for (const file of ['dashboard.js', 'api.js', 'charts.js', 'review.js', 'sign-in.js']) {
      const script = (await t.app.inject({ method: 'GET', url: base + file })).body;
      expect(script, file).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment|\beval\(|new Function/,
      );
      // Attributes are set one by one, never a style attribute (the CSP allows none) nor a handler.
      expect(script, file).not.toMatch(/setAttribute\(\s*['"](?:style|on[a-z]+)/);
    }
    // The queue is in the page, hidden until an admin token reads it.
    expect(html).toMatch(/<section class="panel wide" id="review" aria-labelledby="review-title" hidden>/);
    expect(html).toMatch(/<p id="review-outcome" class="outcome" role="status" aria-live="polite">/);
  });

  it('answers 404 for another version, an unknown file or a path out of the folder', async () => {
    const js = assetUrls(html).find((u) => u.endsWith('dashboard.js')) ?? '';
    for (const url of [js.replace(/assets\/[^/]+\//, 'assets/old/'), js.replace('dashboard.js', 'nothing.js')]) {
      const res = await t.app.inject({ method: 'GET', url });
      expect(res.statusCode, url).toBe(404);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    }
    // Only names of scripts and stylesheets get as far as the lookup.
    for (const url of [
      js.replace('dashboard.js', 'index.html'),
      js.replace('dashboard.js', '..%2F..%2Fpackage.json'),
      js.replace('dashboard.js', '.env.js'),
    ]) {
      expect([400, 404], url).toContain((await t.app.inject({ method: 'GET', url })).statusCode);
    }
  });

  it('is not part of the API document', async () => {
    const document = t.app.swagger() as { paths: Record<string, unknown> };
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/dashboard'))).toEqual([]);
  });
});

describe('GET /dashboard/tools: the console (issue 34)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  });
  afterAll(() => t?.close());

  it('serves the catalogue and every tool page as one page, under the same CSP, naming only this origin’s assets', async () => {
    const catalogue = await t.app.inject({ method: 'GET', url: '/dashboard/tools' });
    expect(catalogue.statusCode).toBe(200);
    expect(catalogue.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(catalogue.headers['referrer-policy']).toBe('no-referrer');
    const csp = String(catalogue.headers['content-security-policy']);
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).not.toContain('unsafe');
    expect(catalogue.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(catalogue.body).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(catalogue.body).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    expect(catalogue.body).not.toMatch(/<input[^>]*id="(?:token|agent-token)"[^>]*\bname=/);
    // Any tool's page is the same page: it reads the tool with the signed-in token.
    for (const name of ['calculator', 'no_such_tool']) {
      const tool = await t.app.inject({ method: 'GET', url: `/dashboard/tools/${name}` });
      expect(tool.statusCode, name).toBe(200);
      expect(tool.body, name).toBe(catalogue.body);
    }
    const etag = String(catalogue.headers.etag);
    expect((await t.app.inject({ method: 'GET', url: '/dashboard/tools', headers: { 'if-none-match': etag } })).statusCode).toBe(304);
    // Names no tool can have are not pages.
    for (const url of ['/dashboard/tools/a%20b', `/dashboard/tools/${'x'.repeat(65)}`]) {
      expect([400, 404], url).toContain((await t.app.inject({ method: 'GET', url })).statusCode);
    }
  });

  it('serves the console’s modules, which write no markup from strings', async () => {
    const html = (await t.app.inject({ method: 'GET', url: '/dashboard/tools' })).body;
    const urls = assetUrls(html);
    expect(urls.map((u) => u.split('/').pop())).toEqual(['dashboard.css', 'console.js']);
    const base = (urls.find((u) => u.endsWith('console.js')) ?? '').replace(/[^/]+$/, '');
    const seen = new Set<string>();
    const queue = ['console.js'];
    for (let file = queue.shift(); file; file = queue.shift()) {
      if (seen.has(file)) continue;
      seen.add(file);
      const res = await t.app.inject({ method: 'GET', url: base + file });
      expect(res.statusCode, file).toBe(200);
      expect(res.body, file).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment|\beval\(|new Function/,
      );
      expect(res.body, file).not.toMatch(/setAttribute\(\s*['"](?:style|on[a-z]+)/);
      for (const [, imported] of res.body.matchAll(/from '\.\/([a-z-]+\.js)'/g)) queue.push(imported ?? '');
    }
    expect([...seen].sort()).toEqual([
      'api.js',
      'catalogue.js',
      'console-format.js',
      'console.js',
      'record-edit.js',
      'sign-in.js',
      'tool-editor.js',
      'tool-page.js',
      'try-it.js',
    ]);
  });

  it('serves the sources and review page under the same CSP, with modules that write no markup from strings', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/dashboard/sources' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(String(res.headers['content-security-policy'])).toContain("script-src 'self'");
    expect(res.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/i);
    expect(res.body).not.toMatch(/<style|\sstyle=|\son[a-z]+=/i);
    expect(res.body).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    expect(res.body).toContain('<a id="nav-sources" href="/dashboard/sources" aria-current="page">Sources</a>');
    // Linked from the status page and the tools pages.
    for (const url of ['/dashboard', '/dashboard/tools'])
      expect((await t.app.inject({ method: 'GET', url })).body, url).toContain('<a href="/dashboard/sources">Sources</a>');
    const urls = assetUrls(res.body);
    expect(urls.map((u) => u.split('/').pop())).toEqual(['dashboard.css', 'sources.js']);
    const base = (urls.find((u) => u.endsWith('sources.js')) ?? '').replace(/[^/]+$/, '');
    const seen = new Set<string>();
    const queue = ['sources.js'];
    for (let file = queue.shift(); file; file = queue.shift()) {
      if (seen.has(file)) continue;
      seen.add(file);
      const asset = await t.app.inject({ method: 'GET', url: base + file });
      expect(asset.statusCode, file).toBe(200);
      expect(asset.body, file).not.toMatch(
        /innerHTML|outerHTML|insertAdjacentHTML|document\.write|DOMParser|createContextualFragment|\beval\(|new Function/,
      );
      expect(asset.body, file).not.toMatch(/setAttribute\(\s*['"](?:style|on[a-z]+)/);
      for (const [, imported] of asset.body.matchAll(/from '\.\/([a-z-]+\.js)'/g)) queue.push(imported ?? '');
    }
    // No uPlot: the page draws no chart.
    expect([...seen].sort()).toEqual([
      'api.js',
      'console-format.js',
      'record-edit.js',
      'review-diff.js',
      'sign-in.js',
      'source-forms.js',
      'source-list.js',
      'sources.js',
    ]);
    expect(
      (await t.app.inject({ method: 'GET', url: '/dashboard/sources', headers: { 'if-none-match': String(res.headers.etag) } })).statusCode,
    ).toBe(304);
  });

  it('links the status page and the console both ways, under the path of PUBLIC_URL', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/dashboard' })).body).toContain('<a href="/dashboard/tools">Tools</a>');
    const behindProxy = await createTestApp({ PUBLIC_URL: 'https://example.com/registry/' });
    try {
      const html = (await behindProxy.app.inject({ method: 'GET', url: '/dashboard/tools' })).body;
      expect(html).toContain('<a href="/registry/dashboard">Status</a>');
      for (const url of assetUrls(html)) expect(url).toMatch(/^\/registry\/dashboard\/assets\//);
    } finally {
      await behindProxy.close();
    }
  });
});

describe('the dashboard setting', () => {
  it('DASHBOARD=off serves neither the page nor its assets', async () => {
    const on = await createTestApp();
    const asset = assetUrls((await on.app.inject({ method: 'GET', url: '/dashboard' })).body)[0] ?? '';
    await on.close();
    const off = await createTestApp({ DASHBOARD: 'off' });
    try {
      expect(off.config.dashboard.enabled).toBe(false);
      for (const url of ['/dashboard', '/dashboard/tools', '/dashboard/tools/calculator', asset])
        expect((await off.app.inject({ method: 'GET', url })).statusCode, url).toBe(404);
      // What the page reads stays.
      expect((await off.app.inject({ method: 'GET', url: '/stats' })).statusCode).toBe(200);
    } finally {
      await off.close();
    }
  });

  it('puts the assets under the path of PUBLIC_URL', async () => {
    const behindProxy = await createTestApp({ PUBLIC_URL: 'https://example.com/registry/' });
    try {
      const urls = assetUrls((await behindProxy.app.inject({ method: 'GET', url: '/dashboard' })).body);
      for (const url of urls) expect(url).toMatch(/^\/registry\/dashboard\/assets\//);
    } finally {
      await behindProxy.close();
    }
  });

  it('counts against the rate limit like any read', async () => {
    const limited = await createTestApp({ RATE_LIMIT_MAX: '1' });
    try {
      expect((await limited.app.inject({ method: 'GET', url: '/dashboard' })).statusCode).toBe(200);
      const over = await limited.app.inject({ method: 'GET', url: '/dashboard' });
      expect(over.statusCode).toBe(429);
      expect(over.headers['retry-after']).toBeDefined();
    } finally {
      await limited.close();
    }
  });
});

describe('GET /stats for the dashboard: tools by service', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_MAX: '0', STATS_READ_SCOPE: 'dashboard:read' });
    const admin = bearer(t.token([ADMIN]));
    for (const [url, body] of [
      ['/tool-services/joke-service', seed('joke-service')],
      [
        '/tool-services/idle-service',
        { id: 'idle-service', 'request-queue': 'non-persistent://tg/request/idle', 'response-queue': 'non-persistent://tg/response/idle' },
      ],
      ['/tools/tell-joke', seed('tell-joke')],
      ['/tools/calculator', seed('calculator')],
    ] as const) {
      const res = await t.app.inject({ method: 'PUT', url, headers: admin, payload: body });
      expect(res.statusCode, res.body).toBe(201);
    }
  });
  afterAll(() => t?.close());

  it('gives operators the live tools per service, idle services included', async () => {
    for (const scope of [ADMIN, 'dashboard:read']) {
      const stats = (await t.app.inject({ method: 'GET', url: '/stats', headers: bearer(t.token([scope])) })).json();
      expect(stats.tools_by_service, scope).toEqual({ 'idle-service': 0, 'joke-service': 1 });
      expect(stats.tools_by_mcp_server, scope).toEqual({});
    }
  });

  it('gives everyone else the figures empty: service ids are backend topology', async () => {
    for (const headers of [{}, bearer(t.token(['calculator:use']))]) {
      const stats = (await t.app.inject({ method: 'GET', url: '/stats', headers })).json();
      expect(stats.tools_by_service).toEqual({});
      expect(stats.tools_by_mcp_server).toEqual({});
      expect(stats.total_tool_services).toBe(2);
    }
  });
});
