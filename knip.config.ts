import type { KnipConfig } from 'knip';

/**
 * Unused files, exports and dependencies (`npm run knip`, part of `npm test`). The bin, the
 * package's exports and the configs of vitest and eslint are found by knip itself.
 */
const config: KnipConfig = {
  // Worker threads' modules, loaded by URL: src/store/bulk-write.ts, src/json-schema/validation-pool.ts.
  entry: [
    'src/index.ts',
    'src/store/bulk-write-worker.ts',
    'src/json-schema/validation-worker.ts',
    'src/sources/openapi/convert-worker.ts',
    'scripts/*.ts',
    'bench/*.ts',
    'examples/*.ts',
    'test/**/*.test.ts',
  ],
  project: ['bin/**/*.js', 'src/**/*.ts', 'test/**/*.ts', 'scripts/**/*.ts', 'bench/**/*.ts', 'examples/**/*.ts'],
  // An exported interface or type that names a parameter or result of an export in the same
  // file is part of that module's surface, even when no other file names it.
  ignoreExportsUsedInFile: { interface: true, type: true },
};

export default config;
