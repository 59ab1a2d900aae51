/**
 * `tool-registry`: serve (the default), migrate, token, and the data commands that talk to a
 * running registry over HTTP. Errors print one line and exit non-zero.
 */
import { pathToFileURL } from 'node:url';
import { ConfigError, loadConfig, settingsFromArgv } from '../config.js';
import { runDataCommand, DATA_COMMANDS } from './data-commands.js';
import { HELP } from './help.js';
import { runMigrate } from './migrate.js';
import { runToken } from './token.js';
import { UsageError } from './usage-error.js';

/** Runs the CLI; resolves to the exit code (serve resolves once listening and keeps running). */
export async function main(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const [first, ...rest] = argv;
  const command = first === undefined || first.startsWith('-') ? 'serve' : first;
  const args = command === first ? rest : argv;
  if (args.includes('--help') || args.includes('-h') || command === 'help') {
    process.stdout.write(HELP);
    return 0;
  }
  try {
    if (command === 'serve' || command === 'migrate' || command === 'token') {
      const { values, rest: leftover } = settingsFromArgv(args);
      if (command === 'token') return await runToken(loadConfig(env, values), leftover, env);
      if (leftover.length > 0) throw new UsageError(`unknown argument ${leftover[0] ?? ''} for ${command} (see tool-registry --help)`);
      const config = loadConfig(env, values);
      if (command === 'migrate') return runMigrate(config);
      const { startServer } = await import('../server.js');
      await startServer(config);
      return 0;
    }
    if (DATA_COMMANDS.has(command)) return await runDataCommand(command, args, env);
    throw new UsageError(`unknown command "${command}" (see tool-registry --help)`);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`tool-registry: ${message}\n`);
    return err instanceof ConfigError || err instanceof UsageError ? 2 : 1;
  }
}

// Run directly under tsx (`npm run dev`); the package bin imports main() instead.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then((code) => {
    if (code !== 0) process.exitCode = code;
  });
}
