#!/usr/bin/env node
// Thin launcher so `npx tool-registry` and the package bin run the compiled CLI.
import { main } from '../dist/src/cli/main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`tool-registry: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
