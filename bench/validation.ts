/**
 * Issue 28, per-call validation cost: what checking one call's arguments costs, before and after
 * the bounded-time validator, side by side in one process and one run. "Before" is plain Ajv as
 * the registry ran it until issue 28: `new Ajv2020({ allErrors: true, strict: false })` with
 * ajv-formats, V8's regular expressions, one compiled validator per schema, `validate(value)`.
 * "After" is the registry's own `ArgumentValidators` (src/json-schema/arguments.ts), whatever it
 * is at the time: its linear-time patterns, hashed `uniqueItems`, work budget and, past its
 * inline budget, the worker thread, with its field errors built. Both compile before they are
 * timed; the figure is the median microseconds of one validation, and the ratio after / before.
 *
 * The rows are ordinary tools' arguments: every tool of examples/descriptors/ (the discovery
 * article's tools and the message-bus examples), a schema with a few patterns and formats, an
 * order with nested objects, `$defs`, an enum and `anyOf` formats (valid, and with three
 * mistakes), and arrays of 50 and 500 objects with patterns.
 *
 * Samples alternate before and after; each side gets SAMPLES samples of about SAMPLE_MS
 * (--duration / 25 s each: 200 ms by default, 80 ms with --quick).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import ajvFormats from 'ajv-formats';
import { ArgumentValidators } from '../src/json-schema/arguments.js';
import type { FieldError } from '../src/model/errors.js';
import { normaliseTool, type Tool } from '../src/model/normalise.js';
import { BusToolInputSchema, HttpToolSchema, type BusTool } from '../src/model/schemas.js';
import { REPO_ROOT } from './lib.js';
import { log, opts } from './options.js';
import { f0, f2, pct, table, type Section } from './report.js';

// ajv-formats is CommonJS with `exports.default`, which NodeNext types as the module itself.
const addFormats = ajvFormats.default;

const SAMPLES = opts.quick ? 5 : 9;
const SAMPLE_MS = (opts.durationS * 1000) / 25;

export interface ValidationRow {
  row: string;
  schemaBytes: number;
  argumentBytes: number;
  /** Whether the arguments fit (by the "before" validator). */
  valid: boolean;
  /** Median microseconds per validation. */
  beforeUs: number;
  afterUs: number;
  /** After / before. */
  ratio: number;
  note?: string;
}

export interface ValidationResult {
  samples: number;
  sampleMs: number;
  rows: ValidationRow[];
}

interface Case {
  row: string;
  tool: Tool;
  args: Record<string, unknown>;
}

/** The "after" check, sync (before issue 28) or async (with its worker), with what the async one is told. */
type Check = (
  tool: Tool,
  value: Record<string, unknown>,
  context: { owner: string; timeoutMs: number },
) => FieldError[] | Promise<FieldError[]>;

const CONTEXT = { owner: 'bench', timeoutMs: 30_000 };

/** Arguments for each example tool, as a model would send them. */
const EXAMPLE_ARGUMENTS: Record<string, Record<string, unknown>> = {
  calculator: { expression: '(6 * 7) / 2 + 1' },
  database_query: { query: 'select name, balance from accounts where id = 7' },
  file_reader: { filename: 'vault-blueprint.pdf' },
  simulation_data: { area: 'lobby' },
  weather_forecast: {},
  'query-customers': { question: 'Which customers renewed in March?' },
  'query-products': { question: 'Which products ship from Lyon?' },
  'tell-joke': { topic: 'programming' },
};

function exampleCases(): Case[] {
  const dir = join(REPO_ROOT, 'examples', 'descriptors');
  const cases: Case[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const descriptor = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>;
    // Tool services (`id`, queues) are not tools.
    if (typeof descriptor['name'] !== 'string') continue;
    const tool =
      descriptor['type'] === 'tool-service'
        ? normaliseTool('tool-service', BusToolInputSchema.parse(descriptor) as BusTool)
        : normaliseTool('http', HttpToolSchema.parse(descriptor));
    const args = EXAMPLE_ARGUMENTS[tool.name];
    if (args === undefined) throw new Error(`bench/validation.ts: no arguments for the example tool ${tool.name}`);
    cases.push({ row: `examples/${file}`, tool, args });
  }
  return cases;
}

/** An HTTP tool with this input schema. */
const httpTool = (name: string, inputSchema: Record<string, unknown>): Tool =>
  normaliseTool('http', HttpToolSchema.parse({ name, description: `bench ${name}`, endpoint: '/bench', inputSchema }));

const PATTERNS_AND_FORMATS = {
  type: 'object',
  properties: {
    sku: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' },
    zip: { type: 'string', pattern: '^\\d{5}(-\\d{4})?$' },
    slug: { type: 'string', pattern: '^[a-z][a-z0-9-]{0,62}$' },
    email: { type: 'string', format: 'email' },
    id: { type: 'string', format: 'uuid' },
    when: { type: 'string', format: 'date-time' },
    site: { type: 'string', format: 'uri' },
    tags: { type: 'array', maxItems: 10, items: { type: 'string', pattern: '^[a-z][a-z0-9-]{0,31}$' } },
  },
  required: ['sku', 'email', 'id'],
  additionalProperties: false,
};

const ORDER = {
  type: 'object',
  description: 'An order for the warehouse',
  properties: {
    customer: { $ref: '#/$defs/customer' },
    items: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        properties: { name: { type: 'string', minLength: 1 }, quantity: { type: 'integer', minimum: 1 } },
        required: ['name', 'quantity'],
        additionalProperties: false,
      },
    },
    priority: { type: 'string', enum: ['low', 'normal', 'high'] },
    contact: {
      anyOf: [
        { type: 'string', format: 'email' },
        { type: 'string', format: 'uri' },
      ],
    },
    deliverBy: { type: 'string', format: 'date' },
    note: { type: ['string', 'null'] },
  },
  required: ['customer', 'items'],
  additionalProperties: false,
  $defs: {
    customer: { type: 'object', properties: { id: { type: 'string', format: 'uuid' }, name: { type: 'string' } }, required: ['id'] },
  },
};

const VALID_ORDER = {
  customer: { id: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70', name: 'Ada' },
  items: [
    { name: 'bolt', quantity: 12 },
    { name: 'nut', quantity: 12 },
  ],
  priority: 'high',
  contact: 'ada@example.com',
  deliverBy: '2026-03-01',
  note: null,
};

const LINES = {
  type: 'object',
  properties: {
    lines: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          sku: { type: 'string', pattern: '^[A-Z]{3}-\\d{4}$' },
          name: { type: 'string', minLength: 1, maxLength: 200 },
          quantity: { type: 'integer', minimum: 1 },
          price: { type: 'number', exclusiveMinimum: 0 },
        },
        required: ['sku', 'quantity'],
        additionalProperties: false,
      },
    },
  },
  required: ['lines'],
};

const lines = (n: number) => ({
  lines: Array.from({ length: n }, (_, i) => ({
    sku: `ABC-${String(i).padStart(4, '0')}`,
    name: `part ${i}`,
    quantity: 1 + (i % 9),
    price: 0.5 + i,
  })),
});

function cases(): Case[] {
  return [
    ...exampleCases(),
    {
      row: 'patterns and formats',
      tool: httpTool('bench_patterns', PATTERNS_AND_FORMATS),
      args: {
        sku: 'ABC-1234',
        zip: '75001-1234',
        slug: 'spring-sale',
        email: 'ada@example.com',
        id: '0b6f1c52-4a4e-4f0a-9f1e-2d3c4b5a6f70',
        when: '2026-03-01T09:30:00Z',
        site: 'https://example.com/orders?id=7',
        tags: ['blue', 'large', 'sale-2026'],
      },
    },
    { row: 'order: nested, $defs, enum, anyOf', tool: httpTool('bench_order', ORDER), args: VALID_ORDER },
    {
      row: 'order with 3 mistakes',
      tool: httpTool('bench_order_bad', ORDER),
      args: { ...VALID_ORDER, customer: { id: 'not-a-uuid' }, items: [{ name: 'bolt', quantity: 0 }], priority: 'urgent' },
    },
    { row: 'array of 50 objects', tool: httpTool('bench_lines_50', LINES), args: lines(50) },
    { row: 'array of 500 objects', tool: httpTool('bench_lines_500', LINES), args: lines(500) },
  ];
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/**
 * Microseconds per call of `once`, over about SAMPLE_MS: in batches, so that the clock is read
 * rarely, and awaiting only what returns a promise (a synchronous check is not given a tick).
 */
async function sample(once: () => unknown): Promise<number> {
  let calls = 0;
  let batch = 1;
  const started = performance.now();
  let elapsed = 0;
  while (elapsed < SAMPLE_MS) {
    for (let i = 0; i < batch; i++) {
      const result = once();
      if (result instanceof Promise) await result;
    }
    calls += batch;
    elapsed = performance.now() - started;
    if (elapsed < SAMPLE_MS / 20) batch *= 2;
  }
  return (elapsed * 1000) / calls;
}

export async function validationBench(): Promise<ValidationResult> {
  log(`validation: ${SAMPLES} samples of ${SAMPLE_MS} ms a side a row`);
  const rows: ValidationRow[] = [];
  const after = new ArgumentValidators();
  const check = (after.check as unknown as Check).bind(after);
  for (const { row, tool, args } of cases()) {
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    addFormats(ajv);
    const validate = ajv.compile(tool.inputSchema);
    const valid = validate(args);
    // Compiled (and, if it has one, its worker started) before anything is timed; and the two agree.
    const errors = await check(tool, args, CONTEXT);
    const agrees = valid === (errors.length === 0);
    const before: number[] = [];
    const afterUs: number[] = [];
    for (let s = 0; s < SAMPLES; s++) {
      before.push(await sample(() => validate(args)));
      afterUs.push(await sample(() => check(tool, args, CONTEXT)));
    }
    const beforeUs = median(before);
    const afterMedian = median(afterUs);
    rows.push({
      row,
      schemaBytes: Buffer.byteLength(JSON.stringify(tool.inputSchema)),
      argumentBytes: Buffer.byteLength(JSON.stringify(args)),
      valid,
      beforeUs,
      afterUs: afterMedian,
      ratio: afterMedian / beforeUs,
      ...(!agrees && {
        note: `disagree: before ${valid ? 'fits' : 'does not fit'}, after ${errors.length} errors (${errors
          .slice(0, 2)
          .map((e) => `${e.path || '(top)'}: ${e.message}`)
          .join('; ')})`,
      }),
    });
    log(`validation: ${row}: before ${beforeUs.toFixed(2)} us, after ${afterMedian.toFixed(2)} us`);
  }
  return { samples: SAMPLES, sampleMs: SAMPLE_MS, rows };
}

const us = (v: number) => (v >= 100 ? f0(v) : f2(v));

export function validationSection(r: ValidationResult): Section {
  const t = table(
    ['row', 'schema bytes', 'argument bytes', 'fits', 'before us', 'after us', 'after / before', 'note'],
    r.rows.map((x) => [
      x.row,
      f0(x.schemaBytes),
      f0(x.argumentBytes),
      x.valid ? 'yes' : 'no',
      us(x.beforeUs),
      us(x.afterUs),
      pct(x.ratio),
      x.note ?? '',
    ]),
    1,
    ['fits', 'note'],
  );
  return {
    title: `Per-call validation (issue 28): plain Ajv with V8's regular expressions (before) against ArgumentValidators (after); median us per validation of ${r.samples} samples of ${r.sampleMs} ms a side, in one process`,
    ...t,
  };
}
