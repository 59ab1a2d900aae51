/**
 * The registry as the writes so far leave it: the catalogue, overlaid with what the staged batch
 * has written. A batch's later writes validate against its earlier ones (a tool may use a service
 * put just before it), though nobody else sees them until the batch's fsync returns.
 */
import type { McpServerRecord, ServiceRecord, ToolRecord } from '../model/records.js';
import type { ToolService } from '../model/schemas.js';
import type { Catalog } from '../catalog/catalog.js';
import { compareNames } from '../catalog/sorted-names.js';

/** What a batch's successful writes left, by id and name (newest wins). */
export interface StagedWrites {
  services: Map<string, ServiceRecord>;
  mcpServers: Map<string, McpServerRecord>;
  tools: Map<string, ToolRecord>;
}

export class StagedView {
  readonly #catalog: Catalog;
  readonly #staged: () => StagedWrites | null;

  /** `staged`: the batch committing or waiting for its fsync, or null. */
  constructor(catalog: Catalog, staged: () => StagedWrites | null) {
    this.#catalog = catalog;
    this.#staged = staged;
  }

  /** A live service's record. */
  serviceRecord(id: string): ServiceRecord | undefined {
    const record = this.#staged()?.services.get(id) ?? this.#catalog.getService(id);
    return record?.status === 'deleted' ? undefined : record;
  }

  /** A live service. */
  service(id: string): ToolService | undefined {
    const record = this.#staged()?.services.get(id);
    if (record) return record.status === 'deleted' ? undefined : record.descriptor;
    return this.#catalog.lookupService(id);
  }

  /** Every live service (the catalogue's, with the batch's over them). */
  services(): ServiceRecord[] {
    const staged = this.#staged()?.services;
    const live = this.#catalog.services().filter((record) => record.status !== 'deleted' && !staged?.has(record.id));
    for (const record of staged?.values() ?? []) if (record.status !== 'deleted') live.push(record);
    return live;
  }

  /** A live MCP server. */
  mcpServer(id: string): McpServerRecord | undefined {
    const record = this.#staged()?.mcpServers.get(id);
    if (record) return record.status === 'deleted' ? undefined : record;
    return this.#catalog.getMcpServer(id);
  }

  /** Live tools of an MCP server. */
  /** Every live MCP server, staged writes included. */
  mcpServers(): McpServerRecord[] {
    const staged = this.#staged()?.mcpServers;
    const live = new Map(this.#catalog.mcpServers().map((record) => [record.id, record]));
    for (const [id, record] of staged ?? []) live.set(id, record);
    return [...live.values()].filter((record) => record.status !== 'deleted');
  }

  toolsOfMcpServer(id: string): string[] {
    const names = new Set(this.#catalog.toolsOfMcpServer(id));
    for (const [name, record] of this.#staged()?.tools ?? []) {
      if (record.status !== 'deleted' && record.kind === 'mcp' && record.serviceId === id) names.add(name);
      else names.delete(name);
    }
    return [...names];
  }

  /** The tombstone of a name no live tool has. */
  tombstone(name: string): ToolRecord | undefined {
    const record = this.#staged()?.tools.get(name);
    if (record) return record.status === 'deleted' ? record : undefined;
    return this.#catalog.getTombstone(name);
  }

  /** A live tool's record. */
  tool(name: string): ToolRecord | undefined {
    const record = this.#staged()?.tools.get(name);
    if (record) return record.status === 'deleted' ? undefined : record;
    return this.#catalog.getTool(name)?.record;
  }

  /** Live tools on a service, in name order. */
  toolsUsingService(id: string): string[] {
    const users = this.#catalog.toolsUsingService(id);
    const staged = this.#staged()?.tools;
    if (!staged || staged.size === 0) return users;
    const names = new Set(users);
    for (const [name, record] of staged) {
      if (record.status !== 'deleted' && record.serviceId === id) names.add(name);
      else names.delete(name);
    }
    return [...names].sort(compareNames);
  }
}
