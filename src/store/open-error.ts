/**
 * The database could not be opened or read as one: its folder cannot be made, the file is not a
 * SQLite database, or it may not be read or written. Apart from database.ts (and better-sqlite3)
 * so that the CLI can tell it from other failures without loading either: it answers with one
 * line naming DATABASE_PATH.
 */
export class DatabaseOpenError extends Error {
  override readonly name = 'DatabaseOpenError';

  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(`cannot open the database at ${path}: ${reasonOf(cause)}`, { cause });
  }
}

function reasonOf(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'SQLITE_NOTADB') return 'the file is not a SQLite database';
  if (code === 'EEXIST' || code === 'ENOTDIR') return 'a part of its folder path is a file, not a folder';
  if (code === 'EACCES' || code === 'EPERM' || code === 'SQLITE_CANTOPEN' || code === 'SQLITE_READONLY')
    return `it may not be read and written here (${code})`;
  return err instanceof Error ? err.message : String(err);
}
