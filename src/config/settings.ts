/**
 * The settings by name, as --help, the flags and docs/configuration.md know them: each one's
 * help, default and secrecy, read from EnvSchema's metadata, and its flag.
 */
import { SETTING_META } from './checks.js';
import { EnvSchema } from './env.js';

export type SettingName = keyof typeof EnvSchema.shape;
/** Setting values as text, as flags and the environment give them. */
export type Settings = Partial<Record<SettingName, string>>;

export const SETTING_NAMES: readonly SettingName[] = EnvSchema.keyof().options;

export interface SettingInfo {
  help: string;
  /** The default as a user would write it; undefined when the setting may stay unset. */
  default: string | undefined;
  /** Never echoed in error messages. */
  secret: boolean;
}

function settingInfo(name: SettingName): SettingInfo {
  const meta = SETTING_META.get(EnvSchema.shape[name]);
  if (meta === undefined) throw new Error(`setting ${name} has no help`);
  return { help: meta.help, default: meta.default, secret: meta.secret === true };
}

/** Every setting's help, default and secrecy, read from EnvSchema (for --help and docs/configuration.md). */
export const SETTINGS = Object.fromEntries(SETTING_NAMES.map((name) => [name, settingInfo(name)])) as Readonly<
  Record<SettingName, SettingInfo>
>;

/** `PUBLIC_URL` -> `--public-url`. */
export function flagOf(name: SettingName): string {
  return `--${name.toLowerCase().replaceAll('_', '-')}`;
}

/** Whether a key (the first of a problem's path, say) is a setting's name. */
export const isSettingName = (key: PropertyKey | undefined): key is SettingName =>
  typeof key === 'string' && Object.hasOwn(EnvSchema.shape, key);
