import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // A real Pulsar broker for the bus suite (skipped with a reason where none can run).
    globalSetup: ['test/setup/broker.ts'],
    // Under CI a JSON report too, so .ci/run can print a plain "N passed, N failed" line.
    reporters: process.env['CI'] === 'true' ? ['default', ['json', { outputFile: '.cache/vitest-results.json' }]] : ['default'],
  },
});
