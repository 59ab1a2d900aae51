import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SqliteDatabase } from './database.js';
import { packageRoot } from '../package-root.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const FILE_PATTERN = /^(\d{3})_([a-z0-9_]+)\.sql$/;

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/** Reads `migrations/NNN_name.sql` in version order. */
export function loadMigrations(dir: string = join(packageRoot(), 'migrations')): Migration[] {
  const migrations: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    const match = FILE_PATTERN.exec(file);
    if (!match) continue;
    migrations.push({ version: Number(match[1]), name: match[2] ?? '', sql: readFileSync(join(dir, file), 'utf8') });
  }
  migrations.forEach((m, i) => {
    if (m.version !== i + 1)
      throw new MigrationError(`migrations must be numbered 001, 002, ... without gaps; found ${m.version} at position ${i + 1}`);
  });
  return migrations;
}

export interface MigrationResult {
  /** Versions applied by this run. */
  applied: number[];
  /** The schema version after the run. */
  version: number;
}

/**
 * Applies pending migrations in order, all in one transaction, and records each. A database
 * whose schema is newer than this code stops here with a clear message rather than being
 * misread.
 */
export function migrate(db: SqliteDatabase, migrations: Migration[] = loadMigrations()): MigrationResult {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  ) STRICT`);
  const current = (db.prepare('SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations').get() as { v: number }).v;
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new MigrationError(
      `the database schema is version ${current} but this tool-registry knows only up to ${latest}; upgrade tool-registry or use a matching database`,
    );
  }
  const pending = migrations.filter((m) => m.version > current);
  const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  db.transaction(() => {
    for (const m of pending) {
      db.exec(m.sql);
      record.run(m.version, m.name, new Date().toISOString());
    }
  }).immediate();
  return { applied: pending.map((m) => m.version), version: Math.max(current, latest) };
}
