/**
 * `tool-registry review <server>` (issue 29) and `review openapi-source/<id>` (issue 30): the
 * pending changes of an upstream MCP server or of an OpenAPI source's re-reads, each with its
 * digest and its diff, and `--accept` / `--reject` of them by tool (and digest), over
 * GET .../pending and POST .../accept and .../reject.
 */
import { UsageError } from './usage-error.js';

export interface ReviewClient {
  request(method: string, path: string, body?: unknown): Promise<unknown>;
}

interface PendingChange {
  tool: string;
  digest: string;
  acceptedDigest: string | null;
  change: string;
  diff: { op: string; pointer: string; old?: unknown; new?: unknown }[];
  diffTruncated: boolean;
}

interface PendingPage {
  changes: PendingChange[];
  next: string | null;
}

export interface ReviewRequest {
  server: string;
  accept: readonly string[];
  reject: readonly string[];
  acceptAll: boolean;
}

/** Most pages `--accept-all` reads (500 changes a page). */
const MAX_PAGES = 100;

/** `name@sha256:...`, or a name alone (the version pending now). */
function parseChoice(text: string): { tool: string; digest: string | undefined } {
  const at = text.indexOf('@');
  if (at === -1) return { tool: text, digest: undefined };
  const digest = text.slice(at + 1);
  if (!/^sha256:[0-9a-f]{64}$/.test(digest)) throw new UsageError(`${text}: give a change as <tool> or <tool>@sha256:<64 hex digits>`);
  return { tool: text.slice(0, at), digest };
}

/** Whose queue: `openapi-source/<id>` (issue 30), or an MCP server by `mcp-server/<id>` or its id alone. */
function queueOf(target: string): { base: string; label: string } {
  const source = /^openapi-source\/(.+)$/.exec(target)?.[1];
  if (source !== undefined) return { base: `/openapi-sources/${encodeURIComponent(source)}`, label: `OpenAPI source "${source}"` };
  const server = target.replace(/^mcp-server\//, '');
  return { base: `/mcp-servers/${encodeURIComponent(server)}`, label: `MCP server "${server}"` };
}

async function everyChange(client: ReviewClient, base: string): Promise<PendingChange[]> {
  const changes: PendingChange[] = [];
  let after = '';
  for (let page = 0; page < MAX_PAGES; page++) {
    const query = new URLSearchParams({ limit: '500', ...(after !== '' && { after }) });
    const got = (await client.request('GET', `${base}/pending?${query.toString()}`)) as PendingPage;
    changes.push(...got.changes);
    if (got.next === null) break;
    after = got.next;
  }
  return changes;
}

/** A value in a diff line: strings as they are, anything else as one line of JSON, bounded. */
function shown(value: unknown, safe: (text: string) => string): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined');
  return safe(text.length > 2000 ? `${text.slice(0, 2000)}...` : text);
}

/** The queue as text: one line per change (`tool@digest`, ready to pass to --accept), then its diff. */
function describe(changes: readonly PendingChange[], safe: (text: string) => string): string {
  if (changes.length === 0) return 'nothing is pending\n';
  const lines: string[] = [];
  for (const c of changes) {
    lines.push(`${safe(c.tool)}@${c.digest}\t${c.change}${c.acceptedDigest ? `\t(agents are served ${c.acceptedDigest})` : ''}`);
    for (const op of c.diff) {
      lines.push(`  ${op.op} ${safe(op.pointer || '/')}`);
      if ('old' in op) lines.push(`    - ${shown(op.old, safe)}`);
      if ('new' in op) lines.push(`    + ${shown(op.new, safe)}`);
    }
    if (c.diffTruncated) lines.push('  ... (more differences than the diff lists)');
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Lists the queue, or accepts and rejects from it. A change named without a digest is the
 * version pending now (read first); with one, exactly that version (the registry refuses it,
 * 409, if it moved meanwhile).
 */
export async function runReview(
  client: ReviewClient,
  request: ReviewRequest,
  out: (text: string) => void,
  safe: (text: string) => string,
): Promise<number> {
  const { base, label } = queueOf(request.server);
  const choices = { accept: request.accept.map(parseChoice), reject: request.reject.map(parseChoice) };
  if (!request.acceptAll && choices.accept.length === 0 && choices.reject.length === 0) {
    out(describe(await everyChange(client, base), safe));
    return 0;
  }
  const needsQueue = request.acceptAll || [...choices.accept, ...choices.reject].some((c) => c.digest === undefined);
  const queue = needsQueue ? new Map((await everyChange(client, base)).map((c) => [c.tool, c.digest])) : new Map<string, string>();
  const resolved = (list: { tool: string; digest: string | undefined }[]) =>
    list.map(({ tool, digest }) => {
      const found = digest ?? queue.get(tool);
      if (found === undefined) throw new Error(`no change of "${safe(tool)}" is pending on ${safe(label)}`);
      return { tool, digest: found };
    });
  const accept = request.acceptAll ? [...queue].map(([tool, digest]) => ({ tool, digest })) : resolved(choices.accept);
  const reject = resolved(choices.reject);
  for (const [verb, changes] of [
    ['accept', accept],
    ['reject', reject],
  ] as const) {
    if (changes.length === 0) continue;
    for (let start = 0; start < changes.length; start += 1000) {
      const done = (await client.request('POST', `${base}/${verb}`, { changes: changes.slice(start, start + 1000) })) as PendingPage;
      for (const c of done.changes) out(`${verb}ed ${safe(c.tool)}@${c.digest}\n`);
    }
  }
  if (accept.length === 0 && reject.length === 0) out('nothing is pending\n');
  return 0;
}
