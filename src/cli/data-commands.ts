/**
 * Data commands talk to a running registry over HTTP, like the reference platform's config
 * tool: `put tool/<name>`, `put tool-service/<id>`, `get`, `list`, `delete`, `import`, `export`
 * (`--format trustgraph`: TrustGraph's config items, as `tg-export-workspace-config` writes them).
 */
import { existsSync, readFileSync } from 'node:fs';
import { devSecretPathFor } from '../auth/keys.js';
import { loadConfig } from '../config.js';
import type { Settings } from '../config/settings.js';
import { parseCommandArgs, type CommandOptions } from './args.js';
import type { CliIo } from './io.js';
import { runReview } from './review.js';
import { mintToken } from './token.js';
import { UsageError } from './usage-error.js';

export const DATA_COMMANDS: ReadonlySet<string> = new Set([
  'put',
  'get',
  'list',
  'delete',
  'import',
  'export',
  'review',
  'refresh',
  'deprecate',
  'undeprecate',
]);

const DEFAULT_URL = 'http://127.0.0.1:8006';

interface Target {
  collection: 'tools' | 'tool-services' | 'openapi-sources';
  key: string;
}

const COLLECTIONS = { tool: 'tools', 'tool-service': 'tool-services', 'openapi-source': 'openapi-sources' } as const;

/** `tool/<name>`, `tool-service/<id>` or `openapi-source/<id>` (issue 30). */
function parseTarget(text: string | undefined): Target {
  const match = /^(tool|tool-service|openapi-source)\/(.+)$/.exec(text ?? '');
  if (!match?.[2]) throw new UsageError('name what to act on as tool/<name>, tool-service/<id> or openapi-source/<id>');
  return { collection: COLLECTIONS[match[1] as keyof typeof COLLECTIONS], key: match[2] };
}

/**
 * An OpenAPI source's body (issue 30): the JSON of --file or stdin if given, with --document's
 * file (JSON or YAML, sent as its text), --prefix and --base-url over it.
 */
async function openApiSourceBody(options: ReadonlyMap<string, readonly string[]>, io: CliIo): Promise<unknown> {
  const file = options.get('file')?.at(-1);
  const document = options.get('document')?.at(-1);
  const given =
    file !== undefined ? readJson(file, readNamedFile(file)) : document === undefined ? readJson('stdin', await readStdin(io)) : {};
  if (typeof given !== 'object' || given === null || Array.isArray(given)) throw new UsageError('the OpenAPI source must be a JSON object');
  const prefix = options.get('prefix')?.at(-1);
  const baseUrl = options.get('base-url')?.at(-1);
  return {
    ...given,
    ...(document !== undefined && { document: readNamedFile(document) }),
    ...(prefix !== undefined && { prefix }),
    ...(baseUrl !== undefined && { baseUrl }),
  };
}

/** A file the user named: one that cannot be read is a usage error (exit 2), as bad JSON in it is. */
function readNamedFile(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(
      `cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : (code ?? (err as Error).message)}`,
    );
  }
}

function readJson(source: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${source} is not valid JSON: ${(err as Error).message}`);
  }
}

async function readStdin(io: CliIo): Promise<string> {
  const text = await io.readStdin();
  if (text === undefined) throw new UsageError('give the descriptor on stdin or with --file');
  return text;
}

/** The bearer token: --token, REGISTRY_TOKEN, or an admin token minted from the local secret. */
function clientToken(explicit: string | undefined, env: NodeJS.ProcessEnv, settings: Settings): string | undefined {
  const given = explicit ?? env['REGISTRY_TOKEN'];
  if (given !== undefined && given !== '') return given;
  const config = loadConfig(env, settings);
  // Tokens come from an authorization server: only --token or REGISTRY_TOKEN can give one.
  if (config.jwt.keyMode === 'public-key' || config.jwt.keyMode === 'jwks') return undefined;
  if (config.jwt.keyMode === 'dev') {
    // Only read an existing dev secret: a client must not create one the server does not share.
    const path = devSecretPathFor(config.databasePath);
    if (path === undefined || !existsSync(path)) return undefined;
  }
  return mintToken(config, { scopes: [config.adminScope], sub: 'tool-registry-cli', ttlS: 300 });
}

interface Client {
  request(method: string, path: string, body?: unknown): Promise<unknown>;
}

function httpClient(baseUrl: string, token: string | undefined): Client {
  return {
    async request(method, path, body) {
      const headers: Record<string, string> = { accept: 'application/json' };
      if (token) headers['authorization'] = `Bearer ${token}`;
      if (body !== undefined) headers['content-type'] = 'application/json';
      let response: Response;
      try {
        response = await fetch(new URL(path, baseUrl), { method, headers, ...(body !== undefined && { body: JSON.stringify(body) }) });
      } catch (err) {
        const cause = (err as { cause?: { code?: string } }).cause?.code;
        throw new Error(`cannot reach the registry at ${baseUrl}${cause ? ` (${cause})` : ''}; is it running? (--url or REGISTRY_URL)`);
      }
      const text = await response.text();
      const parsed: unknown = text === '' ? null : safeJson(text);
      if (!response.ok) {
        const problem = parsed as { detail?: string; errors?: { path: string; message: string }[] } | null;
        const fields = problem?.errors?.length ? ` [${problem.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}]` : '';
        // Without a token, say where one comes from (the server's detail names only what needed it).
        const hint =
          response.status === 401 && !token
            ? ' (no token was sent: pass --token or REGISTRY_TOKEN, or run beside the dev secret of --database-path)'
            : '';
        throw new Error(terminalSafe(`${response.status} ${problem?.detail ?? response.statusText}${fields}${hint}`));
      }
      return parsed;
    },
  };
}

/**
 * What a registry sends is printed with its control characters (C0, DEL, C1) and bidirectional
 * overrides escaped, so that no descriptor, name or error text can drive the operator's terminal.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNSAFE_FOR_TERMINAL = /[\x00-\x1F\x7F-\x9F\u202A-\u202E\u2066-\u2069]/g;
const escapeChar = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** One field of a line of text output. */
function terminalSafe(text: string): string {
  return text.replace(UNSAFE_FOR_TERMINAL, escapeChar);
}

/** What JSON.stringify leaves raw in strings: it escapes C0, but not DEL, C1 or bidi overrides. */
const UNSAFE_IN_JSON = /[\x7F-\x9F\u202A-\u202E\u2066-\u2069]/g;

/** JSON for the terminal (C0 outside strings is only the indentation's line feeds). */
function terminalJson(value: unknown): string {
  return (JSON.stringify(value, null, 2) ?? 'null').replace(UNSAFE_IN_JSON, escapeChar);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const DATA_OPTIONS: CommandOptions = {
  url: { type: 'string' },
  token: { type: 'string' },
  file: { type: 'string' },
  format: { type: 'string' },
  // review (issue 29)
  accept: { type: 'string', multiple: true },
  reject: { type: 'string', multiple: true },
  'accept-all': { type: 'boolean' },
  // put openapi-source/<id> (issue 30)
  document: { type: 'string' },
  prefix: { type: 'string' },
  'base-url': { type: 'string' },
  // deprecate tool/<name> (issue 34)
  sunset: { type: 'string' },
  replacement: { type: 'string' },
  reason: { type: 'string' },
};

const DEPRECATION_OPTIONS = ['sunset', 'replacement', 'reason'] as const;

const SOURCE_OPTIONS = ['document', 'prefix', 'base-url'] as const;

const REVIEW_OPTIONS = ['accept', 'reject', 'accept-all'] as const;

/** `export --format`: the registry's bundle, or TrustGraph's config items. */
const EXPORT_FORMATS: ReadonlySet<string> = new Set(['registry', 'trustgraph']);

export async function runDataCommand(command: string, args: readonly string[], io: CliIo): Promise<number> {
  const { env } = io;
  // Settings such as --database-path locate the dev secret; the rest are positional.
  const { settings, options, positionals: rest } = parseCommandArgs(command, args, DATA_OPTIONS, true);
  const givenUrl = options.get('url')?.at(-1);
  const url = givenUrl ?? env['REGISTRY_URL'] ?? DEFAULT_URL;
  if (!URL.canParse(url) || !/^https?:$/u.test(new URL(url).protocol)) {
    throw new UsageError(`${givenUrl !== undefined ? '--url' : 'REGISTRY_URL'}: "${terminalSafe(url)}" is not an http(s) URL`);
  }
  const file = options.get('file')?.at(-1);
  const format = options.get('format')?.at(-1);
  if (format !== undefined && command !== 'export') throw new UsageError(`--format is an option of export, not of ${command}`);
  if (format !== undefined && !EXPORT_FORMATS.has(format)) throw new UsageError(`--format takes ${[...EXPORT_FORMATS].join(' or ')}`);
  const misplaced = command === 'review' ? undefined : REVIEW_OPTIONS.find((o) => options.has(o));
  if (misplaced !== undefined) throw new UsageError(`--${misplaced} is an option of review, not of ${command}`);
  const sourceOption = SOURCE_OPTIONS.find((o) => options.has(o));
  if (sourceOption !== undefined && !(command === 'put' && rest[0]?.startsWith('openapi-source/')))
    throw new UsageError(`--${sourceOption} is an option of put openapi-source/<id>, not of ${command}`);
  const deprecationOption = DEPRECATION_OPTIONS.find((o) => options.has(o));
  if (deprecationOption !== undefined && command !== 'deprecate')
    throw new UsageError(`--${deprecationOption} is an option of deprecate tool/<name>, not of ${command}`);
  const client = httpClient(url, clientToken(options.get('token')?.at(-1), env, settings));
  const print = (value: unknown) => io.stdout(`${terminalJson(value)}\n`);
  const unexpected = (n: number) => {
    if (rest.length > n) throw new UsageError(`unexpected argument ${rest[n] ?? ''} for ${command}`);
  };

  switch (command) {
    case 'put': {
      unexpected(1);
      const target = parseTarget(rest[0]);
      const body =
        target.collection === 'openapi-sources'
          ? await openApiSourceBody(options, io)
          : file !== undefined
            ? readJson(file, readNamedFile(file))
            : readJson('stdin', await readStdin(io));
      print(await client.request('PUT', `/${target.collection}/${encodeURIComponent(target.key)}`, body));
      return 0;
    }
    case 'get': {
      unexpected(1);
      const target = parseTarget(rest[0]);
      const record = (await client.request('GET', `/${target.collection}/${encodeURIComponent(target.key)}`)) as { descriptor?: unknown };
      print(record.descriptor ?? record);
      return 0;
    }
    case 'delete': {
      unexpected(1);
      const target = parseTarget(rest[0]);
      await client.request('DELETE', `/${target.collection}/${encodeURIComponent(target.key)}`);
      io.stdout(`deleted ${terminalSafe(rest[0] ?? '')}\n`);
      return 0;
    }
    case 'list': {
      unexpected(1);
      const what = rest[0] ?? 'tools';
      if (what !== 'tools' && what !== 'tool-services') throw new UsageError('list takes "tools" or "tool-services"');
      const bundle = (await client.request('GET', '/export')) as {
        tools: { name: string; type?: string; scopes?: string[] }[];
        'tool-services': { id: string; 'request-queue': string }[];
      };
      if (what === 'tools') {
        for (const t of bundle.tools)
          io.stdout(
            `${terminalSafe(t.name)}\t${t.type === 'tool-service' ? 'tool-service' : 'http'}\t${terminalSafe((t.scopes ?? []).join(' '))}\n`,
          );
      } else {
        for (const s of bundle['tool-services']) io.stdout(`${terminalSafe(s.id)}\t${terminalSafe(s['request-queue'])}\n`);
      }
      return 0;
    }
    case 'import': {
      unexpected(1);
      const bundleFile = rest[0] ?? file;
      if (bundleFile === undefined) throw new UsageError('import needs a file: tool-registry import <file>');
      print(await client.request('POST', '/import', readJson(bundleFile, readNamedFile(bundleFile))));
      return 0;
    }
    case 'export': {
      unexpected(0);
      print(await client.request('GET', format === undefined ? '/export' : `/export?format=${format}`));
      return 0;
    }
    case 'review': {
      unexpected(1);
      const server = rest[0];
      if (server === undefined)
        throw new UsageError('review needs an MCP server id or an OpenAPI source: tool-registry review <server> | openapi-source/<id>');
      const request = {
        server,
        accept: options.get('accept') ?? [],
        reject: options.get('reject') ?? [],
        acceptAll: options.has('accept-all'),
      };
      return runReview(client, request, io.stdout, terminalSafe);
    }
    case 'deprecate':
    case 'undeprecate': {
      // deprecate tool/<name> [--sunset T] [--replacement R] [--reason TEXT] (issue 34); undeprecate lifts it.
      unexpected(1);
      const target = parseTarget(rest[0]);
      if (target.collection !== 'tools') throw new UsageError(`${command} takes a tool: tool-registry ${command} tool/<name>`);
      const path = `/tools/${encodeURIComponent(target.key)}/deprecation`;
      if (command === 'undeprecate') {
        print(await client.request('DELETE', path));
        return 0;
      }
      const body = Object.fromEntries(DEPRECATION_OPTIONS.flatMap((o) => (options.has(o) ? [[o, options.get(o)?.at(-1)]] : [])));
      print(await client.request('PUT', path, body));
      return 0;
    }
    case 'refresh': {
      // refresh openapi-source/<id> (issue 30): read its documentUrl again now.
      unexpected(1);
      const id = /^openapi-source\/(.+)$/.exec(rest[0] ?? '')?.[1];
      if (id === undefined) throw new UsageError('refresh needs an OpenAPI source: tool-registry refresh openapi-source/<id>');
      print(await client.request('POST', `/openapi-sources/${encodeURIComponent(id)}/refresh`, {}));
      return 0;
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}
