/**
 * One zod schema per wire shape (house style 4). Types are inferred beside each schema so that
 * validation and types never drift. Cross-kind rules (a tool's service exists, its config values
 * fit the service) live in resolve.ts because they need the catalogue.
 */
import { z } from 'zod';
import {
  CONTROL_MESSAGE,
  INVISIBLE_ERROR,
  NO_CONTROL_BUT_NL_TAB,
  jsonText,
  raiseUnsafe,
  refuseUnsafeCharacters,
  showsEverything,
  text,
  unsafeStrings,
} from './text-checks.js';
import type { McpTool } from './mcp-schemas.js';
import { HttpTargetSchema, pathPlaceholders, TARGET_ARGUMENTS_MAX, type HttpTarget } from './http-target.js';
import { MAX_TOKENS_PER_ENTRY, normaliseEntry } from './scope-rule.js';

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

/**
 * One alternative of a tool's `scopes` (issue 30, src/model/scope-rule.ts): a scope token, or
 * several separated by single spaces, all of which are needed; also accepted as an array of
 * tokens. Stored in canonical form (tokens sorted and de-duplicated, joined by one space).
 */
export const ScopeEntrySchema = z
  .union([
    z
      .string()
      .max(16 * 201, 'must be at most 16 scope tokens')
      .refine((s) => s.split(' ').every((t) => t.length > 0), 'must be scope tokens separated by single spaces')
      .transform((s) => s.split(' ')),
    z.array(z.string()),
  ])
  .pipe(z.array(ScopeSchema).min(1, 'must name at least one scope token').max(MAX_TOKENS_PER_ENTRY, 'must be at most 16 scope tokens'))
  .transform((tokens) => normaliseEntry(tokens))
  // Piped into a plain string so that the stored form (the answers' schema) can be documented.
  .pipe(z.string());

/** A tool's `scopes`: alternatives, any one of which grants the tool; entries de-duplicated in order. */
export const ScopesSchema = z
  .array(ScopeEntrySchema)
  .max(64)
  .transform((entries) => [...new Set(entries)])
  .pipe(z.array(z.string()));

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
      ctx.addIssue({
        code: 'custom',
        message: 'must be a Pulsar topic name such as non-persistent://tg/request/joke, or a queue id such as request:tg:joke',
      });
      return z.NEVER;
    }
    return topic;
  });

/** The short `topic` form's local name. */
export const TopicLocalNameSchema = z.string().regex(/^[a-zA-Z0-9_.=:%-]{1,200}$/, 'must be a Pulsar local topic name (no "/")');

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
  name: z
    .string()
    .regex(/^[a-zA-Z0-9_][a-zA-Z0-9_-]{0,63}$/, 'must be a config key of letters, digits, "_" or "-"')
    .refine(notProto, NOT_PROTO),
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
 * as `{name, required}` objects or bare strings (meaning not required). `id` is the id's schema:
 * required, or optional where a PUT's path gives it.
 */
export function toolServiceInput<Id extends z.ZodType<string | undefined>>(id: Id, meta?: z.GlobalMeta) {
  const object = z.strictObject({
    id,
    /** Short form: expands to non-persistent://tg/request/{topic} and .../response/{topic}. */
    topic: TopicLocalNameSchema.optional(),
    /** A topic name, or a queue id (`request:tg:joke`) stored as the topic it names. */
    'request-queue': PulsarQueueSchema.optional(),
    'response-queue': PulsarQueueSchema.optional(),
    'config-params': z
      .array(z.union([ConfigParamSchema.shape.name, ConfigParamSchema]))
      .max(64)
      .default([]),
  });
  return (meta ? object.meta(meta) : object)
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
    .transform(({ topic, 'request-queue': request, 'response-queue': response, 'config-params': params, ...id }) => ({
      // The id alone is left, first: the stored key order (ToolService) is the export's.
      ...id,
      'request-queue': request ?? `non-persistent://tg/request/${topic ?? ''}`,
      'response-queue': response ?? `non-persistent://tg/response/${topic ?? ''}`,
      'config-params': params.map((p): ConfigParam => (typeof p === 'string' ? { name: p, required: false } : p)),
    }));
}

// ---------------------------------------------------------------------------------------------
// Message-bus tool (tier 2)

export const ArgumentSchema = z.strictObject({
  /** The argument's name as the model sees it. */
  name: z
    .string()
    .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'must be 1 to 64 characters of letters, digits, "_" or "-"')
    .refine(notProto, NOT_PROTO),
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
  if (typeof value === 'string' && value.length > 8192)
    ctx.addIssue({ code: 'custom', message: 'a config value string must be at most 8192 characters' });
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
  /** Scope entries any one of which grants the tool, each needing all its tokens (ScopesSchema); none means every caller. */
  scopes: ScopesSchema.default([]),
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
 * Every config value under one cap, before the tool is parsed, as httpToolBoundsFirst does
 * for parameters: 60,000 config keys each holding a bidi control (1 MiB) raised an issue
 * each, 0.4 to 0.6 s of the event loop. Below the cap this raises nothing.
 */
function refuseUnsafeConfigValuesFirst(value: unknown, ctx: z.RefinementCtx): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const roots: [unknown, PropertyKey[]][] = [];
  for (const [key, child] of Object.entries(value)) if (!BUS_TOOL_FIELDS.has(key)) roots.push([child, [key]]);
  const found = unsafeStrings(roots);
  if (found.more) raiseUnsafe(found, ctx);
  return value;
}

/** Argument names are unique: a message-bus tool's arguments become one input schema's properties. */
function refuseDuplicateArguments(value: { arguments: readonly Argument[] }, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  value.arguments.forEach((arg, i) => {
    if (seen.has(arg.name)) ctx.addIssue({ code: 'custom', path: ['arguments', i, 'name'], message: `duplicate argument "${arg.name}"` });
    seen.add(arg.name);
  });
}

/**
 * The message-bus tool as sent: known fields plus one top-level key per config value, each a
 * ConfigValue. Which extra keys are allowed depends on the service, so resolve.ts finishes the
 * check against the catalogue. `name` is the name's schema: required, or optional where a
 * PUT's path gives it.
 */
export function busToolInput<Name extends z.ZodType<string | undefined>>(name: Name, meta?: z.GlobalMeta) {
  const object = BusToolFieldsSchema.extend({ name }).catchall(ConfigValueSchema);
  return (meta ? object.meta(meta) : object).superRefine(refuseDuplicateArguments);
}
/** A message-bus tool as sent, with its name. */
export const BusToolInputSchema = busToolInput(ToolNameSchema);
/** @public */
export type BusToolInput = z.output<typeof BusToolInputSchema>;

/** The stored message-bus tool: fields plus validated config values, in the wire form. */
export type BusTool = z.infer<typeof BusToolFieldsSchema> & { [configKey: string]: unknown };

// ---------------------------------------------------------------------------------------------
// HTTP tool (the discovery article's form)

/**
 * The input schema made from `parameters` is held to 64 KiB of JSON (src/json-schema/check.ts
 * MAX_SCHEMA_BYTES), where an enum value takes at least 2 bytes (`0,`) and a parameter at least
 * 20 (`"a":{"type":"null"},`): no more could pass that check. These bounds apply before any of
 * them is parsed (httpToolBoundsFirst): 1 MiB of 60,000 parameters each with a bad type took 0.6 s.
 */
const ENUM_MAX_VALUES = 32 * 1024;
const PARAMETERS_MAX = 4 * 1024;

export const ParameterSchema = z.strictObject({
  /** JSON Schema type of the value. */
  type: JsonTypeSchema,
  description: DescriptionSchema.optional(),
  /** Whether the model must give it; defaults to true. */
  required: z.boolean().optional(),
  /**
   * Allowed values: checked for unsafe characters as one value, so that its issues are capped
   * together; at most ENUM_MAX_VALUES of them, counted first (httpToolBoundsFirst).
   */
  enum: z.array(z.json()).max(ENUM_MAX_VALUES).superRefine(refuseUnsafeCharacters).optional(),
  /** Item schema of an array parameter: JSON Schema, checked as part of the input schema (issue 12). */
  items: z.record(z.string(), z.json()).superRefine(refuseUnsafeCharacters).optional(),
  /** The value the tool takes when the model gives none. */
  default: jsonText().optional(),
});
/** @public */
export type Parameter = z.infer<typeof ParameterSchema>;

/** Optional marker; a tool without `type: "tool-service"` is an HTTP tool. */
const HTTP_MARKER = z.literal('http').optional();

/** An HTTP tool's fields after its marker and name (httpToolInput adds the name's schema). */
const HTTP_TOOL_FIELDS = {
  /** Path on the tool's host that takes a POST of the arguments as JSON (the article's form; or give `target`). */
  endpoint: z
    .string()
    .max(2048)
    .regex(/^\/[\x21-\x7E]*$/, 'must be an absolute path starting with "/"')
    .optional(),
  /** Scope entries any one of which grants the tool, each needing all its tokens (ScopesSchema); none means every caller. */
  scopes: ScopesSchema.default([]),
  description: DescriptionSchema,
  /** Parameter name to its JSON Schema type and description (or give `inputSchema`); default `{}`. */
  parameters: z
    .record(
      z
        .string()
        .regex(/^[a-zA-Z0-9_-]{1,64}$/, 'parameter names must be 1 to 64 letters, digits, "_" or "-"')
        .refine(notProto, NOT_PROTO),
      ParameterSchema,
    )
    .optional(),
  /** The arguments as a full JSON Schema (draft 2020-12), instead of `parameters`. */
  inputSchema: ObjectJsonSchema.optional(),
  /** A JSON Schema of the tool's answer when it is a JSON object (MCP's `structuredContent`). */
  outputSchema: ObjectJsonSchema.optional(),
  /** What the tool gives back, in words. */
  returns: text(8192).default(''),
  /** The tool's host, with `endpoint` (default `localhost`). */
  host: z
    .string()
    .regex(/^(\[[0-9a-fA-F:.]+\]|[a-zA-Z0-9]([a-zA-Z0-9.-]{0,251}[a-zA-Z0-9])?)$/, 'must be a host name or IP address')
    .optional(),
  /** Its port, with `endpoint` (default `8002`). */
  port: z.number().int().min(1).max(65535).optional(),
  /** A full target instead of `host`, `port` and `endpoint`: base URL (https or http), method, path template and where each argument goes. */
  target: HttpTargetSchema.optional(),
  /** How long a call may wait for its answer. */
  timeoutMs: z.number().int().min(1).max(600_000).optional(),
  /**
   * Forward the caller's Authorization header to the tool's host: only when an operator says so
   * (issue 30), since the token's audience is the registry, not the tool. Tools stored before
   * issue 30 were stored with the old default, `true`, written out, and keep it.
   */
  forwardAuthorization: z.boolean().default(false),
};

/**
 * The stored form of an HTTP tool as sent: `parameters` and `inputSchema` not both, the optional
 * `type` marker dropped so the stored form is the article's shape, and `parameters` (`{}` by
 * default) on a tool without an `inputSchema`, so that an export imports again as is.
 */
function finishHttpTool<T extends { type?: 'http' | undefined; parameters?: unknown; inputSchema?: unknown }>(
  value: T,
  ctx: z.RefinementCtx,
) {
  if (value.parameters !== undefined && value.inputSchema !== undefined) {
    for (const path of ['parameters', 'inputSchema']) {
      ctx.addIssue({ code: 'custom', path: [path], message: 'give either "parameters" or "inputSchema", not both' });
    }
    return z.NEVER;
  }
  const fields = value as unknown as HttpToolFields;
  if (!pathArgumentsRequired(fields, ctx)) return z.NEVER;
  const { type: _type, ...given } = value;
  // The article's form keeps its defaults where zod's `.default` put them before issue 30, so
  // that its stored bytes (and ETags) are what every version wrote for the same body.
  let rest = given;
  if (fields.target === undefined) {
    const ordered: Record<string, unknown> = { name: fields.name };
    for (const key of Object.keys(HTTP_TOOL_FIELDS)) {
      const field =
        key === 'host' ? (fields.host ?? 'localhost') : key === 'port' ? (fields.port ?? 8002) : fields[key as keyof HttpToolFields];
      if (field !== undefined) ordered[key] = field;
    }
    rest = ordered as typeof given;
  }
  return rest.inputSchema === undefined ? { ...rest, parameters: rest.parameters ?? {} } : rest;
}

type HttpToolFields = { name?: string | undefined } & {
  [K in keyof typeof HTTP_TOOL_FIELDS]: z.output<(typeof HTTP_TOOL_FIELDS)[K]>;
};

/**
 * Either the article's `endpoint` (with `host` and `port`) or a `target`, not both. Run on the
 * value as sent even when other fields fail (`when`), so that a body missing its endpoint hears
 * so together with its other problems, as when `endpoint` was a required field.
 */
function locatedOnce(value: Record<string, unknown>, ctx: z.RefinementCtx): void {
  if (value['target'] === undefined) {
    if (value['endpoint'] === undefined)
      ctx.addIssue({ code: 'custom', path: ['endpoint'], message: 'is required (or give "target": {baseUrl, method, path})' });
    return;
  }
  for (const key of ['endpoint', 'host', 'port'])
    if (value[key] !== undefined)
      ctx.addIssue({ code: 'custom', path: [key], message: 'give either "target" or "host", "port" and "endpoint", not both' });
}

/** Every argument a target's path needs is one the tool requires, so that no call leaves a hole in it. */
function pathArgumentsRequired(value: HttpToolFields, ctx: z.RefinementCtx): boolean {
  const { target } = value;
  if (target === undefined) return true;
  let ok = true;
  for (const name of pathArgumentsOf(target)) {
    if (requiresArgument(value, name)) continue;
    ctx.addIssue({
      code: 'custom',
      path: ['target', 'path'],
      message: `{${name}} must be filled by a required argument "${name}" of the tool's parameters or inputSchema`,
    });
    ok = false;
  }
  return ok;
}

/** The arguments a target's path template takes, by argument name. */
function pathArgumentsOf(target: HttpTarget): string[] {
  const renamed = new Map<string, string>();
  for (const [argument, placement] of Object.entries(target.arguments ?? {}))
    if (placement.in === 'path') renamed.set(placement.name ?? argument, argument);
  return (pathPlaceholders(target.path) ?? []).map((name) => renamed.get(name) ?? name);
}

function requiresArgument(value: HttpToolFields, name: string): boolean {
  if (value.inputSchema !== undefined) {
    const { properties, required } = value.inputSchema as { properties?: unknown; required?: unknown };
    return isRecord(properties) && Object.hasOwn(properties, name) && Array.isArray(required) && required.includes(name);
  }
  const parameters = value.parameters ?? {};
  return Object.hasOwn(parameters, name) && parameters[name]?.required !== false;
}

/**
 * An HTTP tool as sent. `name` is the name's schema: required, or optional where a PUT's path
 * gives it. Its `parameters` are bounded before any is parsed: parse it through toolBoundsFirst
 * (as the tool bodies of descriptors.ts do).
 */
export function httpToolInput<Name extends z.ZodType<string | undefined>>(name: Name, meta?: z.GlobalMeta) {
  const object = z.strictObject({ type: HTTP_MARKER, name, ...HTTP_TOOL_FIELDS });
  return (meta ? object.meta(meta) : object)
    .superRefine(locatedOnce, { when: (payload) => isRecord(payload.value) })
    .transform(finishHttpTool);
}
export const HttpToolSchema = httpToolInput(ToolNameSchema);
export type HttpTool = z.output<typeof HttpToolSchema>;

/** The stored HTTP tool's fields, for the document's answer shapes (no checks across fields: what is stored passed them). */
export const StoredHttpToolFieldsSchema = z.strictObject({ name: ToolNameSchema, ...HTTP_TOOL_FIELDS });

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The bounds of an HTTP tool's `parameters`, checked before any parameter is parsed (zod's own
 * `.max` runs after the items): at most PARAMETERS_MAX of them, each `enum` at most
 * ENUM_MAX_VALUES, and the free-form parts of all of them (`enum`, `items`, `default`) under one
 * cap of unsafe strings. Each part is capped on its own too, but 4096 parameters with 25 bad enum
 * values each (1.1 MiB) raised 102,400 issues, 1.3 to 1.5 s of the event loop. Within the
 * bounds this raises nothing, and the parameters' own checks name each problem as they would.
 */
function httpToolBoundsFirst(value: unknown, ctx: z.RefinementCtx): unknown {
  // A target's placements, counted before any is parsed, like the parameters below.
  const target = isRecord(value) ? value['target'] : undefined;
  const placements = isRecord(target) ? target['arguments'] : undefined;
  if (isRecord(placements) && Object.keys(placements).length > TARGET_ARGUMENTS_MAX) {
    ctx.addIssue({ code: 'custom', path: ['target', 'arguments'], message: `must have at most ${TARGET_ARGUMENTS_MAX} entries` });
    return value;
  }
  const parameters = isRecord(value) ? value['parameters'] : undefined;
  if (!isRecord(parameters)) return value;
  const entries = Object.entries(parameters);
  if (entries.length > PARAMETERS_MAX) {
    ctx.addIssue({ code: 'custom', path: ['parameters'], message: `must have at most ${PARAMETERS_MAX} entries` });
    return value;
  }
  const roots: [unknown, PropertyKey[]][] = [];
  let tooMany = false;
  for (const [name, parameter] of entries) {
    if (!isRecord(parameter)) continue;
    const values = parameter['enum'];
    if (Array.isArray(values) && values.length > ENUM_MAX_VALUES) {
      ctx.addIssue({ code: 'custom', path: ['parameters', name, 'enum'], message: `must have at most ${ENUM_MAX_VALUES} values` });
      tooMany = true;
    }
    for (const field of ['enum', 'items', 'default'])
      if (Object.hasOwn(parameter, field)) roots.push([parameter[field], ['parameters', name, field]]);
  }
  if (tooMany) return value;
  const found = unsafeStrings(roots);
  if (found.more) raiseUnsafe(found, ctx, ['parameters']);
  return value;
}

/**
 * The bounds of a tool as sent, checked before any field is parsed: an HTTP tool's parameters
 * (httpToolBoundsFirst), a message-bus tool's config values (refuseUnsafeConfigValuesFirst).
 */
export function toolBoundsFirst(value: unknown, ctx: z.RefinementCtx): unknown {
  return isRecord(value) && value['type'] === 'tool-service' ? refuseUnsafeConfigValuesFirst(value, ctx) : httpToolBoundsFirst(value, ctx);
}

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

/**
 * The address of an upstream (an MCP server, an OpenAPI document or API): http or https only,
 * without userinfo (a credential has its own field) or fragment.
 */
export const UpstreamUrlSchema = z
  .string()
  .max(2048)
  // The URL parser drops tabs and line feeds rather than refusing them: refused here first.
  .regex(/^[\x21-\x7E]+$/, 'must be a URL of printable ASCII characters')
  .pipe(z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }))
  .refine((value) => {
    // zod runs this after a failed URL check too (format issues do not stop the checks after
    // them): a value that is no URL has its issue already, and `new URL` would throw (a 500).
    if (!URL.canParse(value)) return true;
    const url = new URL(value);
    return url.username === '' && url.password === '' && url.hash === '';
  }, 'must not carry a user, password or fragment (give a credential as "credential")');
