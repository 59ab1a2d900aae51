import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const SEED = join(import.meta.dirname, '..', 'fixtures', 'seed');

/** A seed descriptor by file name (without .json), as the source documents give it. */
export function seed(name: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(SEED, `${name}.json`), 'utf8')) as Record<string, unknown>;
}

/** The discovery article's four tools, registered at startup there. */
export const ARTICLE_TOOLS = ['calculator', 'file_reader', 'database_query', 'simulation_data'] as const;
