/**
 * Parsing descriptors off the wire and checking them across kinds: a message-bus tool's service
 * must exist, its required config values must be given, and any other top-level key is a typo.
 * Plain functions: the service lookup is passed in.
 */
import { type z } from 'zod';
import { RegistryError, type FieldError } from './errors.js';
import {
  BUS_TOOL_FIELDS,
  BusToolInputSchema,
  ConfigValueSchema,
  HttpToolParseSchema,
  ToolServiceInputSchema,
  type BusTool,
  type HttpTool,
  type ToolKind,
  type ToolService,
} from './schemas.js';

export type ParsedTool =
  | { kind: 'http'; name: string; descriptor: HttpTool; serviceId: null }
  | { kind: 'tool-service'; name: string; descriptor: BusTool; serviceId: string };

export type ServiceLookup = (id: string) => ToolService | undefined;

/** Turns zod issues into field errors with dotted paths under `prefix`. */
export function fieldErrorsFrom(error: z.ZodError, prefix: readonly PropertyKey[] = []): FieldError[] {
  return error.issues.flatMap((issue) => {
    const at = (...more: PropertyKey[]) => [...prefix, ...issue.path, ...more].map(String).join('.');
    // One error per unknown key, at its own path, as a bus tool's unknown config key gets.
    if (issue.code === 'unrecognized_keys') return issue.keys.map((key) => ({ path: at(key), message: `unknown field "${key}"` }));
    return [{ path: at(), message: issue.message }];
  });
}

/**
 * The most field errors one problem lists, as an import's does; its detail counts the rest. A
 * descriptor with 115,000 bad entries (1 MiB) was answered with 12 MB of them.
 */
export const MAX_FIELD_ERRORS = 100;

/** A `TR_ERR_VALIDATION` naming the first problem, with the first MAX_FIELD_ERRORS as field errors. */
export function validationError(what: string, errors: FieldError[]): RegistryError {
  const first = errors[0];
  const summary = first ? `${first.path === '' ? '(body)' : first.path}: ${first.message}` : 'invalid';
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : '';
  return new RegistryError('TR_ERR_VALIDATION', `invalid ${what}: ${summary}${more}`, { fieldErrors: errors.slice(0, MAX_FIELD_ERRORS) });
}

function requireObject(input: unknown, what: string, prefix: readonly PropertyKey[]): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw validationError(what, [{ path: prefix.map(String).join('.'), message: 'must be a JSON object' }]);
  }
  return input as Record<string, unknown>;
}

export function parseToolService(input: unknown, prefix: readonly PropertyKey[] = []): ToolService {
  requireObject(input, 'tool service', prefix);
  const result = ToolServiceInputSchema.safeParse(input);
  if (!result.success) throw validationError('tool service', fieldErrorsFrom(result.error, prefix));
  return result.data;
}

function toolKindOf(input: Record<string, unknown>): ToolKind {
  return input['type'] === 'tool-service' ? 'tool-service' : 'http';
}

/**
 * Parses either tool form. A message-bus tool is checked against its service: the service must
 * exist, required config values must be present, and every top-level key that is not a known
 * field must be one of the service's config params.
 */
export function parseTool(input: unknown, lookupService: ServiceLookup, prefix: readonly PropertyKey[] = []): ParsedTool {
  const object = requireObject(input, 'tool', prefix);
  if (toolKindOf(object) === 'http') {
    const result = HttpToolParseSchema.safeParse(object);
    if (!result.success) throw validationError('HTTP tool', fieldErrorsFrom(result.error, prefix));
    return { kind: 'http', name: result.data.name, descriptor: result.data, serviceId: null };
  }

  const result = BusToolInputSchema.safeParse(object);
  if (!result.success) throw validationError('message-bus tool', fieldErrorsFrom(result.error, prefix));
  const tool = result.data;
  const path = (...p: PropertyKey[]) => [...prefix, ...p].map(String).join('.');
  const service = lookupService(tool.service);
  if (!service) {
    throw validationError('message-bus tool', [{ path: path('service'), message: `unknown tool service "${tool.service}"` }]);
  }

  const errors: FieldError[] = [];
  const params = new Map(service['config-params'].map((p) => [p.name, p]));
  const descriptor: BusTool = { ...tool };
  for (const [key, value] of Object.entries(tool)) {
    if (BUS_TOOL_FIELDS.has(key)) continue;
    if (!params.has(key)) {
      const known = [...params.keys()];
      errors.push({
        path: path(key),
        message: `unknown field "${key}": not a tool field nor a config param of service "${service.id}"${
          known.length ? ` (its config params: ${known.join(', ')})` : ' (it takes no config params)'
        }`,
      });
      continue;
    }
    // Any JSON value, passed through as the reference agent does; only its size is bounded.
    const checked = ConfigValueSchema.safeParse(value);
    if (!checked.success) errors.push(...fieldErrorsFrom(checked.error, [...prefix, key]));
  }
  for (const param of service['config-params']) {
    // Own keys only: a param named like an Object.prototype member must still be given.
    if (param.required && !Object.hasOwn(tool, param.name)) {
      errors.push({ path: path(param.name), message: `required by service "${service.id}" but missing` });
    }
  }
  if (errors.length > 0) throw validationError('message-bus tool', errors);
  return { kind: 'tool-service', name: tool.name, descriptor, serviceId: service.id };
}

/** The config values of a stored message-bus tool, as its service names them. */
export function configValuesOf(tool: BusTool, service: ToolService): Record<string, unknown> {
  // Keyed by config-param names: no prototype for a name to reach.
  const config = Object.create(null) as Record<string, unknown>;
  for (const param of service['config-params']) {
    if (Object.hasOwn(tool, param.name)) config[param.name] = tool[param.name];
  }
  return config;
}
