/**
 * Reading a /metrics answer in tests. parse-prometheus-text-format checks the text (it throws on
 * a malformed line) and gives each family's name, help and type, but it cannot read histograms
 * with labels: it folds all their series into one set of buckets and drops their labels, _sum
 * and _count. So samples are read here, line by line (the text format's sample line:
 * `name{label="value",...} number`, with `\\`, `\"` and `\n` escapes in values), and checked
 * against the library's for counters and gauges, where it reads them right.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { expect } from 'vitest';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  help: string;
  type: 'COUNTER' | 'GAUGE' | 'HISTOGRAM' | 'SUMMARY' | 'UNTYPED';
  samples: Sample[];
}

const SAMPLE_LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$/u;
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(?:,|$)/uy;

function parseLabels(text: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  while (LABEL.lastIndex < text.length) {
    const match = LABEL.exec(text);
    if (!match) throw new Error(`malformed labels: {${text}}`);
    labels[match[1] ?? ''] = (match[2] ?? '').replace(/\\(.)/gu, (_m, c: string) => (c === 'n' ? '\n' : c));
  }
  return labels;
}

const parseValue = (text: string) => (text === '+Inf' ? Infinity : text === '-Inf' ? -Infinity : Number(text));

/** Families by name, each with every sample of it (a histogram's _bucket, _sum and _count series included). */
export function parseMetrics(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  for (const family of parsePrometheusTextFormat(text)) {
    families.set(family.name, { name: family.name, help: family.help, type: family.type as Family['type'], samples: [] });
  }
  const ownerOf = (sample: string) =>
    families.get(sample) ??
    families.get(sample.replace(/_(bucket|sum|count)$/u, '')) ??
    expect.unreachable(`sample ${sample} has no family`);
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = SAMPLE_LINE.exec(line);
    if (!match) throw new Error(`malformed sample line: ${line}`);
    const name = match[1] ?? '';
    ownerOf(name).samples.push({ name, labels: parseLabels(match[2] ?? ''), value: parseValue(match[3] ?? '') });
  }
  // Where the library reads samples right (counters and gauges), it reads what this does.
  for (const family of parsePrometheusTextFormat(text)) {
    if (family.type !== 'COUNTER' && family.type !== 'GAUGE') continue;
    const theirs = family.metrics.map((m) => ({ labels: m.labels ?? {}, value: parseValue(m.value ?? '') }));
    const ours = (families.get(family.name)?.samples ?? []).map(({ labels, value }) => ({ labels, value }));
    expect(ours, family.name).toEqual(theirs);
  }
  return families;
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const family = families.get(name) ?? families.get(name.replace(/_(bucket|sum|count)$/u, ''));
  const found = family?.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)) ?? [];
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}
