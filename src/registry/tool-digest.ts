/**
 * The digest of what agents are served of a tool (issue 29): SHA-256 of the canonical JSON (keys
 * sorted at every depth) of its name, title, description, input and output schemas and
 * annotations. What an agent's model reads and what its arguments are checked against; never
 * scopes, timeouts or where calls go. The audit names an upstream's writes by it, and pinning
 * an accepted version can compare against it. Pure.
 */
import { createHash } from 'node:crypto';

/** The served fields of a tool; anything else on the value is left out of its digest. */
export interface ServedTool {
  name: string;
  title?: string | undefined;
  description?: string | undefined;
  inputSchema?: unknown;
  outputSchema?: unknown;
  annotations?: unknown;
}

/** `sha256:` and 64 hex digits. */
export function toolDigest(tool: ServedTool): string {
  const { name, title, description, inputSchema, outputSchema, annotations } = tool;
  const served = { name, title, description, inputSchema, outputSchema, annotations };
  return `sha256:${createHash('sha256').update(canonicalJson(served)).digest('hex')}`;
}

/**
 * `sha256:` and 64 hex digits of a whole descriptor (issue 30): for an OpenAPI source's tool,
 * where a re-read document moving calls to another host or path, or opening a tool, is as much a
 * change to review as a new description.
 */
export function descriptorDigest(descriptor: unknown): string {
  return `sha256:${createHash('sha256').update(canonicalJson(descriptor)).digest('hex')}`;
}

/** JSON with every object's keys sorted (undefined members left out, as JSON.stringify does). */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const sorted = Object.create(null) as Record<string, unknown>;
    for (const key of Object.keys(v).sort()) sorted[key] = (v as Record<string, unknown>)[key];
    return sorted;
  });
}
