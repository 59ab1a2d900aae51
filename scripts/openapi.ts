/**
 * Writes openapi.yaml, the OpenAPI document the routes' schemas make, for readers of the
 * repository and of the npm package. Built from the default config on an in-memory database,
 * so the same code always writes the same bytes; test/http/openapi.test.ts fails when the committed
 * file is out of date.
 *
 *   npx tsx scripts/openapi.ts           write openapi.yaml
 *   npx tsx scripts/openapi.ts --check   exit 1 if openapi.yaml is out of date
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { defaultConfig } from '../src/config.js';
import { buildApp } from '../src/http/app.js';
import { documentYaml } from '../src/http/openapi/document.js';
import { packageRoot } from '../src/package-root.js';

export const OPENAPI_PATH = join(packageRoot(), 'openapi.yaml');

/** The document as the default config's registry serves it at /openapi.yaml. */
export async function generateOpenapi(): Promise<string> {
  const app = await buildApp(defaultConfig({ DATABASE_PATH: ':memory:', LOG_LEVEL: 'silent' }));
  try {
    await app.ready();
    return documentYaml(app.swagger());
  } finally {
    await app.close();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { check: { type: 'boolean', default: false } } });
  const document = await generateOpenapi();
  if (values.check) {
    const current = readFileSync(OPENAPI_PATH, 'utf8');
    if (current !== document) {
      process.stderr.write('openapi.yaml is out of date: run `npx tsx scripts/openapi.ts`\n');
      process.exitCode = 1;
    }
    return;
  }
  writeFileSync(OPENAPI_PATH, document);
  process.stdout.write(`wrote ${OPENAPI_PATH}\n`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
