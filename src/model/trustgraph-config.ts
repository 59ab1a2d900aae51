/**
 * TrustGraph's config service, as the reference packages define it (trustgraph-base and
 * trustgraph-flow 2.11.1), and the registry's tool services and message-bus tools as its items.
 * Pure: shapes, conversions both ways, and the plan of the requests that keep its config in step.
 *
 * Facts relied on (paths inside the packages):
 * - Items are `(workspace, type, key) -> value`, the value a string; tool services are type
 *   `tool-service` keyed by id, tools type `tool` keyed by name, each value the descriptor's JSON
 *   text (trustgraph/tables/config.py; the specification loads them with
 *   `tg-put-config-item tool-service/<id>` and `tool/<name>`).
 * - ConfigRequest `{operation, workspace, keys: [{type, key}], type, values: [{type, key, value}]}`
 *   and ConfigResponse `{version, values, directory, config, error}` are dataclasses sent as
 *   plain JSON with no Pulsar schema (trustgraph/schema/config.py, base/serialization.py,
 *   base/async_pulsar_backend.py: BytesSchema), correlated by an `id` message property.
 * - The system queue `request:tg:config` (non-persistent://tg/request/config) takes `put`,
 *   `delete`, `getvalues`, `list`, `get` and `config` with the workspace in the body, and answers
 *   on `response:tg:config` (trustgraph/config/service/service.py `on_system_config_request`).
 * - After a put or delete the service pushes `{version, changes: {type: [workspace]}}` naming
 *   only the types the request touched, and a processor that follows pushes fetches only those
 *   types (base/async_processor.py `on_config_notify`). The agent rebuilds its tools from what it
 *   was handed (agent/react/service.py `on_tools_config`): handed `tool` alone, every
 *   message-bus tool names an unknown service and the reload fails; handed `tool-service` alone,
 *   it keeps no tool at all. So every sequence of requests below ends with one that touches both
 *   types (see planConfigWrites).
 * - The CLI's dump (`tg-export-workspace-config`) is `{source_workspace, source_version,
 *   config: {type: {key: value}}}`; `tg-import-workspace-config` reads that or the bare
 *   `{type: {key: value}}`, and writes values as they are (trustgraph-cli 2.11.1).
 */
import { z } from 'zod';
import { RegistryError, type FieldError } from './errors.js';
import type { BusTool, ToolService } from './schemas.js';
import { isObject } from './json-object.js';

export const TOOL_SERVICE_TYPE = 'tool-service';
export const TOOL_TYPE = 'tool';
export type ConfigItemType = typeof TOOL_SERVICE_TYPE | typeof TOOL_TYPE;
const ITEM_TYPES: readonly ConfigItemType[] = [TOOL_SERVICE_TYPE, TOOL_TYPE];

/** The reference's defaults: `queue('config', cls='request')` and the CLI's `TRUSTGRAPH_WORKSPACE`. */
export const DEFAULT_CONFIG_REQUEST_QUEUE = 'request:tg:config';
export const DEFAULT_CONFIG_RESPONSE_QUEUE = 'response:tg:config';
export const DEFAULT_WORKSPACE = 'default';

/**
 * A key no tool or service can have (names and ids take no `:`), deleted beside every real delete
 * for both types so that the push after it names both (see the facts above). Deleting a key that
 * does not exist changes nothing in the config service's store.
 */
export const SYNC_MARKER_KEY = 'tool-registry:sync';

export interface ConfigKey {
  type: string;
  key: string;
}

/** One config item as the config service stores it. */
export interface ConfigItem {
  type: ConfigItemType;
  key: string;
  /** The descriptor's JSON text. */
  value: string;
}

/** A ConfigRequest, with every member the reference's dataclass has. */
export interface ConfigRequest {
  operation: 'put' | 'delete' | 'getvalues' | 'list' | 'get' | 'config';
  workspace: string;
  keys: ConfigKey[];
  type: string;
  values: { type: string; key: string; value: string; workspace: string }[];
}

export const ConfigResponseSchema = z.looseObject({
  version: z.number().optional(),
  values: z.array(z.looseObject({ type: z.string(), key: z.string(), value: z.string() })).optional(),
  directory: z.array(z.string()).optional(),
  error: z.looseObject({ type: z.string().optional(), message: z.string().optional() }).nullable().optional(),
});
export type ConfigResponse = z.infer<typeof ConfigResponseSchema>;

export const serviceItem = (service: ToolService): ConfigItem => ({
  type: TOOL_SERVICE_TYPE,
  key: service.id,
  value: JSON.stringify(service),
});
export const toolItem = (tool: BusTool): ConfigItem => ({ type: TOOL_TYPE, key: tool.name, value: JSON.stringify(tool) });

export function configRequest(
  operation: ConfigRequest['operation'],
  workspace: string,
  members: Partial<Pick<ConfigRequest, 'keys' | 'type'>> & { items?: readonly ConfigItem[] } = {},
): ConfigRequest {
  return {
    operation,
    workspace,
    keys: members.keys ?? [],
    type: members.type ?? '',
    values: (members.items ?? []).map((item) => ({ type: item.type, key: item.key, value: item.value, workspace: '' })),
  };
}

// ---------------------------------------------------------------------------------------------
// The dump: GET /export?format=trustgraph, and POST /import of one

const ItemValuesSchema = z.record(z.string(), z.string());

export const TrustGraphDumpSchema = z
  .strictObject({
    source_workspace: z.string().describe('The workspace the items are for: `TRUSTGRAPH_WORKSPACE`.'),
    source_version: z
      .number()
      .int()
      .describe("The registry index the dump was made at (where TrustGraph's own dump has its config version)."),
    config: z
      .strictObject({
        'tool-service': ItemValuesSchema.describe("Tool service id to the service's JSON text."),
        tool: ItemValuesSchema.describe("Tool name to the message-bus tool's JSON text."),
      })
      .describe("Config type to key to value, as TrustGraph's config service stores them."),
  })
  .meta({
    id: 'TrustGraphConfigDump',
    description:
      "The registry's tool services and message-bus tools as `tool-service` and `tool` items of TrustGraph's config, in the form of `tg-export-workspace-config`. Each value is the descriptor's JSON text.",
  });
export type TrustGraphDump = z.infer<typeof TrustGraphDumpSchema>;

/** The tool services and message-bus tools as a TrustGraph dump, keys in code-unit order. */
export function trustGraphDumpOf(
  services: readonly ToolService[],
  tools: readonly unknown[],
  workspace: string,
  version: number,
): TrustGraphDump {
  const items = (pairs: [string, string][]) => Object.fromEntries(pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  // A message-bus tool's own `type` is `tool-service`, like the config type of services.
  const busTools = tools.filter((t): t is BusTool => isObject(t) && t['type'] === TOOL_SERVICE_TYPE);
  return {
    source_workspace: workspace,
    source_version: version,
    config: {
      'tool-service': items(services.map((s) => [s.id, serviceItem(s).value])),
      tool: items(busTools.map((t) => [t.name, toolItem(t).value])),
    },
  };
}

/** One item of a dump the registry did not take, and why. */
export interface SkippedItem {
  item: string;
  reason: string;
}

/** A dump as an import bundle, with where each bundle item came from in the dump. */
export interface TrustGraphImport {
  bundle: { 'tool-services': unknown[]; tools: unknown[] };
  /** The dump path of each bundle item, so that problems are named as the dump has them. */
  paths: { 'tool-services': string[]; tools: string[] };
  skipped: SkippedItem[];
}

/** Most entries `skipped` lists; the rest are counted in one more. */
const MAX_SKIPPED = 100;

/**
 * The `{type: {key: value}}` items of a body in TrustGraph's form, with their path, or undefined
 * when the body is a registry bundle. The forms cannot be confused: a bundle has `tool-services`
 * and `tools`, a TrustGraph dump `config` (`tg-export-workspace-config`) or `tool-service` and
 * `tool` (the bare form `tg-import-workspace-config` also reads).
 */
export function trustGraphItemsOf(body: unknown): { items: Record<string, unknown>; prefix: string[] } | undefined {
  if (!isObject(body) || Object.hasOwn(body, 'tools') || Object.hasOwn(body, 'tool-services')) return undefined;
  const config = body['config'];
  if (isObject(config)) return { items: config, prefix: ['config'] };
  if (Object.hasOwn(body, TOOL_TYPE) || Object.hasOwn(body, TOOL_SERVICE_TYPE)) return { items: body, prefix: [] };
  return undefined;
}

/**
 * A dump's `tool-service` and `tool` items as an import bundle. Values are JSON text (as stored)
 * or, for hand-written dumps, objects. A descriptor without its `id` or `name` takes the key; one
 * that names another is refused. Tools of kinds the registry does not hold (`knowledge-query`,
 * `prompt`, `mcp-tool`, ...) and other config types are skipped, and listed. Throws a
 * TR_ERR_VALIDATION with every problem. An item longer than `maxItem` (what a write of it alone
 * may send) is refused as a bundle's item is (src/http/sliced-json.ts).
 */
export function importOfTrustGraph(
  items: Record<string, unknown>,
  prefix: readonly string[],
  maxDepth: number,
  maxItem?: ItemLimit,
): TrustGraphImport {
  const out: TrustGraphImport = { bundle: { 'tool-services': [], tools: [] }, paths: { 'tool-services': [], tools: [] }, skipped: [] };
  const errors: FieldError[] = [];
  const skip = (item: string, reason: string) => {
    if (out.skipped.length < MAX_SKIPPED) out.skipped.push({ item, reason });
  };
  let skippedCount = 0;
  for (const [type, values] of Object.entries(items)) {
    if (type === 'source_workspace' || type === 'source_version') continue;
    if (!ITEM_TYPES.includes(type as ConfigItemType)) {
      const n = isObject(values) ? Object.keys(values).length : 0;
      skippedCount += 1;
      skip(type, `config type "${type}" (${n} item(s)): the registry holds only tool-service and tool items`);
      continue;
    }
    const typePath = [...prefix, type];
    if (!isObject(values)) {
      errors.push({ path: typePath.join('.'), message: 'must be an object of key to value' });
      continue;
    }
    for (const [key, raw] of Object.entries(values)) {
      const path = [...typePath, key];
      const descriptor = itemValue(raw, maxDepth, maxItem);
      if (typeof descriptor === 'string') {
        errors.push({ path: path.join('.'), message: descriptor });
        continue;
      }
      const own = type === TOOL_SERVICE_TYPE ? 'id' : 'name';
      if (type === TOOL_TYPE && descriptor['type'] !== TOOL_SERVICE_TYPE) {
        skippedCount += 1;
        skip(
          `${type}/${key}`,
          `a ${JSON.stringify(descriptor['type'] ?? null)} tool: the registry holds only "tool-service" tools of TrustGraph's kinds`,
        );
        continue;
      }
      if (descriptor[own] === undefined) descriptor[own] = key;
      else if (descriptor[own] !== key) {
        errors.push({ path: [...path, own].join('.'), message: `must equal the config key "${key}"` });
        continue;
      }
      const list = type === TOOL_SERVICE_TYPE ? 'tool-services' : 'tools';
      out.bundle[list].push(descriptor);
      out.paths[list].push(path.join('.'));
    }
  }
  if (skippedCount > out.skipped.length) out.skipped.push({ item: '...', reason: `and ${skippedCount - out.skipped.length} more skipped` });
  if (errors.length > 0) {
    const first = errors[0] as FieldError;
    throw new RegistryError(
      'TR_ERR_VALIDATION',
      `invalid TrustGraph config dump: ${errors.length} problem(s), first ${first.path}: ${first.message}`,
      {
        fieldErrors: errors.slice(0, 100),
      },
    );
  }
  return out;
}

/** Problems an import of the bundle found, with paths into the dump it was made from. */
export function inDumpTerms(errors: readonly FieldError[], paths: TrustGraphImport['paths']): FieldError[] {
  return errors.map((error) => {
    const match = /^(tool-services|tools)\.(\d+)(?=\.|$)/.exec(error.path);
    const at = match ? paths[match[1] as 'tools' | 'tool-services'][Number(match[2])] : undefined;
    return match && at !== undefined ? { ...error, path: at + error.path.slice(match[0].length) } : error;
  });
}

/** The most characters of JSON one item may take, and the setting that says so. */
export interface ItemLimit {
  bytes: number;
  setting: string;
}

/** A descriptor from a dump's value: parsed JSON text or an object as given; a string says why not. */
function itemValue(raw: unknown, maxDepth: number, maxItem: ItemLimit | undefined): Record<string, unknown> | string {
  if (maxItem !== undefined && (typeof raw === 'string' || isObject(raw))) {
    const length = typeof raw === 'string' ? raw.length : JSON.stringify(raw).length;
    if (length > maxItem.bytes)
      return `is ${length} characters of JSON, more than the ${maxItem.bytes} one item may take (${maxItem.setting})`;
  }
  if (isObject(raw)) return { ...raw };
  if (typeof raw !== 'string') return "must be the descriptor's JSON text";
  let parsed: unknown;
  try {
    // Without a reviver: JSON.parse is iterative, a reviver recursive (20,000 nested arrays
    // overflowed the stack, and the item was refused as "not JSON text: Maximum call stack size
    // exceeded"). Depth and `__proto__` keys are looked at after, without recursion either.
    parsed = JSON.parse(raw);
  } catch (err) {
    return `is not JSON text: ${(err as Error).message}`;
  }
  if (!isObject(parsed)) return 'must be the JSON text of an object';
  const shape = shapeOf(parsed);
  if (shape.depth > maxDepth) return `nests objects and arrays more than ${maxDepth} deep`;
  if (shape.protoKey) return 'has a "__proto__" key, which is not accepted';
  return parsed;
}

/** How deep a parsed value nests, and whether any object in it has an own `__proto__` key. */
function shapeOf(value: unknown): { depth: number; protoKey: boolean } {
  let depth = 0;
  const stack: [unknown, number][] = [[value, 1]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [node, level] = next;
    if (typeof node !== 'object' || node === null) continue;
    if (!Array.isArray(node) && Object.hasOwn(node, '__proto__')) return { depth, protoKey: true };
    depth = Math.max(depth, level);
    for (const child of Object.values(node)) stack.push([child, level + 1]);
  }
  return { depth, protoKey: false };
}

// ---------------------------------------------------------------------------------------------
// Keeping TrustGraph's config in step (src/trustgraph/config-sync.ts sends the requests)

export interface ConfigWrites {
  /** Items to write, in order. */
  puts: readonly ConfigItem[];
  /** Keys to delete. */
  deletes: readonly ConfigKey[];
  /**
   * A live item of each type, written again beside puts that lack that type, so that the push
   * after each put names both types. Absent when the registry holds none of the type.
   */
  anchors: Partial<Record<ConfigItemType, ConfigItem>>;
  workspace: string;
  /** The most bytes of JSON one request may take (one message on the bus). */
  maxRequestBytes: number;
}

export interface ConfigWritePlan {
  requests: ConfigRequest[];
  /** Items too large for one request: they cannot be sent. */
  tooLarge: ConfigItem[];
}

const utf8Bytes = (text: string): number => new TextEncoder().encode(text).length;

/**
 * The requests that write `puts` and remove `deletes`: puts first, in chunks that each fit one
 * message and carry an item of both types where the registry has one (anchors), then one
 * `delete` per chunk of keys, each with the marker key of both types. A `delete` of the marker
 * keys alone ends the plan when a put lacked a type: either way the last push names both types,
 * and agents that follow pushes reload the two kinds together.
 */
export function planConfigWrites(writes: ConfigWrites): ConfigWritePlan {
  const { workspace, maxRequestBytes, anchors } = writes;
  const requests: ConfigRequest[] = [];
  const tooLarge: ConfigItem[] = [];
  const envelope = (request: ConfigRequest) => utf8Bytes(JSON.stringify(request));
  const itemBytes = (item: ConfigItem) =>
    utf8Bytes(JSON.stringify({ type: item.type, key: item.key, value: item.value, workspace: '' })) + 1;
  const markers: ConfigKey[] = ITEM_TYPES.map((type) => ({ type, key: SYNC_MARKER_KEY }));
  let lacksType = false;

  const base = envelope(configRequest('put', workspace));
  let chunk: ConfigItem[] = [];
  let bytes = base;
  const flush = () => {
    if (chunk.length === 0) return;
    const items = [...chunk];
    let size = bytes;
    for (const type of ITEM_TYPES) {
      const anchor = anchors[type];
      if (items.some((i) => i.type === type)) continue;
      if (anchor && size + itemBytes(anchor) <= maxRequestBytes) {
        items.push(anchor);
        size += itemBytes(anchor);
      } else lacksType = true;
    }
    requests.push(configRequest('put', workspace, { items }));
    chunk = [];
    bytes = base;
  };
  // Room kept in every chunk for the anchors.
  const anchorRoom = ITEM_TYPES.reduce((n, type) => n + (anchors[type] ? itemBytes(anchors[type]) : 0), 0);
  for (const item of writes.puts) {
    const size = itemBytes(item);
    if (base + size > maxRequestBytes) {
      tooLarge.push(item);
      continue;
    }
    if (bytes + size + anchorRoom > maxRequestBytes) flush();
    chunk.push(item);
    bytes += size;
  }
  flush();

  const deleteBase = envelope(configRequest('delete', workspace, { keys: markers }));
  let keys: ConfigKey[] = [];
  let keyBytes = deleteBase;
  for (const key of writes.deletes) {
    const size = utf8Bytes(JSON.stringify(key)) + 1;
    if (keys.length > 0 && keyBytes + size > maxRequestBytes) {
      requests.push(configRequest('delete', workspace, { keys: [...keys, ...markers] }));
      keys = [];
      keyBytes = deleteBase;
    }
    keys.push(key);
    keyBytes += size;
  }
  if (keys.length > 0 || lacksType) requests.push(configRequest('delete', workspace, { keys: [...keys, ...markers] }));
  return { requests, tooLarge };
}
