import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package's root folder, found by walking up from this file: the same code runs from
 * `src/` under tsx and from `dist/src/` when compiled, and both need `migrations/`.
 */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'migrations'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the tool-registry package root (migrations/ folder)');
    dir = parent;
  }
}

/** The package's version, from its package.json. */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
