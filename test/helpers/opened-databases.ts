/**
 * The app's own SQLite connections, for tests that give one a tiny max_page_count (a full disk):
 * the pragma is per connection, so a second connection to the file would not do. A test file
 * routes src/store/database.js through `recordingDatabaseModule` with vi.mock:
 *
 *   vi.mock('../src/store/database.js', async (original) => (await import('./helpers/opened-databases.js')).recordingDatabaseModule(original));
 */
import type Database from 'better-sqlite3';
import type * as DatabaseModule from '../../src/store/database.js';

/** Every connection the app opened, oldest first. */
export const openedDatabases: Database.Database[] = [];

export async function recordingDatabaseModule(importOriginal: <T>() => Promise<T>): Promise<typeof DatabaseModule> {
  const original = await importOriginal<typeof DatabaseModule>();
  return {
    ...original,
    openDatabase: (...args: Parameters<typeof original.openDatabase>) => {
      const db = original.openDatabase(...args);
      openedDatabases.push(db);
      return db;
    },
  };
}
