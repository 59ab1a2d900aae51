/**
 * Checking parsed descriptors across kinds (descriptors.ts parses them): a message-bus tool's
 * service must exist, its required config values must be given, and any other top-level key is
 * a typo. Plain functions: the service lookup is passed in. And the wording of every refusal of
 * a body: field errors with dotted paths, at most MAX_FIELD_ERRORS of them.
 */
import { type z } from 'zod';
import { RegistryError, type FieldError } from './errors.js';
import { BUS_TOOL_FIELDS, type BusTool, type HttpTool, type ToolService } from './schemas.js';

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

/**
 * Either tool form, parsed (descriptors.ts), checked against the catalogue: a message-bus tool's
 * service must exist, its required config values must be present, and every top-level key that
 * is not a known field must be one of the service's config params. Stored descriptors pass
 * again when their service is replaced (WriteCommands.toolsBrokenBy).
 */
export function resolveTool(tool: HttpTool | BusTool, lookupService: ServiceLookup, prefix: readonly PropertyKey[] = []): ParsedTool {
  if (!isBusTool(tool)) return { kind: 'http', name: tool.name, descriptor: tool, serviceId: null };
  const path = (...p: PropertyKey[]) => [...prefix, ...p].map(String).join('.');
  const service = lookupService(tool.service);
  if (!service) {
    throw validationError('message-bus tool', [{ path: path('service'), message: `unknown tool service "${tool.service}"` }]);
  }

  const errors: FieldError[] = [];
  const params = new Set(service['config-params'].map((p) => p.name));
  for (const key of Object.keys(tool)) {
    if (BUS_TOOL_FIELDS.has(key) || params.has(key)) continue;
    const known = [...params];
    errors.push({
      path: path(key),
      message: `unknown field "${key}": not a tool field nor a config param of service "${service.id}"${
        known.length ? ` (its config params: ${known.join(', ')})` : ' (it takes no config params)'
      }`,
    });
  }
  for (const param of service['config-params']) {
    // Own keys only: a param named like an Object.prototype member must still be given.
    if (param.required && !Object.hasOwn(tool, param.name)) {
      errors.push({ path: path(param.name), message: `required by service "${service.id}" but missing` });
    }
  }
  if (errors.length > 0) throw validationError('message-bus tool', errors);
  return { kind: 'tool-service', name: tool.name, descriptor: tool, serviceId: service.id };
}

/** A message-bus tool names its service; an HTTP tool has no such field. */
function isBusTool(tool: HttpTool | BusTool): tool is BusTool {
  return 'service' in tool;
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
