/**
 * The README's configuration table, CLI usage and error codes say what the code does: they are
 * generated (scripts/readme-tables.ts), and this fails when they drift.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { cliUsage, configTable, errorsTable, README_PATH, regenerate } from '../scripts/readme-tables.js';

describe('README', () => {
  const readme = readFileSync(README_PATH, 'utf8');

  it('has the configuration table, CLI usage and error codes the code gives (run: npx tsx scripts/readme-tables.ts)', () => {
    for (const block of [configTable(), cliUsage(), errorsTable()]) expect(readme).toContain(block);
    expect(regenerate(readme)).toBe(readme);
  });

  it('gives the two quick-start commands', () => {
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toContain('npm ci && npm test');
  });
});
