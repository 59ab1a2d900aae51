// @ts-check
import { existsSync, realpathSync, statSync } from 'node:fs';
import js from '@eslint/js';
import boundaries from 'eslint-plugin-boundaries';
import tseslint from 'typescript-eslint';

/**
 * The rooms of src/ (architecture.md) and the rooms each may import: a folder imports only
 * folders below it, and model/ is imported by all. The "Layers" table of docs/development.md
 * states the same rules (test/readme.test.ts checks that it names every room); keep the two in step.
 */
const MAY_IMPORT = {
  portable: [], //                     pure code without imports, run by the server and the fetch-only client alike
  model: ['portable'], //              bottom: of packages only zod (boundaries/external below)
  'package-root': [], //               finds migrations/ from src/ or dist/src/
  config: ['model'], //                the one settings schema
  store: ['package-root', 'model'], // storage
  catalog: ['model'], //               the read model: fed records, never reads SQL (a read never waits on SQL)
  'json-schema': ['package-root', 'model'], // tools' JSON Schemas with Ajv: the check at registration, argument validators (package-root: its worker)
  sources: ['json-schema', 'package-root', 'model'], // OpenAPI documents converted to HTTP tool bodies (issue 30), off the event loop (package-root: its worker); no storage
  usage: ['store', 'model'],
  auth: ['config', 'model'],
  registry: ['catalog', 'json-schema', 'store', 'model'], // the write side feeds the catalogue after commit
  pulsar: ['model'], //                the one reconnecting Pulsar WebSocket, with a producer and a consumer on it
  bridge: ['catalog', 'json-schema', 'usage', 'pulsar', 'model'], //   plus store types only, below
  toolkit: ['pulsar', 'model'], //             a tool service in TypeScript, on the Pulsar socket
  trustgraph: ['registry', 'catalog', 'pulsar', 'model'], // TrustGraph's config service: live sync and adoption
  replication: ['registry', 'pulsar', 'model'], // replicas over a Pulsar topic: the write side's applyReplicated; store types only, below
  announce: ['registry', 'catalog', 'json-schema', 'pulsar', 'model'], // tool services announcing themselves: writes under the announcer, liveness
  http: [
    'registry',
    'catalog',
    'auth',
    'bridge',
    'json-schema', // the tool bodies' check, validated on their routes
    'sources', // OpenAPI documents converted on their route
    'pulsar', // broker limits and frame sizes, for the plugins that build the bus clients
    'usage',
    'store',
    'trustgraph',
    'replication',
    'announce',
    'config',
    'package-root',
    'model',
  ],
  telemetry: ['config', 'package-root'], // the OpenTelemetry SDK, started by the server
  server: ['http', 'telemetry', 'config', 'model'],
  cli: ['server', 'http', 'auth', 'store', 'config', 'package-root', 'model'], // package-root: --version
  index: ['http', 'toolkit', 'bridge', 'config', 'model'], // the package's library API
  client: ['portable'], //             tool-registry/client: model for types only, below
};

const FOLDERS = [
  'portable',
  'model',
  'store',
  'catalog',
  'sources',
  'json-schema',
  'registry',
  'auth',
  'bridge',
  'pulsar',
  'usage',
  'http',
  'cli',
  'toolkit',
  'trustgraph',
  'replication',
  'announce',
  'client',
];
// Rooms of one file, or of a file and the folder of its parts (src/config.ts and src/config/).
const FILES = {
  config: ['src/config.ts', 'src/config/*.ts'],
  'package-root': 'src/package-root.ts',
  telemetry: 'src/telemetry.ts',
  server: 'src/server.ts',
  index: 'src/index.ts',
};

// Fastify and its plugins belong to src/http only; src/server.ts may name FastifyInstance.
const FASTIFY = ['fastify', 'fastify-plugin', 'fastify-type-provider-zod', '@fastify/*'];
const NOT_HTTP = Object.keys(MAY_IMPORT).filter((type) => type !== 'http');

const NODE_BUILTINS =
  '^(fs|path|os|crypto|http|https|net|url|util|child_process|events|stream|timers|assert|zlib|readline|worker_threads)(/.*)?$';

/**
 * Sources import './x.js' (NodeNext) where the file is x.ts. eslint-plugin-boundaries resolves
 * imports through eslint-module-utils, whose node resolver would not find x.ts and would leave
 * every import unclassified (so unchecked). Two hooks of the `resolve` package fix that: isFile
 * accepts x.js when x.ts exists, and realpathSync (called with preserveSymlinks off) reports x.ts.
 */
const isFile = (/** @type {string} */ file) => statSync(file, { throwIfNoEntry: false })?.isFile() ?? false;
const tsSibling = (/** @type {string} */ file) => (file.endsWith('.js') ? `${file.slice(0, -3)}.ts` : undefined);
const nodeNextResolver = {
  extensions: ['.ts', '.js', '.json', '.node'],
  isFile: (/** @type {string} */ file) => isFile(file) || isFile(tsSibling(file) ?? ''),
  preserveSymlinks: false,
  realpathSync: (/** @type {string} */ file) => {
    const ts = tsSibling(file);
    const real = !existsSync(file) && ts && isFile(ts) ? ts : file;
    return existsSync(real) ? realpathSync(real) : real;
  },
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', '.cache/', '.venv/', 'data/'] },
  js.configs.recommended,
  { files: ['bin/**/*.js'], languageOptions: { globals: { process: 'readonly' } } },
  // The dashboard's scripts run in the browser (src/http/dashboard/, served as they are).
  {
    files: ['src/http/dashboard/**/*.js'],
    languageOptions: {
      globals: Object.fromEntries(
        [
          'document',
          'sessionStorage',
          'fetch',
          'URL',
          'URLSearchParams',
          'atob',
          'TextDecoder',
          'AbortController',
          'setTimeout',
          'clearTimeout',
          'getComputedStyle',
          'matchMedia',
          'performance',
          'location',
          'ResizeObserver',
        ].map((name) => [name, 'readonly']),
      ),
    },
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': ['error', { patterns: [{ regex: NODE_BUILTINS, message: 'Use the node: prefix for built-in modules.' }] }],
    },
  },
  {
    // The layers of architecture.md. Tests, scripts, bench and examples may import any room.
    files: ['src/**/*.ts'],
    plugins: { boundaries },
    settings: {
      'boundaries/root-path': import.meta.dirname,
      'boundaries/include': ['src/**/*.ts'],
      'boundaries/elements': [
        ...FOLDERS.map((type) => ({ type, pattern: `src/${type}`, mode: /** @type {const} */ ('folder') })),
        ...Object.entries(FILES).map(([type, pattern]) => ({ type, pattern, mode: /** @type {const} */ ('full') })),
      ],
      // Re-exports (src/index.ts) and dynamic imports (the CLI loads the server lazily) count too.
      'boundaries/dependency-nodes': ['import', 'export', 'dynamic-import'],
      'import/resolver': { node: nodeNextResolver },
    },
    rules: {
      'boundaries/element-types': [
        'error',
        {
          default: 'disallow',
          message: '${from.type} may not import ${target.type} (architecture.md; the layers in eslint.config.js)',
          rules: [
            ...Object.entries(MAY_IMPORT).map(([from, allow]) => ({ from: [from], allow: [from, ...allow] })),
            { from: ['bridge', 'replication'], allow: ['store'], importKind: 'type' },
            // The agent client runs without the server: it shares the wire shapes' types only.
            { from: ['client'], allow: ['model'], importKind: 'type' },
          ],
        },
      ],
      // Every file under src/ is in a room, and src/ imports no local file outside the rooms.
      'boundaries/no-unknown-files': 'error',
      'boundaries/no-unknown': 'error',
      'boundaries/no-ignored': 'error',
      'boundaries/external': [
        'error',
        {
          default: 'allow',
          rules: [
            { from: NOT_HTTP, disallow: FASTIFY, message: 'Only src/http imports Fastify (architecture.md).' },
            { from: ['server'], allow: ['fastify'], importKind: 'type' },
            { from: ['model'], disallow: ['*'], message: 'model/ imports nothing but zod (architecture.md).' },
            { from: ['model'], allow: ['zod'] },
            { from: ['client'], disallow: ['*'], message: 'src/client imports no packages: it runs on fetch alone (issue 12).' },
            { from: ['portable'], disallow: ['*'], message: 'src/portable imports nothing: the fetch-only client runs it too.' },
          ],
        },
      ],
    },
  },
);
