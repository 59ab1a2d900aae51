import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';
import { packageRoot } from '../../package-root.js';
import { ifNoneMatch } from '../conditional.js';

/**
 * `GET /dashboard` (issue 13): the operators' page, from files in src/http/dashboard/ and uPlot
 * from node_modules, so it works with no internet. The page is a client like any other: it
 * reads /stats, /readyz, /audit and /changes with the token the user pastes, and so sees
 * exactly what that token sees. The page and its assets ignore credentials; they count
 * against rate limits like any read. The security-headers plugin gives the HTML its
 * Content-Security-Policy (this origin's scripts, styles and requests only, no inline code,
 * no framing). Hidden from the OpenAPI document, as /docs is: it is a page, not API.
 */

/** The page's own files, in src/http/dashboard/ (shipped as source: package.json "files"). */
const OWN_FILES = [
  'dashboard.js',
  'api.js',
  'charts.js',
  'review.js',
  'sign-in.js',
  'dashboard.css',
  // The operator's console (issue 34): the catalogue and a tool's page.
  'console.js',
  'console-format.js',
  'catalogue.js',
  'tool-page.js',
  'try-it.js',
  'tool-editor.js',
  // Sources and review (issue 34): upstream MCP servers, OpenAPI sources, their queues and forms.
  'sources.js',
  'review-diff.js',
  'source-list.js',
  'source-forms.js',
  'record-edit.js',
] as const;
/** uPlot (about 145 KB unminified ESM, no dependencies), under the names the page imports. */
const uplotFiles = (require: NodeJS.Require) =>
  new Map([
    ['uplot.js', require.resolve('uplot/dist/uPlot.esm.js')],
    ['uplot.css', require.resolve('uplot/dist/uPlot.min.css')],
  ]);
const CONTENT_TYPES = new Map([
  ['js', 'text/javascript; charset=utf-8'],
  ['css', 'text/css; charset=utf-8'],
]);
/** Asset URLs hold the assets' hash, so a browser may keep them for a year without asking. */
const IMMUTABLE = 'public, max-age=31536000, immutable';

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

interface DashboardFiles {
  /** The page, with `{{assets}}` where the assets' path goes. */
  template: string;
  /** The console's page (catalogue and tool pages), likewise. */
  consoleTemplate: string;
  /** The console's sources and review page, likewise. */
  sourcesTemplate: string;
  /** The sign-in section every page has, where a page says `{{session}}`. */
  session: string;
  assets: Map<string, Asset>;
  /** A hash over every asset: the version segment of their URLs. */
  version: string;
}

const hash = (data: Buffer | string) => createHash('sha256').update(data).digest('base64url');

let files: DashboardFiles | undefined;

/** Reads the files once per process (about 170 KB); uPlot's path is resolved from here. */
function dashboardFiles(): DashboardFiles {
  if (files) return files;
  const dir = join(packageRoot(), 'src', 'http', 'dashboard');
  const sources = new Map<string, string>([
    ...OWN_FILES.map((name) => [name, join(dir, name)] as const),
    ...uplotFiles(createRequire(import.meta.url)),
  ]);
  const assets = new Map<string, Asset>();
  for (const [name, path] of sources) {
    const body = readFileSync(path);
    assets.set(name, {
      body,
      type: CONTENT_TYPES.get(name.slice(name.lastIndexOf('.') + 1)) ?? 'application/octet-stream',
      etag: `"${hash(body).slice(0, 27)}"`,
    });
  }
  const version = hash([...assets.values()].map((a) => a.etag).join('')).slice(0, 16);
  files = {
    template: readFileSync(join(dir, 'index.html'), 'utf8'),
    consoleTemplate: readFileSync(join(dir, 'console.html'), 'utf8'),
    sourcesTemplate: readFileSync(join(dir, 'sources.html'), 'utf8'),
    session: readFileSync(join(dir, 'session.html'), 'utf8'),
    assets,
    version,
  };
  return files;
}

const AssetParamsSchema = z.strictObject({
  version: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,32}$/)
    .describe("The assets' hash, as the page names it."),
  file: z
    .string()
    .regex(/^[a-z0-9-]{1,32}\.(?:js|css)$/)
    .describe("One of the page's scripts or stylesheets."),
});

const ConsoleToolParamsSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/)
    .describe('A tool name; the page reads the tool with the signed-in token, so it learns only what that token may.'),
});

const notModified = { description: 'The copy the client holds (`If-None-Match`) is current.' };

/** 200 with the body and its validators, or 304 when the client's copy is current. */
function sendCached(request: FastifyRequest, reply: FastifyReply, asset: Asset, cacheControl: string) {
  reply.header('etag', asset.etag).header('cache-control', cacheControl);
  if (ifNoneMatch(request.headers['if-none-match'], asset.etag)) return reply.code(304).send();
  return reply.type(asset.type).send(asset.body);
}

const dashboardRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  if (!config.dashboard.enabled) return;
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const { assets, version, template, consoleTemplate, sourcesTemplate, session } = dashboardFiles();
  // Behind a proxy that serves the registry under a path, PUBLIC_URL says which.
  const base = config.publicUrl.pathname.replace(/\/+$/, '');
  const pageOf = (text: string): Asset => {
    const html = Buffer.from(
      text
        .replace('{{session}}', () => session.trimEnd())
        .replaceAll('{{assets}}', `${base}/dashboard/assets/${version}`)
        .replaceAll('{{base}}', base),
    );
    return { body: html, type: 'text/html; charset=utf-8', etag: `"${hash(html).slice(0, 27)}"` };
  };
  const page = pageOf(template);
  const consolePage = pageOf(consoleTemplate);
  const sourcesPage = pageOf(sourcesTemplate);
  const pageResponse = (description: string) => ({
    200: { description, content: { 'text/html': { schema: z.string() } } },
    304: notModified,
  });
  const routeConfig = { auth: false } as const;

  app.get(
    '/dashboard',
    {
      config: routeConfig,
      schema: {
        hide: true,
        response: pageResponse('The dashboard page.'),
      },
    },
    // Revalidated on every load: it names the current assets.
    async (request, reply) => sendCached(request, reply.header('referrer-policy', 'no-referrer'), page, 'no-cache'),
  );

  // The console (issue 34): one page, the same for everyone, that shows the catalogue at
  // /dashboard/tools and a tool at /dashboard/tools/{name}, read with the signed-in token.
  app.get(
    '/dashboard/tools',
    { config: routeConfig, schema: { hide: true, response: pageResponse('The catalogue page of the console.') } },
    async (request, reply) => sendCached(request, reply.header('referrer-policy', 'no-referrer'), consolePage, 'no-cache'),
  );
  app.get(
    '/dashboard/tools/:name',
    {
      config: routeConfig,
      schema: { hide: true, params: ConsoleToolParamsSchema, response: pageResponse("A tool's page of the console.") },
    },
    async (request, reply) => sendCached(request, reply.header('referrer-policy', 'no-referrer'), consolePage, 'no-cache'),
  );

  // Sources and review (issue 34): upstream servers and OpenAPI sources, their pending changes,
  // and the forms that register them, read and written with the signed-in token.
  app.get(
    '/dashboard/sources',
    { config: routeConfig, schema: { hide: true, response: pageResponse('The sources and review page of the console.') } },
    async (request, reply) => sendCached(request, reply.header('referrer-policy', 'no-referrer'), sourcesPage, 'no-cache'),
  );

  app.get(
    '/dashboard/assets/:version/:file',
    {
      config: routeConfig,
      schema: {
        hide: true,
        params: AssetParamsSchema,
        response: {
          200: {
            description: 'A script or stylesheet of the page.',
            content: { 'text/javascript': { schema: z.string() }, 'text/css': { schema: z.string() } },
          },
          304: notModified,
        },
      },
    },
    async (request, reply) => {
      const asset = request.params.version === version ? assets.get(request.params.file) : undefined;
      if (!asset) throw new RegistryError('TR_ERR_NOT_FOUND', 'no such dashboard asset (the page names the current ones)');
      return sendCached(request, reply, asset, IMMUTABLE);
    },
  );
};

export default dashboardRoutes;
