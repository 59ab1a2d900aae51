/**
 * One zod schema per wire shape (house style 4). Types are inferred beside each schema so that
 * validation and types never drift. Cross-kind rules (a tool's service exists, its config values
 * fit the service) live in resolve.ts because they need the catalogue.
 */
import { z } from 'zod';
import { escapeInvisible, invisibleCharacterMessage } from './invisible-characters.js';
import type { McpTool } from './mcp-schemas.js';

/** Valid as a function name for every model vendor's function calling. */
const TOOL_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * Names become keys of JSON objects (parameters, /stats figures), and a `__proto__` key is
 * refused in every request body (src/http/json-body.ts), so no name may be `__proto__`. Other
 * names of Object.prototype members (`constructor`, `toString`) are fine: nothing indexes a
 * plain object with a name.
 */
export const notProto = (value: string) => value !== '__proto__';
export const NOT_PROTO = { message: 'must not be "__proto__"' };

/**
 * Control characters would reach operators' terminals (the CLI, pretty logs) and agents'
 * prompts raw, where an escape sequence can rewrite the screen and a carriage return overwrite
 * a line. One rule for every free-form string a descriptor carries, whether a text field
 * (descriptions, `returns`, config values) or any string inside a free-form JSON value
 * (parameter `enum`, `default` and `items`, the agent hints), object keys included: no C0
 * control character but tab and line feed, which text uses for layout (carriage return is
 * refused: a line ends with a line feed alone), no DEL and no C1. Nor the Unicode line and
 * paragraph separators (U+2028, U+2029: they break lines where a reader, a log viewer or a
 * script embedding the text in JavaScript sees none), nor the bidirectional embeddings,
 * overrides and isolates (U+202A-U+202E, U+2066-U+2069), which make text display in an order
 * other than the one a model reads ("Trojan Source"); the left-to-right and right-to-left marks,
 * which right-to-left text needs, stay allowed. Nor any character a screen does not show but a
 * model reads (issue 29: tag characters, zero-width characters, private use, unassigned; the list
 * and its exceptions are in invisible-characters.ts), refused with a message naming the code
 * point. Names, ids, scopes, hosts, endpoints and topics have ASCII-only patterns already.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NO_CONTROL_BUT_NL_TAB = /^[^\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]*$/;
// eslint-disable-next-line no-control-regex -- the same set, to find one
const CONTROL_CHARACTER = /[\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;
const CONTROL_MESSAGE = 'must not contain control characters or bidirectional formatting characters';

/**
 * The invisible-character half of the rule, for a string field: one issue naming the first. A
 * refinement with its message made only on failure: a `superRefine` here made parseCheckedTool
 * of 10,000 of the bench's descriptors (bench/data.ts) some 30% slower; this costs 0 to 5% on
 * them, and 10 to 15% on descriptors written in Japanese.
 */
const showsEverything = (value: string) => invisibleCharacterMessage(value) === undefined;
const INVISIBLE_ERROR = { error: (issue: { input: unknown }) => invisibleCharacterMessage(String(issue.input)) };

/**
 * Free-form text of at most `max` characters, under the rule above. The control characters stay
 * a `pattern`, which the OpenAPI document shows; the invisible ones are a refinement, as the
 * joiner inside an emoji and the message naming the code point need code.
 */
export const text = (max: number) => z.string().max(max).regex(NO_CONTROL_BUT_NL_TAB, CONTROL_MESSAGE).refine(showsEverything, INVISIBLE_ERROR);

/**
 * The rule above for one string or key: the issues it raises at `path`, none when it keeps it.
 * A refused key is named in the path with its control characters JSON-escaped and its invisible
 * ones as `\uXXXX`, so that the error shows what the key holds.
 */
function refuseInString(value: string, path: PropertyKey[], ctx: z.RefinementCtx, isKey: boolean): PropertyKey[] {
  const control = CONTROL_CHARACTER.test(value);
  const invisible = invisibleCharacterMessage(value);
  if (!control && invisible === undefined) return path;
  const at = isKey ? [...path.slice(0, -1), escapeInvisible(control ? JSON.stringify(value).slice(1, -1) : value)] : path;
  const what = isKey ? 'key ' : '';
  if (control) ctx.addIssue({ code: 'custom', path: at, message: `${what}${CONTROL_MESSAGE}` });
  if (invisible !== undefined) ctx.addIssue({ code: 'custom', path: at, message: `${what}${invisible}` });
  return at;
}

/**
 * The rule above for every string inside a JSON value, keys included, one issue per string
 * (and kind of character) with its path. Iterative, so that no nesting the body parser lets
 * through can overflow it.
 */
function refuseUnsafeCharacters(value: unknown, ctx: z.RefinementCtx): void {
  const stack: [unknown, PropertyKey[]][] = [[value, []]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [node, path] = next;
    if (typeof node === 'string') {
      refuseInString(node, path, ctx, false);
    } else if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push([node[i], [...path, i]]);
    } else if (typeof node === 'object' && node !== null) {
      const entries = Object.entries(node);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i] as [string, unknown];
        stack.push([child, refuseInString(key, [...path, key], ctx, true)]);
      }
    }
  }
}

/** A free-form JSON value (enum values, defaults, item schemas, agent hints), under the rule above. */
const jsonText = () => z.json().superRefine(refuseUnsafeCharacters);

export const ToolNameSchema = z
  .string()
  .regex(TOOL_NAME_PATTERN, 'must be 1 to 64 characters of letters, digits, "_" or "-"')
  .refine(notProto, NOT_PROTO);

/** Tool-service ids appear in URL paths and config keys; kept to a safe alphabet. */
export const ServiceIdSchema = z
  .string()
  .regex(/^[a-zA-Z0-9_][a-zA-Z0-9_.-]{0,127}$/, 'must be 1 to 128 characters of letters, digits, "_", "." or "-"')
  .refine(notProto, NOT_PROTO);

/** RFC 6749 section 3.3 scope-token: printable ASCII except space, `"` and `\`. */
export const ScopeSchema = z
  .string()
  .min(1, 'must not be empty')
  .max(200, 'must be at most 200 characters')
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]*$/, 'must be an OAuth scope token (printable ASCII, no spaces or quotes)')
  .refine(notProto, NOT_PROTO);

/** Pulsar tenant, namespace and local topic names, as the broker's NamedEntity allows. */
const PULSAR_NAME = '[a-zA-Z0-9_.=:%-]+';
const PULSAR_TOPIC_PATTERN = new RegExp(`^(persistent|non-persistent)://${PULSAR_NAME}/${PULSAR_NAME}/${PULSAR_NAME}$`);

export const PulsarTopicSchema = z
  .string()
  .max(1024)
  .regex(PULSAR_TOPIC_PATTERN, 'must be a Pulsar topic name such as non-persistent://tg/request/joke');

/**
 * The reference's queue ids, `class:topicspace:topic` (`request:tg:joke`), mapped to topics the
 * way its Pulsar backend maps them (trustgraph-base 2.11.1, base/async_pulsar_backend.py
 * `_map_topic`): class `flow` is persistent, `request`, `response` and `notify` non-persistent;
 * the topicspace is the tenant, the class the namespace; the topic keeps any further `:`.
 * Undefined for anything else.
 */
export function topicOfQueueId(id: string): string | undefined {
  const match = /^(flow|request|response|notify):([^:]+):(.+)$/.exec(id);
  if (!match) return undefined;
  const [, cls, topicspace, topic] = match as unknown as [string, string, string, string];
  const name = `${cls === 'flow' ? 'persistent' : 'non-persistent'}://${topicspace}/${cls}/${topic}`;
  return PULSAR_TOPIC_PATTERN.test(name) ? name : undefined;
}

/** A queue as a descriptor may give it: a Pulsar topic name or a queue id, always kept as the topic. */
export const PulsarQueueSchema = z
  .string()
  .max(1024)
  .transform((value, ctx) => {
    const topic = value.includes('://') ? (PULSAR_TOPIC_PATTERN.test(value) ? value : undefined) : topicOfQueueId(value);
    if (topic === undefined) {
      ctx.addIssue({ code: 'custom', message: 'must be a Pulsar topic name such as non-persistent://tg/request/joke, or a queue id such as request:tg:joke' });
      return z.NEVER;
    }
    return topic;
  });

/** The short `topic` form's local name. */
export const TopicLocalNameSchema = z
  .string()
  .regex(/^[a-zA-Z0-9_.=:%-]{1,200}$/, 'must be a Pulsar local topic name (no "/")');

export const JsonTypeSchema = z.enum(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
export type JsonType = z.infer<typeof JsonTypeSchema>;

export const DescriptionSchema = text(8192).min(1, 'must not be empty');

/**
 * A JSON Schema whose top is `type: "object"`: a tool's arguments or structured answer, kept
 * as given, under the control-character rule and without `__proto__` keys. Whether it is a
 * valid schema (issue 12) is checked with Ajv by the write side (src/json-schema), since this
 * room imports nothing but zod.
 */
export const ObjectJsonSchema = z
  .looseObject({ type: z.literal('object') })
  .superRefine(refuseUnsafeCharacters)
  .superRefine((value, ctx) => {
    // Parsed JSON may carry an own `__proto__` key; nothing downstream should meet one.
    const stack: unknown[] = [value];
    for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
      if (typeof node !== 'object' || node === null) continue;
      if (!Array.isArray(node) && Object.hasOwn(node, '__proto__')) {
        ctx.addIssue({ code: 'custom', message: 'must not have a "__proto__" key' });
        return;
      }
      // One at a time: spread into push, an array of 300,000 items overflowed the stack (a 500).
      for (const child of Object.values(node)) stack.push(child);
    }
  });

// ---------------------------------------------------------------------------------------------
// Tool service (tier 1)

export const ConfigParamSchema = z.strictObject({
  /** The config key a tool must or may supply. */
  name: z.string().regex(/^[a-zA-Z0-9_][a-zA-Z0-9_-]{0,63}$/, 'must be a config key of letters, digits, "_" or "-"').refine(notProto, NOT_PROTO),
  /** Whether every tool on the service must give a value. */
  required: z.boolean().default(false),
});
/** @public */
export type ConfigParam = z.infer<typeof ConfigParamSchema>;

/** The stored, normalised tool-service descriptor: always the full queue form. */
export const ToolServiceSchema = z.strictObject({
  /** The service's id, referenced by tools' `service` field. */
  id: ServiceIdSchema,
  /** Topic the registry publishes requests to. */
  'request-queue': PulsarTopicSchema,
  /** Topic the service publishes responses on, correlated by the `id` message property. */
  'response-queue': PulsarTopicSchema,
  /** Config values that tools on this service supply. */
  'config-params': z.array(ConfigParamSchema),
});
export type ToolService = z.infer<typeof ToolServiceSchema>;

/**
 * What operators send: either the full queue form or the short `topic` form, and config params
 * as `{name, required}` objects or bare strings (meaning not required).
 */
export const ToolServiceInputSchema = z
  .strictObject({
    id: ServiceIdSchema,
    /** Short form: expands to non-persistent://tg/request/{topic} and .../response/{topic}. */
    topic: TopicLocalNameSchema.optional(),
    /** A topic name, or a queue id (`request:tg:joke`) stored as the topic it names. */
    'request-queue': PulsarQueueSchema.optional(),
    'response-queue': PulsarQueueSchema.optional(),
    'config-params': z
      .array(z.union([ConfigParamSchema.shape.name, ConfigParamSchema]))
      .max(64)
      .default([]),
  })
  .superRefine((value, ctx) => {
    const hasQueues = value['request-queue'] !== undefined || value['response-queue'] !== undefined;
    if (value.topic !== undefined && hasQueues) {
      ctx.addIssue({ code: 'custom', path: ['topic'], message: 'give either "topic" or the two queues, not both' });
    } else if (value.topic === undefined) {
      for (const key of ['request-queue', 'response-queue'] as const) {
        if (value[key] === undefined) {
          ctx.addIssue({ code: 'custom', path: [key], message: 'is required (or give the short "topic" form)' });
        }
      }
    }
    const seen = new Set<string>();
    value['config-params'].forEach((param, i) => {
      const name = typeof param === 'string' ? param : param.name;
      if (seen.has(name)) ctx.addIssue({ code: 'custom', path: ['config-params', i], message: `duplicate config param "${name}"` });
      if (RESERVED_TOOL_KEYS.has(name)) {
        ctx.addIssue({ code: 'custom', path: ['config-params', i], message: `"${name}" is a tool field and cannot be a config param` });
      }
      seen.add(name);
    });
  })
  .transform(
    (value): ToolService => ({
      id: value.id,
      'request-queue': value['request-queue'] ?? `non-persistent://tg/request/${value.topic ?? ''}`,
      'response-queue': value['response-queue'] ?? `non-persistent://tg/response/${value.topic ?? ''}`,
      'config-params': value['config-params'].map((p) => (typeof p === 'string' ? { name: p, required: false } : p)),
    }),
  );
/** @public */
export type ToolServiceInput = z.input<typeof ToolServiceInputSchema>;

// ---------------------------------------------------------------------------------------------
// Message-bus tool (tier 2)

export const ArgumentSchema = z.strictObject({
  /** The argument's name as the model sees it. */
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1 to 64 characters of letters, digits, "_" or "-"').refine(notProto, NOT_PROTO),
  /** JSON Schema type of the value. */
  type: JsonTypeSchema,
  /** What the model should put here. */
  description: DescriptionSchema,
  /** Whether the model must give it; defaults to true. */
  required: z.boolean().optional(),
});
/** @public */
export type Argument = z.infer<typeof ArgumentSchema>;

/** The most JSON an object or list config value may take. */
const CONFIG_VALUE_MAX_JSON = 64 * 1024;

/**
 * A config value a tool gives for one of its service's config params: any JSON value, as the
 * reference agent passes `data[param]` on as it is (trustgraph-flow 2.11.1,
 * agent/react/service.py `on_tools_config`), so objects and lists reach the service inside the
 * request's `config` JSON text. A string is text of at most 8192 characters; an object or list
 * at most CONFIG_VALUE_MAX_JSON of JSON.
 */
export const ConfigValueSchema = jsonText().superRefine((value, ctx) => {
  if (typeof value === 'string' && value.length > 8192) ctx.addIssue({ code: 'custom', message: 'a config value string must be at most 8192 characters' });
  if (typeof value === 'object' && value !== null && JSON.stringify(value).length > CONFIG_VALUE_MAX_JSON) {
    ctx.addIssue({ code: 'custom', message: `an object or list config value must be at most ${CONFIG_VALUE_MAX_JSON} characters of JSON` });
  }
});
/** @public */
export type ConfigValue = z.infer<typeof ConfigValueSchema>;

/**
 * The agent hints have the types the reference agent checks before it takes a tool set
 * (trustgraph-flow 2.11.1, agent/tool_filter.py `validate_tool_config`): `group` and
 * `applicable-states` lists of strings, `state` a string. One of another type makes the agent
 * refuse its whole tool reload, so the registry refuses it here, naming the field.
 */
const AGENT_REFUSES = 'the reference agent refuses the whole tool set otherwise';
const hintName = () =>
  z
    .string({ error: `must be a string (${AGENT_REFUSES})` })
    .max(200)
    .regex(NO_CONTROL_BUT_NL_TAB, CONTROL_MESSAGE)
    .refine(showsEverything, INVISIBLE_ERROR);
const hintNames = () => z.array(hintName(), { error: `must be a list of strings (${AGENT_REFUSES})` }).max(64);

/** Fields of a message-bus tool other than its config values. */
export const BusToolFieldsSchema = z.object({
  type: z.literal('tool-service'),
  /** Unique across every kind of tool. */
  name: ToolNameSchema,
  description: DescriptionSchema,
  /** The id of the tool service that carries the call. */
  service: ServiceIdSchema,
  /** What the model passes: the input schema discovery serves, which calls are checked against. */
  arguments: z.array(ArgumentSchema).max(256).default([]),
  /** A JSON Schema of the service's answer when it is a JSON object (MCP's `structuredContent`). */
  outputSchema: ObjectJsonSchema.optional(),
  /** OAuth scopes any one of which grants the tool; none means every caller. */
  scopes: z.array(ScopeSchema).max(64).default([]),
  /** How long a call may wait for its answer. */
  timeoutMs: z.number().int().min(1).max(600_000).optional(),
  /** The agent's tool groups: a request for one of them offers the tool (default `["default"]`). */
  group: hintNames().optional(),
  /** The agent's state after a successful call of the tool. */
  state: hintName().optional(),
  /** The agent states in which the tool is offered (`"*"`: all; default `["*"]`). */
  'applicable-states': hintNames().optional(),
});

export const BUS_TOOL_FIELDS: ReadonlySet<string> = new Set(Object.keys(BusToolFieldsSchema.shape));

/** Keys a config param may not take, so that config values cannot shadow tool fields. */
const RESERVED_TOOL_KEYS: ReadonlySet<string> = new Set([...BUS_TOOL_FIELDS, 'config', 'kind', 'status', 'index']);

/**
 * The message-bus tool as sent: known fields plus one top-level key per config value. Which
 * extra keys are allowed depends on the service, so resolve.ts finishes the check.
 */
export const BusToolInputSchema = BusToolFieldsSchema.catchall(z.unknown().superRefine(refuseUnsafeCharacters)).superRefine((value, ctx) => {
  const seen = new Set<string>();
  value.arguments.forEach((arg, i) => {
    if (seen.has(arg.name)) ctx.addIssue({ code: 'custom', path: ['arguments', i, 'name'], message: `duplicate argument "${arg.name}"` });
    seen.add(arg.name);
  });
});
/** @public */
export type BusToolInput = z.infer<typeof BusToolInputSchema>;

/** The stored message-bus tool: fields plus validated config values, in the wire form. */
export type BusTool = z.infer<typeof BusToolFieldsSchema> & { [configKey: string]: unknown };

// ---------------------------------------------------------------------------------------------
// HTTP tool (the discovery article's form)

export const ParameterSchema = z.strictObject({
  /** JSON Schema type of the value. */
  type: JsonTypeSchema,
  description: DescriptionSchema.optional(),
  /** Whether the model must give it; defaults to true. */
  required: z.boolean().optional(),
  /** Allowed values. */
  enum: z.array(jsonText()).optional(),
  /** Item schema of an array parameter: JSON Schema, checked as part of the input schema (issue 12). */
  items: z.record(z.string(), z.json()).superRefine(refuseUnsafeCharacters).optional(),
  /** The value the tool takes when the model gives none. */
  default: jsonText().optional(),
});
/** @public */
export type Parameter = z.infer<typeof ParameterSchema>;

export const HttpToolSchema = z
  .strictObject({
    /** Optional marker; a tool without `type: "tool-service"` is an HTTP tool. */
    type: z.literal('http').optional(),
    name: ToolNameSchema,
    /** Path on the tool's host that takes a POST of the arguments. */
    endpoint: z
      .string()
      .max(2048)
      .regex(/^\/[\x21-\x7E]*$/, 'must be an absolute path starting with "/"'),
    /** OAuth scopes any one of which grants the tool; none means every caller. */
    scopes: z.array(ScopeSchema).max(64).default([]),
    description: DescriptionSchema,
    /** Parameter name to its JSON Schema type and description (or give `inputSchema`); default `{}`. */
    parameters: z
      .record(
        z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'parameter names must be 1 to 64 letters, digits, "_" or "-"').refine(notProto, NOT_PROTO),
        ParameterSchema,
      )
      .optional(),
    /** The arguments as a full JSON Schema (draft 2020-12), instead of `parameters`. */
    inputSchema: ObjectJsonSchema.optional(),
    /** A JSON Schema of the tool's answer when it is a JSON object (MCP's `structuredContent`). */
    outputSchema: ObjectJsonSchema.optional(),
    /** What the tool gives back, in words. */
    returns: text(8192).default(''),
    host: z
      .string()
      .regex(/^(\[[0-9a-fA-F:.]+\]|[a-zA-Z0-9]([a-zA-Z0-9.-]{0,251}[a-zA-Z0-9])?)$/, 'must be a host name or IP address')
      .default('localhost'),
    port: z.number().int().min(1).max(65535).default(8002),
    /** How long a call may wait for its answer. */
    timeoutMs: z.number().int().min(1).max(600_000).optional(),
    /** Forward the caller's Authorization header to the tool (the article's tools check it). */
    forwardAuthorization: z.boolean().default(true),
  })
  .transform((value, ctx) => {
    if (value.parameters !== undefined && value.inputSchema !== undefined) {
      for (const path of ['parameters', 'inputSchema']) {
        ctx.addIssue({ code: 'custom', path: [path], message: 'give either "parameters" or "inputSchema", not both' });
      }
      return z.NEVER;
    }
    // Drop the optional marker so the stored form is the article's shape; a tool without an
    // `inputSchema` has `parameters`, `{}` by default, so that an export imports again as is.
    const { type: _type, ...rest } = value;
    return rest.inputSchema === undefined ? { ...rest, parameters: rest.parameters ?? {} } : rest;
  });
export type HttpTool = z.output<typeof HttpToolSchema>;

/** `mcp`: a tool of an upstream MCP server (src/model/mcp-schemas.ts), written by the registry's sync only. */
export type ToolKind = 'http' | 'tool-service' | 'mcp';
export type ToolDescriptor = HttpTool | BusTool | McpTool;

// ---------------------------------------------------------------------------------------------
// Bulk import / export

export const ImportBundleSchema = z.strictObject({
  'tool-services': z.array(z.unknown()).max(200_000).default([]),
  tools: z.array(z.unknown()).max(200_000).default([]),
});
/** @public */
export type ImportBundle = z.infer<typeof ImportBundleSchema>;
