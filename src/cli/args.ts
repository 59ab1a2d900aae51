/**
 * Flags through node:util parseArgs: every setting's flag (`--public-url`) plus the command's
 * own options. `--flag value` and `--flag=value` both work; a mistake is one UsageError line.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { flagOf, SETTING_NAMES, type SettingName, type Settings } from '../config/settings.js';
import { UsageError } from './usage-error.js';

export type CommandOptions = NonNullable<ParseArgsConfig['options']>;

/** `public-url` -> `PUBLIC_URL`. */
const SETTING_BY_OPTION = new Map<string, SettingName>(SETTING_NAMES.map((name) => [flagOf(name).slice(2), name]));

const SETTING_OPTIONS: CommandOptions = Object.fromEntries([...SETTING_BY_OPTION.keys()].map((option) => [option, { type: 'string' }]));

export interface ParsedArgs {
  /** Settings given as flags; they win over the environment. */
  settings: Settings;
  /** Each of the command's own options with every value given, in order. */
  options: ReadonlyMap<string, readonly string[]>;
  positionals: string[];
}

/**
 * Parses a command's arguments. parseArgs runs non-strict so that its tokens name the offending
 * flag in our own one-line messages, and so `--port -1` reaches the PORT check (strict mode
 * refuses a value starting with a dash).
 */
export function parseCommandArgs(command: string, args: readonly string[], own: CommandOptions = {}, allowPositionals = false): ParsedArgs {
  const options: CommandOptions = { ...SETTING_OPTIONS, ...own };
  const { values, positionals, tokens } = parseArgs({ args: [...args], options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind === 'option') {
      const known = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
      if (known === undefined) throw new UsageError(`unknown option ${token.rawName} for ${command} (see tool-registry --help)`);
      if (known.type === 'string' && token.value === undefined) throw new UsageError(`${token.rawName} needs a value`);
    } else if (token.kind === 'positional' && !allowPositionals) {
      throw new UsageError(`unknown argument ${token.value} for ${command} (see tool-registry --help)`);
    }
  }
  const settings: Settings = {};
  const ownValues = new Map<string, string[]>();
  for (const [option, value] of Object.entries(values)) {
    const texts = (Array.isArray(value) ? value : [value]).filter((v): v is string => typeof v === 'string');
    const setting = SETTING_BY_OPTION.get(option);
    if (setting !== undefined) settings[setting] = texts.at(-1);
    else ownValues.set(option, texts);
  }
  return { settings, options: ownValues, positionals };
}
