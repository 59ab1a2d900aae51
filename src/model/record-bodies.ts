import type { ServiceRecord, ToolRecord } from './records.js';

/** The admin view of a stored tool: its descriptor as stored, with registry metadata. */
export function toolRecordBody(record: ToolRecord) {
  return {
    name: record.name,
    kind: record.kind,
    status: record.status,
    index: record.index,
    createdIndex: record.createIndex,
    updatedAt: record.updatedAt,
    descriptor: record.descriptor,
  };
}

/** The admin view of a stored tool service (it names queues, so only admins see it). */
export function serviceRecordBody(record: ServiceRecord) {
  return {
    id: record.id,
    status: record.status,
    index: record.index,
    createdIndex: record.createIndex,
    updatedAt: record.updatedAt,
    descriptor: record.descriptor,
  };
}
