/**
 * The README's generated parts: the configuration table (from SETTINGS, which EnvSchema's
 * metadata fills), the CLI usage (from HELP) and the error-code table (from ERRORS).
 * `npx tsx scripts/readme-tables.ts` rewrites them in README.md; test/readme.test.ts fails when
 * they drift from the code.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HELP } from '../src/cli/help.js';
import { flagOf, SETTING_NAMES, SETTINGS } from '../src/config.js';
import { ERRORS, type ErrorCode } from '../src/model/errors.js';

export const README_PATH = join(import.meta.dirname, '..', 'README.md');

const esc = (s: string) => s.replaceAll('|', '\\|');

export function configTable(): string {
  const rows = SETTING_NAMES.map((name) => {
    const s = SETTINGS[name];
    return `| \`${name}\` | \`${flagOf(name)}\` | ${s.default === undefined ? '(unset)' : `\`${s.default}\``} | ${esc(s.help)} |`;
  });
  return ['| Variable | Flag | Default | Meaning |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

export function cliUsage(): string {
  return HELP.slice(0, HELP.indexOf('\nSettings (')).trimEnd();
}

export function errorsTable(): string {
  const rows = (Object.keys(ERRORS) as ErrorCode[])
    .sort((a, b) => ERRORS[a].status - ERRORS[b].status)
    .map((c) => `| ${ERRORS[c].status} | \`${c}\` | ${ERRORS[c].title} |`);
  return ['| Status | `code` | `title` |', '| --- | --- | --- |', ...rows].join('\n');
}

/** README text with every generated block replaced by what the code says now. */
export function regenerate(readme: string): string {
  return readme
    .replace(
      /(<!-- config-table:start[^\n]*-->\n)[\s\S]*?(\n<!-- config-table:end -->)/,
      (_m, a: string, b: string) => `${a}${configTable()}${b}`,
    )
    .replace(
      /(<!-- cli-usage:start[^\n]*-->\n```\n)[\s\S]*?(\n```\n<!-- cli-usage:end -->)/,
      (_m, a: string, b: string) => `${a}${cliUsage()}${b}`,
    )
    .replace(
      /(<!-- errors-table:start[^\n]*-->\n)[\s\S]*?(\n<!-- errors-table:end -->)/,
      (_m, a: string, b: string) => `${a}${errorsTable()}${b}`,
    );
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  writeFileSync(README_PATH, regenerate(readFileSync(README_PATH, 'utf8')));
  console.log('README.md tables regenerated');
}
