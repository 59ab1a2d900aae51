/**
 * Issue 29 in storage: migration 013 gives servers stored before the review policy existed the
 * policy `auto` (what they did), and new ones keep the default `review`; pending versions keep
 * when they were first seen and whether they were rejected while the same version is listed
 * again, and start afresh when it changes. Also the JSON-pointer diff operators read.
 */
import { describe, expect, it } from 'vitest';
import { jsonDiff } from '../../src/model/json-diff.js';
import { McpServerSchema, type McpTool } from '../../src/model/mcp-schemas.js';
import { clashOf } from '../../src/model/mcp-tools.js';
import { mcpToolOf } from '../helpers/fixtures.js';
import { openDatabase } from '../../src/store/database.js';
import { loadMigrations, migrate } from '../../src/store/migrations.js';
import { McpPendingRows } from '../../src/store/mcp-pending-rows.js';

const tool = (description: string): McpTool => mcpToolOf('up', 'up_', 'echo', description);

describe('migration 013 and pending versions', () => {
  it('keeps the servers of a version 12 database on `auto`, and new servers default to `review`', () => {
    const db = openDatabase(':memory:');
    migrate(
      db,
      loadMigrations().filter((m) => m.version <= 12),
    );
    db.prepare(
      "INSERT INTO mcp_servers (id, descriptor, credential, status, create_index, modify_index, updated_at) VALUES ('old', ?, NULL, 'active', 1, 1, 'x')",
    ).run(JSON.stringify({ id: 'old', url: 'http://127.0.0.1:9/mcp', scopes: [], toolScopes: {} }));
    expect(migrate(db).applied).toContain(13);
    const stored = JSON.parse(db.prepare("SELECT descriptor FROM mcp_servers WHERE id = 'old'").pluck().get() as string) as {
      policy: string;
    };
    expect(stored.policy).toBe('auto');
    expect(McpServerSchema.parse({ id: 'new', url: 'http://127.0.0.1:9/mcp' }).policy).toBe('review');
  });

  it('keeps first-seen and rejection while the version is the same, and starts afresh when it changes', () => {
    const db = openDatabase(':memory:');
    migrate(db);
    const rows = new McpPendingRows(db);
    const v1 = tool('One.');
    rows.put('up', { tool: v1, digest: 'sha256:1', acceptedDigest: null, fresh: true }, 'T1');
    rows.reject('up', 'up_echo', 'T2');
    // The same version, its scopes changed by the operator: still rejected, still first seen at T1.
    rows.put('up', { tool: { ...v1, scopes: ['s'] }, digest: 'sha256:1', acceptedDigest: null, fresh: false }, 'T3');
    expect(rows.get('up', 'up_echo')).toMatchObject({ seenAt: 'T1', rejectedAt: 'T2', rejected: true, descriptor: { scopes: ['s'] } });
    expect(rows.count('up')).toBe(0);
    expect(rows.page('up', '', 10, false)).toEqual([]);
    expect(rows.page('up', '', 10, true)).toHaveLength(1);
    rows.put('up', { tool: tool('Two.'), digest: 'sha256:2', acceptedDigest: null, fresh: true }, 'T4');
    expect(rows.get('up', 'up_echo')).toMatchObject({ seenAt: 'T4', rejectedAt: null, rejected: false, digest: 'sha256:2' });
    expect(rows.count('up')).toBe(1);
    rows.dropServer('up');
    expect(rows.names('up')).toEqual([]);
  });
});

describe('jsonDiff', () => {
  it('names each change by its JSON pointer, escaped, in key order', () => {
    const before = { description: 'a', inputSchema: { properties: { 'a/b': { type: 'string' }, gone: {} }, required: ['x'] } };
    const after = { description: 'b', inputSchema: { properties: { 'a/b': { type: 'integer' }, 'm~n': true }, required: ['x', 'y'] } };
    expect(jsonDiff(before, after)).toEqual({
      ops: [
        { op: 'replace', pointer: '/description', old: 'a', new: 'b' },
        { op: 'replace', pointer: '/inputSchema/properties/a~1b/type', old: 'string', new: 'integer' },
        { op: 'remove', pointer: '/inputSchema/properties/gone', old: {} },
        { op: 'add', pointer: '/inputSchema/properties/m~0n', new: true },
        { op: 'add', pointer: '/inputSchema/required/1', new: 'y' },
      ],
      truncated: false,
    });
    expect(jsonDiff({ a: 1 }, { a: [1] }).ops).toEqual([{ op: 'replace', pointer: '/a', old: 1, new: [1] }]);
    expect(jsonDiff({ a: 1 }, { a: 1 })).toEqual({ ops: [], truncated: false });
  });

  it('stops at its bound, and walks deep values without recursion', () => {
    const wide = Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i]));
    const diff = jsonDiff({}, wide, 200);
    expect(diff.ops).toHaveLength(200);
    expect(diff.truncated).toBe(true);
    let deep: unknown = 'leaf';
    for (let i = 0; i < 50_000; i++) deep = { d: deep };
    expect(jsonDiff(deep, { d: 1 }).ops).toEqual([{ op: 'replace', pointer: '/d', old: expect.anything() as unknown, new: 1 }]);
  });
});

describe('clashOf: the one rule for a sync and an accept', () => {
  it("keeps a server off another's tool, and off an operator's tombstone, but not off its own", () => {
    const none = () => undefined;
    const own = { kind: 'mcp' as const, serviceId: 'up', descriptor: tool('x') };
    const operators = { kind: 'http' as const, serviceId: null, descriptor: tool('x') };
    expect(clashOf('up', 'up_echo', own, none)).toBeUndefined();
    expect(clashOf('up', 'up_echo', { ...own, serviceId: 'other' }, none)).toBe('"up_echo" is taken by a tool of MCP server "other"');
    expect(clashOf('up', 'up_echo', operators, none)).toBe('"up_echo" is taken by a tool of kind http');
    expect(clashOf('up', 'up_echo', undefined, () => operators)).toMatch(/^"up_echo" was a tool of kind http, deleted/);
    expect(clashOf('up', 'up_echo', undefined, () => own)).toBeUndefined();
  });
});
