/**
 * The replication topic's policy, through Pulsar's admin REST API (on the host and port of the
 * WebSocket API unless PULSAR_ADMIN_URL says otherwise): the topic is created if missing and
 * keeps every message (retention without a time or size limit), since replicas read it whole
 * (see src/replication/topic.ts for why not compacted). Best effort: a broker that refuses (no
 * admin API there, no permission) is logged once, and replication runs with the namespace's
 * policy, which docs/replicas.md tells operators to set.
 */
import { topicPath } from '../pulsar/wire.js';

export interface AdminOptions {
  adminUrl: string;
  token?: string | undefined;
  topic: string;
  timeoutMs: number;
}

/** The admin API's base URL for a WebSocket URL on the same host and port. */
export function adminUrlOf(wsUrl: string): string {
  const url = new URL(wsUrl);
  url.protocol = url.protocol === 'wss:' ? 'https:' : 'http:';
  url.pathname = '';
  return url.href.replace(/\/+$/, '');
}

async function call(options: AdminOptions, method: string, path: string, body?: unknown): Promise<number> {
  const res = await fetch(`${options.adminUrl.replace(/\/+$/, '')}/admin/v2/${path}`, {
    method,
    headers: {
      ...(body !== undefined && { 'content-type': 'application/json' }),
      ...(options.token !== undefined && { authorization: `Bearer ${options.token}` }),
    },
    ...(body !== undefined && { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
  await res.arrayBuffer();
  return res.status;
}

/** Creates the topic (a 409 means it exists) and sets its retention; returns what failed, if anything. */
export async function ensureTopic(options: AdminOptions): Promise<string | undefined> {
  if (!options.topic.startsWith('persistent://')) return 'the replication topic must be persistent://';
  const path = topicPath(options.topic);
  try {
    const created = await call(options, 'PUT', path);
    if (created !== 204 && created !== 409) return `creating ${options.topic} answered HTTP ${created}`;
    const retention = await call(options, 'POST', `${path}/retention`, { retentionTimeInMinutes: -1, retentionSizeInMB: -1 });
    if (retention !== 204) return `setting the retention of ${options.topic} answered HTTP ${retention}`;
    return undefined;
  } catch (err) {
    return `the admin API at ${options.adminUrl} did not answer: ${(err as Error).message}`;
  }
}
