import type { McpServerRecord, ServiceRecord, ToolRecord } from './records.js';

/** The admin view of a stored tool: its descriptor as stored, with registry metadata. */
export function toolRecordBody(record: ToolRecord) {
  return {
    name: record.name,
    kind: record.kind,
    status: record.status,
    index: record.index,
    createdIndex: record.createdIndex,
    updatedAt: record.updatedAt,
    ...(record.deprecation !== undefined && { deprecation: record.deprecation }),
    ...(record.owner !== undefined && { owner: record.owner }),
    descriptor: record.descriptor,
  };
}

/** The admin view of a stored tool service (it names queues, so only admins see it). */
export function serviceRecordBody(record: ServiceRecord) {
  return {
    id: record.id,
    status: record.status,
    index: record.index,
    createdIndex: record.createdIndex,
    updatedAt: record.updatedAt,
    descriptor: record.descriptor,
  };
}

/**
 * The admin view of a stored MCP server. The credential is never shown: `credential: {set:
 * true}` says there is one (and, sent back in a PUT, keeps it).
 */
export function mcpServerRecordBody(record: McpServerRecord) {
  return {
    id: record.id,
    status: record.status,
    index: record.index,
    createdIndex: record.createdIndex,
    updatedAt: record.updatedAt,
    descriptor: { ...record.descriptor, ...(record.hasCredential && { credential: { set: true as const } }) },
  };
}
