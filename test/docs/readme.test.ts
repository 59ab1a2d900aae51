/**
 * The documents say what the code does: the configuration table, the CLI usage and the error
 * codes are generated into docs/ (scripts/readme-tables.ts), and this fails when they drift;
 * the README gives the quick-start commands CI runs; relative links between README.md,
 * BENCHMARKS.md and docs/*.md resolve; and the layers table names every room of src/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { brokenLinks, GENERATED, README_PATH, regenerate, ROOT } from '../../scripts/readme-tables.js';

describe('README and docs/', () => {
  it('hold the configuration table, CLI usage and error codes the code gives (run: npx tsx scripts/readme-tables.ts)', () => {
    for (const { path, block } of GENERATED) {
      const text = readFileSync(path, 'utf8');
      expect(text, path).toContain(block());
      expect(regenerate(text), path).toBe(text);
    }
  });

  it('gives the two quick-start commands', () => {
    const readme = readFileSync(README_PATH, 'utf8');
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });

  it('links only to files and headings that exist', () => {
    expect(brokenLinks()).toEqual([]);
  });

  it('names every room of src/ in the layers table of docs/development.md', () => {
    const development = readFileSync(join(ROOT, 'docs', 'development.md'), 'utf8');
    const layers = development.slice(development.indexOf('\n## Layers'));
    const rooms = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory() || e.name.endsWith('.ts'))
      .map((e) => (e.isDirectory() ? `\`src/${e.name}/\`` : `\`src/${e.name}\``));
    expect(rooms.filter((room) => !layers.includes(room))).toEqual([]);
  });
});
