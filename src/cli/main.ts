/**
 * `tool-registry`: serve (the default), migrate, token, replication-key, announcer-key, and the
 * data commands that talk to a running registry over HTTP. Errors print one line and exit non-zero.
 */
import { createServer, type AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { loadConfig } from '../config.js';
import { ConfigError, listenProblem } from '../config/errors.js';
import { packageVersion } from '../package-root.js';
import { DatabaseOpenError } from '../store/open-error.js';
import { parseCommandArgs } from './args.js';
import { runDataCommand, DATA_COMMANDS } from './data-commands.js';
import { HELP } from './help.js';
import { processIo, type CliIo } from './io.js';
import { runMigrate } from './migrate.js';
import { misspeltSettings, misspeltWarning } from './misspelt-settings.js';
import { runAnnouncerKey } from './announcer-key.js';
import { runReplicationKey } from './replication-key.js';
import { runToken } from './token.js';
import { UsageError } from './usage-error.js';

/**
 * Runs the CLI; resolves to the exit code (serve resolves once listening and keeps running).
 * `io` defaults to this process's streams and environment; tests pass their own.
 */
export async function main(argv: readonly string[], io: Partial<CliIo> = {}): Promise<number> {
  const cli: CliIo = { ...processIo(), ...io };
  const [first, ...rest] = argv;
  const command = first === undefined || first.startsWith('-') ? 'serve' : first;
  const args = command === first ? rest : argv;
  if (args.includes('--help') || args.includes('-h') || command === 'help') {
    cli.stdout(HELP);
    return 0;
  }
  if (argv.length === 1 && (first === '--version' || first === '-V' || first === 'version')) {
    cli.stdout(`tool-registry ${packageVersion()}\n`);
    return 0;
  }
  // Every command that reads settings says first which variables look like misspelt ones.
  const warnMisspelt = () => {
    for (const misspelt of misspeltSettings(cli.env)) cli.stderr(`tool-registry: warning: ${misspeltWarning(misspelt)}\n`);
  };
  try {
    if (command === 'serve' || command === 'migrate') {
      const { settings } = parseCommandArgs(command, args);
      warnMisspelt();
      let config = loadConfig(cli.env, settings);
      if (command === 'migrate') return runMigrate(config, cli);
      // PORT=0 (any free port) without PUBLIC_URL: the port is chosen now, so that the URLs the
      // registry gives out (invoke routes, its resource identifier, the API document) name it.
      if (config.port === 0 && !(settings.PUBLIC_URL ?? cli.env['PUBLIC_URL'])) {
        config = loadConfig(cli.env, { ...settings, PORT: String(await freePort(config.host)) });
      }
      const { startServer } = await import('../server.js');
      await startServer(config);
      return 0;
    }
    if (command === 'token') {
      warnMisspelt();
      return runToken(args, cli);
    }
    if (command === 'replication-key') return runReplicationKey(args, cli);
    if (command === 'announcer-key') return runAnnouncerKey(args, cli);
    if (DATA_COMMANDS.has(command)) {
      warnMisspelt();
      return await runDataCommand(command, args, cli);
    }
    throw new UsageError(`unknown command "${command}" (see tool-registry --help)`);
  } catch (err) {
    // What the operator must change: the setting named first, as a wrong value is.
    if (err instanceof DatabaseOpenError) {
      cli.stderr(`tool-registry: DATABASE_PATH: ${err.message}\n`);
      return 2;
    }
    const message = err instanceof Error ? err.message : String(err);
    cli.stderr(`tool-registry: ${message}\n`);
    return err instanceof ConfigError || err instanceof UsageError ? 2 : 1;
  }
}

// Run directly under tsx (`npm run dev`); the package bin imports main() instead.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).then((code) => {
    if (code !== 0) process.exitCode = code;
  });
}

/** A port free on `host` now (the server binds it a moment later). */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', (err) => reject(listenProblem(err, { port: 0, host, portSetting: 'PORT', hostSetting: 'HOST' }) ?? err));
    probe.listen(0, host, () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}
