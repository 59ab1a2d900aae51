import type { Config } from '../config.js';
import { openDatabase } from '../store/database.js';
import { migrate } from '../store/migrations.js';
import type { CliIo } from './io.js';

/** `tool-registry migrate`: applies pending migrations and reports the schema version. */
export function runMigrate(config: Config, io: CliIo): number {
  const db = openDatabase(config.databasePath);
  try {
    const { applied, version } = migrate(db);
    io.stdout(
      applied.length > 0
        ? `applied migration(s) ${applied.join(', ')}; schema version ${version}\n`
        : `schema is up to date at version ${version}\n`,
    );
    return 0;
  } finally {
    db.close();
  }
}
