/**
 * The entity tag of a tool's stored record as admins read it (`GET /tools/{name}`), and as
 * `If-Match` on its writes names it: a hash of the record's body, the same on every replica
 * for the same write.
 */
import { createHash } from 'node:crypto';
import { toolRecordBody } from '../model/record-bodies.js';
import type { ToolRecord } from '../model/records.js';

/** The record's admin body, as sent, and its strong entity tag. */
export function toolRecordRepresentation(record: ToolRecord): { body: Buffer; etag: string } {
  const body = Buffer.from(JSON.stringify(toolRecordBody(record)));
  return { body, etag: `"r${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"` };
}
