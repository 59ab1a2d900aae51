/**
 * The entity tag of a stored record as admins read it (`GET /tools/{name}`,
 * `GET /tool-services/{id}`), and as `If-Match` on its writes names it: a hash of the record's
 * body, the same on every replica for the same write.
 */
import { createHash } from 'node:crypto';
import { serviceRecordBody, toolRecordBody } from '../model/record-bodies.js';
import type { ServiceRecord, ToolRecord } from '../model/records.js';

/** A record's admin body, as sent, and its strong entity tag. */
export interface RecordRepresentation {
  body: Buffer;
  etag: string;
}

function representationOf(recordBody: unknown): RecordRepresentation {
  const body = Buffer.from(JSON.stringify(recordBody));
  return { body, etag: `"r${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}

/** A tool's stored record. */
export function toolRecordRepresentation(record: ToolRecord): RecordRepresentation {
  return representationOf(toolRecordBody(record));
}

/** A tool service's stored record. */
export function serviceRecordRepresentation(record: ServiceRecord): RecordRepresentation {
  return representationOf(serviceRecordBody(record));
}
