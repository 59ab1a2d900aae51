/**
 * Pending versions of upstream tools as operators read them (issue 29): what agents would be
 * served, and how it differs from what they are served now. Pure.
 */
import { jsonDiff } from './json-diff.js';
import type { McpTool } from './mcp-schemas.js';

/** The fields of a tool an agent's model reads and its arguments are checked against (what the digest covers, but the name). */
function servedVersion(tool: McpTool): {
  title?: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema?: Record<string, unknown>;
} {
  return {
    ...(tool.title !== undefined && { title: tool.title }),
    description: tool.description,
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema !== undefined && { outputSchema: tool.outputSchema }),
  };
}

/** A pending version as stored, with what the admin API adds to it. */
export interface PendingVersionRow {
  name: string;
  digest: string;
  descriptor: McpTool;
  acceptedDigest: string | null;
  seenAt: string;
  rejectedAt: string | null;
}

/** The answer's entry for a pending version, against `accepted` (the stored tool agents are served, if any). */
export function pendingChangeBody(row: PendingVersionRow, accepted: McpTool | undefined) {
  const proposed = servedVersion(row.descriptor);
  const diff = jsonDiff(accepted ? servedVersion(accepted) : {}, proposed);
  return {
    tool: row.name,
    upstreamName: row.descriptor.upstreamName,
    digest: row.digest,
    acceptedDigest: row.acceptedDigest,
    change: row.acceptedDigest === null ? ('added' as const) : ('changed' as const),
    seenAt: row.seenAt,
    rejectedAt: row.rejectedAt,
    proposed,
    diff: diff.ops,
    diffTruncated: diff.truncated,
  };
}
