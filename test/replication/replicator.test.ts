/**
 * The Replicator (src/replication/replicator.ts) over an in-process topic (fake-topic.ts): an
 * import bigger than one message goes in parts and is answered at its last, with its index, on
 * every replica the same; an MCP server's credential travels sealed and opens on every replica
 * with the key; a replica with another key applies none of it; a credential sealed with a key a
 * replica does not hold, in a message it can authenticate, stops it. What is refused for its MAC
 * or stamp: issue-29-message-auth.test.ts. The real broker: test/bus/replication*.broker.test.ts.
 */
import { createSecretKey, randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { RegistryError } from '../../src/model/errors.js';
import { indexOf } from '../../src/replication/message-id.js';
import { sealCredential } from '../../src/replication/credential-seal.js';
import { KEY, POLLING, Replicas } from './running.js';
import { bundle, type TestReplica } from './support.js';
import { parseToolPutBody } from '../../src/json-schema/tool-schemas.js';
import { parseMcpServerBody } from '../../src/model/descriptors.js';

const BEARER = 'upstream-bearer-0123456789abcdef';

const replicas = new Replicas();
afterEach(() => replicas.close());
let topic = replicas.topic;
const startTopic = async () => (topic = await replicas.startTopic());
const start = replicas.start.bind(replicas);

const lastIndex = () => indexOf(topic.entries.at(-1)!.messageId);
const view = (r: TestReplica) => r.catalog.view({ kind: 'all' });

describe('the replicator', () => {
  it('sends an import bigger than one message in parts, answers at the last with its index, and every replica applies it the same', async () => {
    await startTopic();
    const a = await start('a', { maxMessageBytes: 16 * 1024 });
    const b = await start('b', { maxMessageBytes: 16 * 1024 });
    const input = bundle(400);
    const summary = await a.replicator.importBundle(input, { sub: 'operator', iss: null, client: '127.0.0.1', requestId: 'r-1' });
    const parts = topic.events().filter((e) => e['op'] === 'import.part');
    expect(parts.length).toBeGreaterThan(5);
    for (const entry of topic.entries) expect(Buffer.byteLength(entry.text)).toBeLessThanOrEqual(16 * 1024);
    expect(new Set(topic.entries.filter((e) => e.text.includes('"import.part"')).map((e) => e.key)).size).toBe(1);
    // Answered at the last part: its position is the import's index.
    expect(summary).toEqual({ index: lastIndex(), toolServices: { created: 1, replaced: 0 }, tools: { created: 401, replaced: 0 } });
    expect(a.catalog.index).toBe(summary.index);
    await vi.waitUntil(() => b.catalog.index === summary.index, POLLING);
    expect(view(b).etag).toBe(view(a).etag);
    expect(Buffer.compare(view(a).body, view(b).body)).toBe(0);
    for (const r of [a, b]) expect(r.stagedRows()).toEqual([]);
    // The audit entry where it was taken, one for the whole import.
    expect(a.audit.list({ limit: 10 }).map((e) => [e.action, e.detail])).toEqual([['import', '1 tool service(s), 401 tool(s)']]);
    expect(b.audit.list({ limit: 10 })).toEqual([]);
    // A new replica reads it all from the start.
    const c = await start('c', { maxMessageBytes: 16 * 1024 });
    expect(c.catalog.index).toBe(a.catalog.index);
    expect(view(c).body.toString()).toBe(view(a).body.toString());
    expect(view(c).etag).toBe(view(a).etag);

    // A small import still goes as one message.
    const before = topic.entries.length;
    await a.replicator.importBundle({ 'tool-services': [], tools: [] });
    expect(
      topic
        .events()
        .slice(before)
        .map((e) => e['op']),
    ).toEqual(['import']);
  });

  it('answers a refused import with the refusal of its parts, and the broker refusing a part for its size with 413', async () => {
    await startTopic();
    const a = await start('a', { maxMessageBytes: 8 * 1024 });
    const invalid = bundle(100);
    (invalid.tools[50] as Record<string, unknown>)['endpoint'] = 42;
    const refused = await a.replicator.importBundle(invalid).then(
      () => undefined,
      (err: unknown) => err as RegistryError,
    );
    expect(refused?.code).toBe('TR_ERR_VALIDATION');
    expect(refused?.fieldErrors?.[0]?.path).toBe('tools.50.endpoint');
    expect(a.stagedRows()).toEqual([]);

    topic.maxMessageBytes = 4 * 1024;
    const tooLarge = await a.replicator.importBundle(bundle(100)).then(
      () => undefined,
      (err: unknown) => err as RegistryError,
    );
    expect(tooLarge).toMatchObject({
      code: 'TR_ERR_BODY_TOO_LARGE',
      message: expect.stringMatching(/part 1 of \d+ .*PULSAR_WS_MAX_FRAME_BYTES/),
    });
  });

  it('seals the credential with the shared key: every replica with the key stores it; one with another key applies none of it', async () => {
    await startTopic();
    const a = await start('a');
    const b = await start('b');
    const wrong = await start('wrong', { secretKey: createSecretKey(randomBytes(32)) });
    const put = await a.replicator.putMcpServer(
      parseMcpServerBody({ url: 'http://127.0.0.1:9/mcp', credential: { bearer: BEARER }, prefix: 'gh_' }, 'github'),
      { pathId: 'github' },
    );
    expect(put).toMatchObject({ created: true, record: { id: 'github', hasCredential: true } });
    const sent = topic.entries.at(-1)!;
    expect(sent.text).not.toContain(BEARER);
    expect(JSON.parse(sent.text)).toMatchObject({
      op: 'mcp-server.put',
      target: 'github',
      body: { credential: { sealed: expect.any(String), kid: expect.any(String) } },
    });
    expect(a.store.mcpServerCredential('github')).toBe(BEARER);
    await vi.waitUntil(() => b.catalog.getMcpServer('github') !== undefined, POLLING);
    expect(b.store.mcpServerCredential('github')).toBe(BEARER);
    // Keeping the stored credential carries no secret, and keeps it everywhere.
    await a.replicator.putMcpServer(
      parseMcpServerBody({ url: 'http://127.0.0.1:9/mcp', credential: { set: true }, prefix: 'hub_' }, 'github'),
      { pathId: 'github' },
    );
    await vi.waitUntil(() => b.catalog.getMcpServer('github')?.descriptor.prefix === 'hub_', POLLING);
    expect(b.store.mcpServerCredential('github')).toBe(BEARER);

    // Another key: a's messages are not its to authenticate, so it applies none of them (and says so).
    await vi.waitUntil(() => wrong.replicator.state.refused.last?.index === lastIndex(), POLLING);
    // a's and b's markers, and a's two writes.
    expect(wrong.replicator.state.refused).toMatchObject({ count: 4, last: { reason: 'unknown-key' } });
    expect(wrong.replicator.state.failed).toBeUndefined();
    expect(wrong.catalog.getMcpServer('github')).toBeUndefined();
    for (const r of replicas.running) expect(r.logs.join('\n')).not.toContain(BEARER);
  });

  it('stops a replica that authenticates a message but holds no key for its sealed credential, before the message', async () => {
    await startTopic();
    const other = createSecretKey(randomBytes(32));
    const a = await start('a');
    const sealed = sealCredential(other, BEARER, { write: 'w-other', target: 'github' });
    replicas.append(
      JSON.stringify({
        v: 1,
        op: 'mcp-server.put',
        write: 'w-other',
        origin: 'elsewhere',
        at: new Date().toISOString(),
        target: 'github',
        body: { url: 'http://127.0.0.1:9/mcp', credential: sealed },
      }),
    );
    await vi.waitUntil(() => a.replicator.state.failed !== undefined, POLLING);
    expect(a.replicator.state.failed).toMatch(/REPLICATION_SECRET_FILE, REPLICATION_ACCEPTED_SECRET_FILES/);
    // Not applied, and its position before the message: applied once restarted with the key.
    expect(a.catalog.getMcpServer('github')).toBeUndefined();
    expect(a.store.replicationPosition()?.index ?? 0).toBeLessThan(lastIndex());
    await expect(a.replicator.putTool(parseToolPutBody({ name: 'x', description: 'x', endpoint: '/x' }))).rejects.toMatchObject({
      code: 'TR_ERR_UNAVAILABLE',
    });
    // Restarted holding that key too (rotation), it opens the credential and goes on.
    replicas.stop(a);
    const again = await start('a', { dir: a.dir, acceptedKeys: [other] });
    await vi.waitUntil(() => again.catalog.getMcpServer('github') !== undefined, POLLING);
    expect(again.store.mcpServerCredential('github')).toBe(BEARER);
  });

  it('refuses, on every replica with the key, a sealed credential that was altered or moved to another server', async () => {
    await startTopic();
    const a = await start('a');
    const b = await start('b');
    const sealed = sealCredential(KEY, BEARER, { write: 'w-hand', target: 'github' });
    const flipped = Buffer.from(sealed.sealed, 'base64');
    flipped[20] = (flipped[20] ?? 0) ^ 1;
    const event = (target: string, credential: unknown) =>
      JSON.stringify({
        v: 1,
        op: 'mcp-server.put',
        write: 'w-hand',
        origin: 'elsewhere',
        at: new Date().toISOString(),
        target,
        body: { url: 'http://127.0.0.1:9/mcp', credential },
      });
    replicas.append(event('github', { ...sealed, sealed: flipped.toString('base64') }));
    replicas.append(event('gitlab', sealed));
    replicas.append(event('malformed', { sealed: 42, kid: 'nope' }));
    const last = lastIndex();
    for (const r of [a, b]) {
      await vi.waitUntil(() => r.store.replicationPosition()?.index === last, POLLING);
      expect(r.replicator.state.failed).toBeUndefined();
      for (const id of ['github', 'gitlab', 'malformed']) expect(r.catalog.getMcpServer(id)).toBeUndefined();
    }
  });
});
