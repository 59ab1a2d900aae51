/**
 * OpenAPI sources' documents (issue 30): read (inline, or from `documentUrl` through the outbound
 * address policy), converted in worker threads (src/sources/openapi/convert.ts) and turned into
 * the writes of the registry; and read again, on demand and on each source's interval
 * (src/sources/openapi/refresher.ts), what a re-read finds going through the source's review
 * policy. Started once the app is ready and never waited for.
 */
import fp from 'fastify-plugin';
import type { Config } from '../../config.js';
import { RegistryError } from '../../model/errors.js';
import type { OpenApiSource, OpenApiSourcePutBody, OpenApiSourceRecord } from '../../model/openapi-source.js';
import { openApiSourceOwner } from '../../model/openapi-source.js';
import { maskCredential } from '../../model/outbound-credential.js';
import type { Actor } from '../../model/records.js';
import type { HttpTool } from '../../model/schemas.js';
import {
  openApiSourceActor,
  type OpenApiOperationTool,
  type OpenApiRefreshResult,
  type OpenApiSourceInput,
} from '../../registry/openapi-source-commands.js';
import { OpenApiConverter } from '../../sources/openapi/convert.js';
import type { ImportedDocument } from '../../sources/openapi/import.js';
import { completeCredential } from '../../sources/openapi/credential.js';
import { OpenApiRefresher, type RefreshStatus } from '../../sources/openapi/refresher.js';
import { redactUrl } from '../redact-url.js';

/** How long reading a documentUrl may take. */
const FETCH_TIMEOUT_MS = 30_000;
/** How long one conversion may run in its worker. */
const CONVERT_TIMEOUT_MS = 60_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** OpenAPI sources' documents: converted for writes, and read again on their intervals. */
    openApiSources: OpenApiSources;
  }
}

export interface OpenApiSources {
  /** A PUT's source converted into the write of it and its tools. */
  prepare(source: OpenApiSource, body: OpenApiSourcePutBody): Promise<OpenApiSourceInput>;
  /** After a PUT: the source's interval counts from now. */
  written(record: OpenApiSourceRecord): void;
  deleted(id: string): void;
  /** Reads the source's documentUrl now and applies what it finds by the source's policy. */
  refresh(id: string, actor: Actor | undefined): Promise<OpenApiRefreshResult & { title: string; version: string }>;
  status(id: string): RefreshStatus | undefined;
}

export default fp<{ config: Config }>(
  async (app, { config }) => {
    const converter = new OpenApiConverter({ timeoutMs: CONVERT_TIMEOUT_MS });
    const maxBytes = config.openApiMaxDocumentBytes;
    const log = app.log.child({ component: 'openapi-sources' });

    const convert = (source: OpenApiSource, text: string, apiKeyFilled: boolean): Promise<ImportedDocument> =>
      converter.convert({
        document: text,
        maxBytes,
        prefix: source.prefix,
        ...(source.baseUrl !== undefined && { baseUrl: source.baseUrl }),
        ...(source.documentUrl !== undefined && { relativeTo: source.documentUrl }),
        ...(source.filter !== undefined && { filter: source.filter }),
        ...(source.timeoutMs !== undefined && { timeoutMs: source.timeoutMs }),
        scopes: source.scopes,
        apiKeyFilled,
        ...(source.scopeMap !== undefined && { scopeMap: source.scopeMap }),
      });

    /** Reads and applies one source's documentUrl, under `actor` (the source itself on its interval). */
    const reread = async (id: string, actor: Actor | undefined) => {
      const record = app.store.openApiSource(id);
      if (!record) throw new RegistryError('TR_ERR_NOT_FOUND', `no OpenAPI source "${id}"`);
      const url = record.descriptor.documentUrl;
      if (url === undefined) {
        throw new RegistryError(
          'TR_ERR_CONFLICT',
          `OpenAPI source "${id}" was given its document inline: there is no documentUrl to read again; PUT the new document instead`,
        );
      }
      const text = await readDocument(app.outbound.fetch, url, maxBytes);
      const converted = await convert(record.descriptor, text, record.credential?.['kind'] === 'apiKey');
      const result = await app.registry.refreshOpenApiSource(
        {
          id,
          sourceIndex: record.index,
          document: text,
          title: converted.title,
          version: converted.version,
          skipped: converted.skipped,
          operations: operationsOf(converted),
        },
        actor ?? openApiSourceActor(id),
      );
      if (result.stale) {
        throw new RegistryError('TR_ERR_CONFLICT', `OpenAPI source "${id}" was written while its document was read: refresh it again`);
      }
      log.info(
        { openApiSource: id, written: result.written.length, deleted: result.deleted.length, pending: result.pending.length },
        'OpenAPI source read again',
      );
      return { ...result, title: converted.title, version: converted.version };
    };

    const refresher = new OpenApiRefresher<Actor>({
      defaultIntervalS: config.openApiRefreshS,
      read: reread,
      onError: (id, err) =>
        log.warn(
          { openApiSource: id, url: redactUrl(app.store.openApiSource(id)?.descriptor.documentUrl ?? ''), err: (err as Error).message },
          'reading an OpenAPI source again failed; its tools stay as they are',
        ),
    });
    const track = (record: OpenApiSourceRecord, readAt?: number) =>
      refresher.track(
        { id: record.id, intervalS: record.descriptor.refreshIntervalS, fromUrl: record.descriptor.documentUrl !== undefined },
        readAt,
      );

    const sources: OpenApiSources = {
      async prepare(source, body) {
        const { credential } = body;
        const text = await documentOf(app.outbound.fetch, body, maxBytes);
        const converted = await convert(
          source,
          text,
          fillsApiKey(credential, () => app.store.openApiSource(source.id)?.credential?.['kind']),
        );
        let sealed: OpenApiSourceInput['credential'] = null;
        if (credential !== undefined && credential !== null) {
          if ('set' in credential) sealed = 'keep';
          else {
            const full = completeCredential(credential, converted.securitySchemes);
            sealed = { sealed: app.store.credentials.seal(openApiSourceOwner(source.id), full), shown: maskCredential(full) };
          }
        }
        return {
          source,
          document: text,
          title: converted.title,
          version: converted.version,
          skipped: converted.skipped,
          credential: sealed,
          operations: operationsOf(converted),
        };
      },
      written: (record) => track(record, Date.now()),
      deleted: (id) => refresher.untrack(id),
      refresh: (id, actor) => refresher.refresh(id, actor) as ReturnType<OpenApiSources['refresh']>,
      status: (id) => refresher.status(id),
    };
    app.decorate('openApiSources', sources);
    app.addHook('onReady', async () => {
      // Each stored source's first re-read is an interval after the start: a restart reads nothing at once.
      for (const record of app.store.openApiSources()) track(record);
    });
    app.addHook('onClose', async () => {
      refresher.close();
      await converter.close();
    });
  },
  { name: 'openapi-sources', dependencies: ['registry', 'outbound'] },
);

function operationsOf(converted: ImportedDocument): OpenApiOperationTool[] {
  return converted.operations.map((op) => ({ pointer: op.pointer, deprecated: op.deprecated, body: op.body as unknown as HttpTool }));
}

/** Whether the source's credential (or, for `{"set": true}`, the stored one) is an API key, which fills the document's apiKey parameters. */
function fillsApiKey(credential: OpenApiSourcePutBody['credential'], storedKind: () => unknown): boolean {
  if (credential === undefined || credential === null) return false;
  if ('set' in credential) return storedKind() === 'apiKey';
  return 'apiKey' in credential || 'apiKeyFile' in credential;
}

type Fetch = (url: string, init: RequestInit) => Promise<Response>;

/** The document text as given, or as read from its URL now. */
async function documentOf(fetch: Fetch, body: OpenApiSourcePutBody, maxBytes: number): Promise<string> {
  if (body.document === undefined) return readDocument(fetch, body.documentUrl as string, maxBytes);
  const text = typeof body.document === 'string' ? body.document : JSON.stringify(body.document);
  if (Buffer.byteLength(text) > maxBytes) {
    const message = `is larger than ${maxBytes} bytes (OPENAPI_MAX_DOCUMENT_BYTES)`;
    throw new RegistryError('TR_ERR_VALIDATION', `invalid OpenAPI source: document: ${message}`, {
      fieldErrors: [{ path: 'document', message }],
    });
  }
  return text;
}

/** Reads a document from its URL through the outbound address policy: 200 only, no redirects, bounded. */
async function readDocument(fetch: Fetch, url: string, maxBytes: number): Promise<string> {
  const refused = (message: string) =>
    new RegistryError('TR_ERR_VALIDATION', `invalid OpenAPI source: documentUrl: ${message}`, {
      fieldErrors: [{ path: 'documentUrl', message }],
    });
  let response: Response;
  try {
    response = await fetch(url, {
      headers: { accept: 'application/json, application/yaml, text/yaml, */*;q=0.5' },
      redirect: 'manual',
      signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    });
  } catch (err) {
    const code = (err as { cause?: { code?: string } }).cause?.code;
    throw refused(`cannot be read (${code ?? (err as Error).message.slice(0, 200)})`);
  }
  if (response.status !== 200) {
    await response.body?.cancel();
    throw refused(`answered ${response.status}, not 200 with the document (redirects are not followed)`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength;
    if (size > maxBytes) {
      await response.body?.cancel().catch(() => undefined);
      throw refused(`serves more than ${maxBytes} bytes (OPENAPI_MAX_DOCUMENT_BYTES)`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
