/** Number formats, tables (plain text and Markdown) and the machine's description. */
import { readFileSync } from 'node:fs';
import { availableParallelism, totalmem } from 'node:os';

export const f0 = (v: number | null | undefined) =>
  v === null || v === undefined || !Number.isFinite(v) ? '-' : Math.round(v).toLocaleString('en-US');
export const f1 = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(1));
export const f2 = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? '-' : v.toFixed(2));
export const pct = (v: number | null | undefined) =>
  v === null || v === undefined || !Number.isFinite(v) ? '-' : `${(v * 100).toFixed(0)}%`;
export const passMiss = (met: boolean | null) => (met === null ? '-' : met ? 'pass' : 'MISS');

export interface Section {
  title: string;
  text: string;
  markdown: string;
}

/** Columns of figures align right; the first `leftColumns` and those listed in `textColumns` align left. */
export function table(head: string[], rows: string[][], leftColumns = 1, textColumns: string[] = []): { text: string; markdown: string } {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const left = head.map((h, i) => i < leftColumns || textColumns.includes(h));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (left[i] ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const text = [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
  const md = [
    `| ${head.join(' | ')} |`,
    `|${left.map((l) => (l ? ' --- ' : ' ---: ')).join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
  return { text, markdown: md };
}

export function machine() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  return {
    nproc: availableParallelism(),
    cpuModel: /model name\s*:\s*(.+)/.exec(cpuinfo)?.[1]?.trim() ?? 'unknown',
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
  };
}
