/**
 * Adoption (TRUSTGRAPH_CONFIG_ADOPT): at startup, the `tool-service` items and `tool-service`
 * tools TrustGraph's config holds in the workspace (ConfigRequest `getvalues`) that the registry
 * lacks are imported in one write, so that descriptors loaded with `tg-put-config-item` come
 * under the registry. What the registry already holds stays as it is (and live sync writes it
 * back to TrustGraph); an item the registry cannot take (a tool of another kind, a descriptor
 * that does not validate, a tool whose service does not) is left out and logged.
 */
import type { Catalog } from '../catalog/catalog.js';
import { RegistryError } from '../model/errors.js';
import type { Actor } from '../model/records.js';
import type { RegistryWrites } from '../registry/writes.js';
import { configRequest, importOfTrustGraph, TOOL_SERVICE_TYPE, TOOL_TYPE, type SkippedItem } from '../model/trustgraph-config.js';
import type { ConfigRequester } from './config-client.js';

export interface AdoptionResult {
  /** The registry index of the import; null when there was nothing to import. */
  index: number | null;
  toolServices: number;
  tools: number;
  /** Items the registry held already (left as the registry has them). */
  held: number;
  /** Items left out, and why. */
  skipped: SkippedItem[];
}

/** The registry itself writes, as it does when it syncs an MCP server's tools. */
const ADOPTION: Actor = { sub: null, iss: null, client: null, requestId: null };

/** Rounds of leaving out items the import refused (a left-out service can fail its tools in turn). */
const MAX_ROUNDS = 8;

export async function adoptTrustGraphConfig(
  client: ConfigRequester,
  registry: RegistryWrites,
  catalog: Catalog,
  options: { workspace: string; maxDepth: number },
): Promise<AdoptionResult> {
  const skipped: SkippedItem[] = [];
  let held = 0;
  const bundle: { 'tool-services': unknown[]; tools: unknown[] } = { 'tool-services': [], tools: [] };
  const names: { 'tool-services': string[]; tools: string[] } = { 'tool-services': [], tools: [] };
  for (const type of [TOOL_SERVICE_TYPE, TOOL_TYPE] as const) {
    const response = await client.request(configRequest('getvalues', options.workspace, { type }));
    for (const { key, value } of response.values ?? []) {
      const item = `${type}/${key}`;
      if (type === TOOL_SERVICE_TYPE ? catalog.getService(key) !== undefined : catalog.getTool(key) !== undefined) {
        held += 1;
        continue;
      }
      // One item at a time, so that one that cannot be read leaves the others in.
      try {
        const converted = importOfTrustGraph({ [type]: { [key]: value } }, [], options.maxDepth);
        skipped.push(...converted.skipped);
        const list = type === TOOL_SERVICE_TYPE ? 'tool-services' : 'tools';
        bundle[list].push(...converted.bundle[list]);
        names[list].push(...converted.bundle[list].map(() => item));
      } catch (err) {
        if (!(err instanceof RegistryError)) throw err;
        skipped.push({ item, reason: err.fieldErrors?.[0]?.message ?? err.message });
      }
    }
  }
  for (let round = 0; round < MAX_ROUNDS; round++) {
    if (bundle['tool-services'].length === 0 && bundle.tools.length === 0) return { index: null, toolServices: 0, tools: 0, held, skipped };
    try {
      const summary = await registry.importBundle(bundle, ADOPTION);
      return { index: summary.index, toolServices: bundle['tool-services'].length, tools: bundle.tools.length, held, skipped };
    } catch (err) {
      if (!(err instanceof RegistryError) || err.code !== 'TR_ERR_VALIDATION' || !err.fieldErrors) throw err;
      // Leave out every item a problem names; give up when none does.
      const refused = new Map<'tool-services' | 'tools', Map<number, string>>([
        ['tool-services', new Map()],
        ['tools', new Map()],
      ]);
      for (const problem of err.fieldErrors) {
        const match = /^(tool-services|tools)\.(\d+)/.exec(problem.path);
        if (match)
          refused
            .get(match[1] as 'tools' | 'tool-services')
            ?.set(Number(match[2]), `${problem.path.slice(match[0].length + 1) || '(item)'}: ${problem.message}`);
      }
      if ([...refused.values()].every((m) => m.size === 0)) throw err;
      for (const [list, indexes] of refused) {
        for (const [i, reason] of indexes) skipped.push({ item: names[list][i] ?? `${list}.${i}`, reason });
        bundle[list] = bundle[list].filter((_item, i) => !indexes.has(i));
        names[list] = names[list].filter((_item, i) => !indexes.has(i));
      }
    }
  }
  throw new Error(`TrustGraph's config was not adopted: the import was still refused after ${MAX_ROUNDS} rounds of leaving items out`);
}
