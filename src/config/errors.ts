/**
 * The problems settings stop startup with, each in one line that names the setting to change:
 * a value that does not pass its check (loadConfig), and an address that cannot be listened on.
 */
import type { SettingName } from './settings.js';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Where a listener binds, and the settings that say so. */
interface ListenAddress {
  port: number;
  host: string;
  portSetting: SettingName;
  hostSetting: SettingName;
}

/** One line naming the setting to change when an address cannot be listened on; undefined for other failures. */
export function listenProblem(err: unknown, { port, host, portSetting, hostSetting }: ListenAddress): ConfigError | undefined {
  switch ((err as NodeJS.ErrnoException | null)?.code) {
    case 'EADDRINUSE':
      return new ConfigError(`${portSetting}: ${port} is already in use on ${host}`);
    case 'EACCES':
      return new ConfigError(`${portSetting}: ${port} may not be listened on by this user on ${host}`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_FAIL':
    case 'EAI_NONAME':
      return new ConfigError(`${hostSetting}: ${host} is not an address of this machine`);
    default:
      return undefined;
  }
}

/** A setting's value as an error may echo it: a URL's user name and password become `***`. */
export function withoutUserinfo(value: string): string {
  return value.replace(/\/\/[^/?#@]*@/, '//***@');
}
