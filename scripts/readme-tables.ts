/**
 * The documents' generated parts: the configuration table in docs/configuration.md (from
 * SETTINGS, which EnvSchema's metadata fills), the CLI usage in docs/cli.md (from HELP) and the
 * error-code table in docs/errors.md (from ERRORS). `npx tsx scripts/readme-tables.ts` rewrites
 * them; test/docs/readme.test.ts fails when they drift from the code, and when a relative link
 * between README.md, BENCHMARKS.md and docs/*.md points at a file or heading that is not there.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { HELP } from '../src/cli/help.js';
import { flagOf, SETTING_NAMES, SETTINGS } from '../src/config/settings.js';
import { ERRORS, type ErrorCode } from '../src/model/errors.js';

export const ROOT = join(import.meta.dirname, '..');
export const README_PATH = join(ROOT, 'README.md');
export const CONFIGURATION_PATH = join(ROOT, 'docs', 'configuration.md');
export const CLI_PATH = join(ROOT, 'docs', 'cli.md');
export const ERRORS_PATH = join(ROOT, 'docs', 'errors.md');

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

/** Each generated block: the file that holds it, and what it holds. */
export const GENERATED: readonly { path: string; block: () => string }[] = [
  { path: CONFIGURATION_PATH, block: configTable },
  { path: CLI_PATH, block: cliUsage },
  { path: ERRORS_PATH, block: errorsTable },
];

/** A document's text with every generated block it holds replaced by what the code says now. */
export function regenerate(text: string): string {
  return text
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

/** README.md, BENCHMARKS.md and every docs/*.md. */
export function documents(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => join(ROOT, 'docs', f));
  return [README_PATH, join(ROOT, 'BENCHMARKS.md'), ...docs];
}

const withoutCode = (text: string) => text.replace(/^```[\s\S]*?^```/gm, '');

/** The anchors GitHub gives a document's headings (lower case, punctuation dropped, `-` for spaces, `-1` for repeats). */
export function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading = ''] of withoutCode(text).matchAll(/^#{1,6} (.*)$/gm)) {
    const plain = heading.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replaceAll('`', '');
    const slug = plain
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}_\- ]/gu, '')
      .replaceAll(' ', '-');
    const n = seen.get(slug);
    seen.set(slug, (n ?? -1) + 1);
    anchors.add(n === undefined ? slug : `${slug}-${n + 1}`);
  }
  return anchors;
}

/** Every relative link of the documents whose file or heading does not exist, as `file: link`. */
export function brokenLinks(): string[] {
  const broken: string[] = [];
  for (const file of documents()) {
    for (const [, link = ''] of withoutCode(readFileSync(file, 'utf8')).matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/i.test(link)) continue;
      const [path = '', anchor] = link.split('#');
      const target = path === '' ? file : normalize(join(dirname(file), path));
      const where = `${relative(ROOT, file)}: ${link}`;
      if (!existsSync(target)) broken.push(`${where} (no such file)`);
      else if (anchor !== undefined && !(target.endsWith('.md') && anchorsOf(readFileSync(target, 'utf8')).has(anchor)))
        broken.push(`${where} (no such heading)`);
    }
  }
  return broken;
}

if (import.meta.url === `file://${process.argv[1] ?? ''}`) {
  for (const { path } of GENERATED) writeFileSync(path, regenerate(readFileSync(path, 'utf8')));
  console.log('generated tables rewritten in docs/configuration.md, docs/cli.md and docs/errors.md');
}
