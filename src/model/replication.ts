/**
 * Replicated mode's wire shape (src/replication/): one message on the replication topic per
 * registry write, JSON, keyed `kind/name` so that a compacted reader keeps the latest write of
 * each descriptor. Every replica applies the topic in order with the same validation, so a write
 * carries what its HTTP caller sent (not a decided record): the topic's order decides conflicts.
 * Version 1: a message that is not a version-1 write is skipped, the same way on every replica.
 */
import { z } from 'zod';

export const REPLICATION_OPS = [
  'tool.put',
  'tool.delete',
  'tool-service.put',
  'tool-service.delete',
  'mcp-server.put',
  'mcp-server.delete',
  'mcp-server.sync',
  'import',
  /** A replica's "where is the end?": it has caught up once it reads its own marker back. */
  'marker',
] as const;

export type ReplicationOp = (typeof REPLICATION_OPS)[number];

export const ReplicationEventSchema = z.object({
  v: z.literal(1),
  op: z.enum(REPLICATION_OPS),
  /** The write's id: how the replica that published it finds its waiting caller. */
  write: z.string().min(1).max(100),
  /** The replica that published it (REPLICA_ID). */
  origin: z.string().min(1).max(200),
  /** The writer's clock; every replica stamps the write with it (never before the last stamp). */
  at: z.iso.datetime(),
  /** The name or id from the URL path (PUT, DELETE, a sync's server), when there is one. */
  target: z.string().max(1000).optional(),
  /** What the caller sent (a descriptor, a server, a bundle). */
  body: z.unknown().optional(),
  /** Who owns what the write makes: the announcer (src/announce/), absent for an operator. */
  owner: z.string().min(1).max(300).optional(),
  /** mcp-server.sync: the server record's index the tools were listed at. */
  serverIndex: z.number().int().nonnegative().optional(),
});

export type ReplicationEvent = z.infer<typeof ReplicationEventSchema>;

/** The message key: `tool/<name>`, `tool-service/<id>`, `mcp-server/<id>`, `import/<write>`, `marker/<replica>`. */
export function replicationKey(event: ReplicationEvent): string {
  switch (event.op) {
    case 'tool.put':
    case 'tool.delete':
      return `tool/${event.target ?? nameOf(event.body) ?? event.write}`;
    case 'tool-service.put':
    case 'tool-service.delete':
      return `tool-service/${event.target ?? idOf(event.body) ?? event.write}`;
    case 'mcp-server.put':
    case 'mcp-server.delete':
    case 'mcp-server.sync':
      return `mcp-server/${event.target ?? idOf(event.body) ?? event.write}`;
    case 'import':
      return `import/${event.write}`;
    case 'marker':
      return `marker/${event.origin}`;
  }
}

const stringMember = (body: unknown, key: string): string | undefined => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const value = (body as Record<string, unknown>)[key];
  return typeof value === 'string' ? value : undefined;
};
const nameOf = (body: unknown) => stringMember(body, 'name');
const idOf = (body: unknown) => stringMember(body, 'id');
