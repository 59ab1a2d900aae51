/**
 * Issue 11 in storage: migration 008 rebuilds the tools table with its rows, MCP servers keep
 * their credential apart from their descriptor, and a server's delete takes its tools along.
 */
import { describe, expect, it } from 'vitest';
import { credentialOf, McpServerInputSchema, type McpTool } from '../../src/model/mcp-schemas.js';

const parseMcpServer = (input: unknown) => credentialOf(McpServerInputSchema.parse(input));
import { parseTool, parseToolService } from '../../src/model/descriptors.js';
import { openDatabase } from '../../src/store/database.js';
import { loadMigrations, migrate } from '../../src/store/migrations.js';
import { RegistryStore } from '../../src/store/registry-store.js';
import { seed } from '../helpers/fixtures.js';

const NOW = '2026-11-30T00:00:00.000Z';

const mcpTool = (name: string): McpTool => ({
  type: 'mcp',
  name,
  server: 'gh',
  upstreamName: name,
  description: 'x',
  inputSchema: { type: 'object' },
  scopes: [],
});

describe('migration 008 and MCP servers in the store', () => {
  it('keeps every tool of a version 7 database, foreign keys and all', () => {
    const db = openDatabase(':memory:');
    migrate(
      db,
      loadMigrations().filter((m) => m.version <= 7),
    );
    // As version 7 code wrote them (this code's statements need version 8).
    const service = parseToolService(seed('custom-rag'));
    const bus = parseTool(seed('query-customers'), () => service);
    const http = parseTool(seed('calculator'), () => undefined);
    db.prepare("INSERT INTO tool_services VALUES ('custom-rag', ?, 'active', 1, 1, ?)").run(JSON.stringify(service), NOW);
    const insert = db.prepare('INSERT INTO tools VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    insert.run(bus.name, bus.kind, bus.serviceId, JSON.stringify(bus.descriptor), 'active', 2, 2, NOW);
    insert.run(http.name, http.kind, null, JSON.stringify(http.descriptor), 'deleted', 3, 4, NOW);
    db.prepare('UPDATE registry_state SET registry_index = 4').run();
    const rows = db.prepare('SELECT * FROM tools ORDER BY name').all();

    // 008 first, then whatever came after it (009 replication, 010 announcers).
    const applied = migrate(db).applied;
    expect(applied[0]).toBe(8);
    expect(applied).toEqual([...applied].sort((a, b) => a - b));
    const store = new RegistryStore(db);
    expect(
      db
        .prepare('SELECT name, kind, service_id, descriptor, status, create_index, modify_index, updated_at FROM tools ORDER BY name')
        .all(),
    ).toEqual(rows);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    expect(store.loadSnapshot()).toMatchObject({
      tools: [{ name: 'query-customers', serviceId: 'custom-rag' }],
      tombstones: [{ name: 'calculator' }],
    });
    expect(() => store.deleteService('custom-rag', NOW)).toThrow(/query-customers/);
    // An mcp tool needs its server; a message-bus tool its service.
    expect(() =>
      db
        .prepare(
          "INSERT INTO tools (name, kind, descriptor, status, create_index, modify_index, updated_at) VALUES ('x', 'mcp', '{}', 'active', 1, 1, '')",
        )
        .run(),
    ).toThrow(/CHECK/);
  });

  it('keeps the credential out of records, and drops it with the server and its tools', () => {
    const db = openDatabase(':memory:');
    migrate(db);
    const store = new RegistryStore(db);
    const { server, credential } = parseMcpServer({ id: 'gh', url: 'https://mcp.example/mcp', credential: { bearer: 'sekret' } });
    const put = store.putMcpServer(server, credential, NOW);
    expect(JSON.stringify(put)).not.toContain('sekret');
    expect(put.record.hasCredential).toBe(true);
    expect(store.mcpServerCredential('gh')).toBe('sekret');
    // `{set: true}` keeps what is stored.
    expect(store.putMcpServer(server, parseMcpServer({ ...server, credential: { set: true } }).credential, NOW).record.hasCredential).toBe(
      true,
    );
    expect(store.mcpServerCredential('gh')).toBe('sekret');

    const written = store.writeMcpTools(
      ['a', 'b'].map((name) => ({ name, kind: 'mcp' as const, serviceId: 'gh', descriptor: mcpTool(name) })),
      [],
      NOW,
    );
    expect(written.map((t) => [t.name, t.kind, t.serviceId])).toEqual([
      ['a', 'mcp', 'gh'],
      ['b', 'mcp', 'gh'],
    ]);
    expect(store.writeMcpTools([], ['b'], NOW).map((t) => [t.name, t.status])).toEqual([['b', 'deleted']]);

    const { server: tombstone, tools } = store.deleteMcpServer('gh', NOW);
    expect(tombstone).toMatchObject({ status: 'deleted', hasCredential: false });
    expect(tools.map((t) => [t.name, t.status, t.index])).toEqual([['a', 'deleted', tombstone.index]]);
    expect(store.mcpServerCredential('gh')).toBeUndefined();
    expect(db.prepare("SELECT credential FROM mcp_servers WHERE id = 'gh'").pluck().get()).toBeNull();
    expect(store.loadLive()).toMatchObject({ mcpServers: [], tools: [] });
    expect(() => store.putMcpServer(server, 'keep', NOW)).toThrow(/no stored credential to keep/);
  });
});
