/**
 * The rows of OpenAPI sources (migrations/015_openapi_sources.sql), for RegistryStore, which runs
 * them inside its write transactions. The sealed credential has its own read: no record built
 * here carries it, only what reads may show of it.
 */
import { RegistryError } from '../model/errors.js';
import type { OpenApiSource, OpenApiSourceRecord } from '../model/openapi-source.js';
import type { SqliteDatabase } from './database.js';

interface Row {
  id: string;
  descriptor: string;
  document: string;
  title: string;
  version: string;
  skipped: string;
  credential_shown: string | null;
  create_index: number;
  modify_index: number;
  updated_at: string;
}

const COLUMNS = 'id, descriptor, document, title, version, skipped, credential_shown, create_index, modify_index, updated_at';

const recordOf = (row: Row): OpenApiSourceRecord => ({
  id: row.id,
  descriptor: JSON.parse(row.descriptor) as OpenApiSource,
  document: row.document,
  title: row.title,
  version: row.version,
  skipped: JSON.parse(row.skipped) as OpenApiSourceRecord['skipped'],
  credential: row.credential_shown === null ? null : (JSON.parse(row.credential_shown) as Record<string, unknown>),
  createdIndex: row.create_index,
  index: row.modify_index,
  updatedAt: row.updated_at,
});

/** A source's write: what is stored, and its credential sealed (null: none; 'keep': as stored). */
export interface OpenApiSourceWrite {
  source: OpenApiSource;
  document: string;
  title: string;
  version: string;
  skipped: OpenApiSourceRecord['skipped'];
  credential: { sealed: string; shown: Record<string, unknown> } | null | 'keep';
}

export class OpenApiSourceRows {
  readonly #stmts;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      all: db.prepare(`SELECT ${COLUMNS} FROM openapi_sources ORDER BY id`),
      get: db.prepare(`SELECT ${COLUMNS} FROM openapi_sources WHERE id = ?`),
      sealed: db.prepare('SELECT credential FROM openapi_sources WHERE id = ?').pluck(),
      before: db.prepare('SELECT create_index, credential, credential_shown FROM openapi_sources WHERE id = ?'),
      upsert: db.prepare(`
        INSERT INTO openapi_sources (id, descriptor, document, title, version, skipped, credential, credential_shown, create_index, modify_index, updated_at)
        VALUES (@id, @descriptor, @document, @title, @version, @skipped, @credential, @shown, @index, @index, @now)
        ON CONFLICT (id) DO UPDATE SET
          descriptor = excluded.descriptor, document = excluded.document, title = excluded.title,
          version = excluded.version, skipped = excluded.skipped, credential = excluded.credential,
          credential_shown = excluded.credential_shown, modify_index = excluded.modify_index, updated_at = excluded.updated_at`),
      // A re-read: the document and what it gave, not the source's descriptor nor its index.
      reread: db.prepare(`
        UPDATE openapi_sources SET document = @document, title = @title, version = @version, skipped = @skipped, updated_at = @now
        WHERE id = @id`),
      delete: db.prepare(`DELETE FROM openapi_sources WHERE id = ? RETURNING ${COLUMNS}`),
      tools: db.prepare("SELECT name FROM tools WHERE owner = ? AND status != 'deleted' ORDER BY name").pluck(),
    };
  }

  all(): OpenApiSourceRecord[] {
    return (this.#stmts.all.all() as Row[]).map(recordOf);
  }

  get(id: string): OpenApiSourceRecord | undefined {
    const row = this.#stmts.get.get(id) as Row | undefined;
    return row && recordOf(row);
  }

  /** The sealed credential of a source, for its calls only. */
  sealedCredential(id: string): string | undefined {
    return (this.#stmts.sealed.get(id) as string | null | undefined) ?? undefined;
  }

  /** Names of the live tools an owner holds. */
  toolsOf(owner: string): string[] {
    return this.#stmts.tools.all(owner) as string[];
  }

  put(write: OpenApiSourceWrite, index: number, now: string): { record: OpenApiSourceRecord; created: boolean } {
    const before = this.#stmts.before.get(write.source.id) as
      { create_index: number; credential: string | null; credential_shown: string | null } | undefined;
    let credential: string | null = null;
    let shown: string | null = null;
    if (write.credential === 'keep') {
      if (!before?.credential) {
        throw new RegistryError('TR_ERR_VALIDATION', `invalid OpenAPI source: credential: there is no stored credential to keep`, {
          fieldErrors: [{ path: 'credential', message: 'there is no stored credential to keep; give one, or null for none' }],
        });
      }
      credential = before.credential;
      shown = before.credential_shown;
    } else if (write.credential !== null) {
      credential = write.credential.sealed;
      shown = JSON.stringify(write.credential.shown);
    }
    const row: Row = {
      id: write.source.id,
      descriptor: JSON.stringify(write.source),
      document: write.document,
      title: write.title,
      version: write.version,
      skipped: JSON.stringify(write.skipped),
      credential_shown: shown,
      create_index: before?.create_index ?? index,
      modify_index: index,
      updated_at: now,
    };
    this.#stmts.upsert.run({
      id: row.id,
      descriptor: row.descriptor,
      document: row.document,
      title: row.title,
      version: row.version,
      skipped: row.skipped,
      credential,
      shown,
      index,
      now,
    });
    return { record: recordOf(row), created: before === undefined };
  }

  /** Stores the document a re-read found, with its title, version and skipped operations. */
  reread(id: string, read: Pick<OpenApiSourceWrite, 'document' | 'title' | 'version' | 'skipped'>, now: string): void {
    this.#stmts.reread.run({
      id,
      document: read.document,
      title: read.title,
      version: read.version,
      skipped: JSON.stringify(read.skipped),
      now,
    });
  }

  delete(id: string): OpenApiSourceRecord {
    const row = this.#stmts.delete.get(id) as Row | undefined;
    if (!row) throw new RegistryError('TR_ERR_NOT_FOUND', `no OpenAPI source "${id}"`);
    return recordOf(row);
  }
}
