import { configDefaults, defineConfig } from 'vitest/config';

// The files that need a real Apache Pulsar broker: test/bus/broker.test.ts and every
// test/bus/*.broker.test.ts. Only their project has the broker's global setup, and Vitest runs a
// project's global setup only when that project has a file to run: `npx vitest run
// test/catalog/catalog.test.ts` starts no broker (3.5 s wall instead of 28 s).
const BROKER_SUITES = ['test/bus/broker.test.ts', 'test/bus/*.broker.test.ts'];
// Files that hold /healthz to a latency bound while hostile work runs (issues 28 and 29): they
// measure the registry's event loop, so they run on their own, after the other projects, one
// file at a time. Run beside the rest of the suite on two cores, other files' CPU showed up as
// 50-150 ms answers that had nothing to do with the registry.
const TIMING_SUITES = ['test/hardening/schema-stalls.test.ts', 'test/mcp/churn.test.ts'];
// Files that spawn processes (the CLI, real servers killed with SIGKILL) or drive a browser:
// `*.process.test.ts`, plus the wire test that runs a tool service in a child. Kept out of `unit`
// so `npm run test:unit` stays in-process and fast.
const PROCESS_SUITES = ['test/**/*.process.test.ts', 'test/bus/issue-15-wire.test.ts'];

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 120_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        // In-process: unit, HTTP (app.inject) and CLI (main() in-process) tests; the bus contract against the fake.
        test: {
          name: 'unit',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...BROKER_SUITES, ...TIMING_SUITES, ...PROCESS_SUITES],
        },
      },
      {
        extends: true,
        // Child processes and Chromium, beside the unit project.
        test: { name: 'process', include: PROCESS_SUITES },
      },
      {
        extends: true,
        // After every other project (groupOrder), alone and one file at a time. `npm test` runs it
        // in a vitest run of its own, without coverage: V8's coverage counters slowed the checks
        // it times past the 50 ms budget on Node 26 (54-112 ms worst /healthz; it passes without them).
        test: { name: 'timing', include: TIMING_SUITES, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
      {
        extends: true,
        // A real broker (skipped with a printed reason where none can run; a failure under CI=true).
        // One broker for the project, so its files run one after another: a file that restarts
        // the broker must not pull it from under another.
        test: { name: 'bus', include: BROKER_SUITES, globalSetup: ['test/setup/broker.ts'], fileParallelism: false },
      },
    ],
    // Under CI a JSON report too (every project of the run in one file), so .ci/run can print a
    // plain "N passed, N failed" line; VITEST_JSON_REPORT names the file of the timing run.
    reporters:
      process.env['CI'] === 'true'
        ? ['default', ['json', { outputFile: process.env['VITEST_JSON_REPORT'] ?? '.cache/vitest-results.json' }]]
        : ['default'],
    // Off by default so a single file stays fast; `npm test` turns it on (--coverage).
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      // A summary in the log; the full table with `npx vitest run --coverage --coverage.reporter=text`.
      reporter: ['text-summary'],
      reportsDirectory: 'coverage',
      // The figure is printed even when a test fails, so every `npm test` log has it.
      reportOnFailure: true,
    },
  },
});
