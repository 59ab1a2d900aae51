/**
 * The sealed credentials of single HTTP tools (issue 30, migrations/019_tool_credentials.sql), for
 * RegistryStore. A deleted tool's row goes by trigger, in the transaction that deletes the tool.
 */
import type { SqliteDatabase } from './database.js';

/** What reads show of a tool's credential: never its secret. */
export interface ToolCredentialRecord {
  name: string;
  shown: Record<string, unknown>;
  origin: string;
  updatedAt: string;
}

/** What calls open: the sealed credential and the origin it may go to. */
export interface SealedToolCredential {
  sealed: string;
  origin: string;
}

export class ToolCredentialRows {
  readonly #stmts;

  constructor(db: SqliteDatabase) {
    this.#stmts = {
      get: db.prepare('SELECT name, shown, origin, updated_at FROM tool_credentials WHERE name = ?'),
      sealed: db.prepare('SELECT sealed, origin FROM tool_credentials WHERE name = ?'),
      put: db.prepare(`
        INSERT INTO tool_credentials (name, sealed, shown, origin, updated_at) VALUES (@name, @sealed, @shown, @origin, @now)
        ON CONFLICT (name) DO UPDATE SET sealed = excluded.sealed, shown = excluded.shown, origin = excluded.origin, updated_at = excluded.updated_at`),
      delete: db.prepare('DELETE FROM tool_credentials WHERE name = ?'),
    };
  }

  get(name: string): ToolCredentialRecord | undefined {
    const row = this.#stmts.get.get(name) as { name: string; shown: string; origin: string; updated_at: string } | undefined;
    return (
      row && { name: row.name, shown: JSON.parse(row.shown) as Record<string, unknown>, origin: row.origin, updatedAt: row.updated_at }
    );
  }

  sealed(name: string): SealedToolCredential | undefined {
    return this.#stmts.sealed.get(name) as SealedToolCredential | undefined;
  }

  put(name: string, sealed: string, shown: Record<string, unknown>, origin: string, now: string): ToolCredentialRecord {
    this.#stmts.put.run({ name, sealed, shown: JSON.stringify(shown), origin, now });
    return { name, shown, origin, updatedAt: now };
  }

  /** Whether there was one. */
  delete(name: string): boolean {
    return this.#stmts.delete.run(name).changes > 0;
  }
}
