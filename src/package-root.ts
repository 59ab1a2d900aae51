import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';

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

/**
 * A worker thread on a module beside `base` (an `import.meta.url`), named without extension:
 * the .ts source under tsx or vitest, the compiled .js under dist/.
 */
export function startWorker(base: string, name: string, options: WorkerOptions = {}): Worker {
  const url = new URL(`./${name}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);
  return url.pathname.endsWith('.ts') ? typescriptWorker(url, options) : new Worker(url, options);
}

/**
 * A worker on a TypeScript module (running from the sources: tsx, vitest). A worker does not
 * get the parent's module hooks on Node 20, not even with `--import tsx` in its execArgv, so it
 * registers tsx itself before importing the module.
 */
function typescriptWorker(url: URL, options: WorkerOptions): Worker {
  // tsx's ESM entry of its API (require.resolve would give the CommonJS one, whose register()
  // does not work from a worker).
  const require = createRequire(import.meta.url);
  const manifest = require.resolve('tsx/package.json');
  const { exports } = require(manifest) as { exports: Record<string, { import: { default: string } }> };
  const api = pathToFileURL(join(dirname(manifest), exports['./esm/api']?.import.default ?? '')).href;
  return new Worker(`import(${JSON.stringify(api)}).then(({ register }) => { register(); return import(${JSON.stringify(url.href)}); });`, {
    ...options,
    eval: true,
  });
}
