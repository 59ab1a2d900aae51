/**
 * Issue 29, "Bounded churn": an upstream MCP server (the SDK's, on 127.0.0.1) listing 5,000
 * tools rewrites every one of them, again and again, while /healthz is polled back to back as
 * test/hardening/schema-stalls.test.ts does (the start time taken before the pause, so that no
 * stall falls between two polls): its worst answer must stay under 50 ms. The upstream runs in
 * this process, so its own work (answering the listing) counts against the budget too. An
 * attempt that misses by less than a stall would is tried again, as there.
 */
import { Agent, request as httpRequest } from 'node:http';
import { PerformanceObserver } from 'node:perf_hooks';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { startMcpUpstream, type McpUpstream, type UpstreamToolDef } from '../helpers/mcp-upstream.js';

const LOOPBACK = '127.0.0.1';
const HEALTH_BUDGET_MS = 50;
/** As in schema-stalls: a miss under this is a slow moment of the machine, tried again; over it, a stall. */
const NOT_NOISE_MS = 500;
const ATTEMPTS = 3;

const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] });
const tool = (name: string): UpstreamToolDef => ({
  tool: { name, description: `Upstream ${name}.`, inputSchema: { type: 'object', properties: { s: { type: 'string' } } } },
  handler: () => text(name),
});

let registry: TestApp | undefined;
let upstream: McpUpstream | undefined;

afterEach(async () => {
  await registry?.close();
  await upstream?.stop();
  registry = undefined;
  upstream = undefined;
});

type Policy = 'auto' | 'review';

/** Under `auto` the tools are served; under `review` they wait as pending versions (issue 29), written all the same. */
async function registered(t: TestApp, id: string, up: McpUpstream, count: number, policy: Policy): Promise<void> {
  const put = await t.app.inject({
    method: 'PUT',
    url: `/mcp-servers/${id}`,
    headers: bearer(t.token(['registry:write'])),
    payload: { url: up.url, policy, prefix: 'up_' },
  });
  expect(put.statusCode).toBe(201);
  const stored = () => (policy === 'auto' ? t.app.catalog.toolsOfMcpServer(id).length : t.app.store.mcpPendingCount(id));
  await vi.waitFor(() => expect(stored()).toBe(count), { timeout: 60_000, interval: 20 });
}

/** The description stored of a tool: as served (`auto`), or as pending (`review`). */
function storedDescription(t: TestApp, id: string, name: string, policy: Policy): unknown {
  return policy === 'auto'
    ? t.app.catalog.getTool(name)?.record.descriptor.description
    : t.app.store.mcpPending(id, name)?.descriptor.description;
}

function probe(port: number, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: LOOPBACK, port, path: '/healthz', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(60_000, () => req.destroy(new Error('no /healthz answer within 60 s')));
    req.on('error', reject);
    req.end();
  });
}

/** Polls /healthz back to back until stopped; the start time is taken before the pause, so no stall falls between polls. */
function watchHealth(port: number): {
  stop(): Promise<{ worstMs: number; polls: number; notOk: number[]; p50: number; longestGcMs: number }>;
} {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  let running = true;
  const times: number[] = [];
  const notOk: number[] = [];
  let longestGcMs = 0;
  const gc = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) longestGcMs = Math.max(longestGcMs, entry.duration);
  });
  gc.observe({ entryTypes: ['gc'] });
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      await new Promise((resolve) => setTimeout(resolve, 1));
      const status = await probe(port, agent);
      times.push(performance.now() - started);
      if (status !== 200) notOk.push(status);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      agent.destroy();
      gc.disconnect();
      const sorted = [...times].sort((a, b) => a - b);
      return { worstMs: sorted.at(-1) ?? 0, p50: sorted[Math.floor(sorted.length / 2)] ?? 0, polls: times.length, notOk, longestGcMs };
    },
  };
}

describe('a 5,000-tool upstream rewriting them all does not stall readers (issue 29)', () => {
  // Under `review` (the default) each rewrite is a pending version per tool, written in the same slices.
  it.each(['auto', 'review'] as const)(
    'keeps /healthz under 50 ms through repeated rewrites (policy %s)',
    async (policy) => {
      const TOOLS = 5000;
      const REWRITES = 3;
      const defs = Array.from({ length: TOOLS }, (_, i) => tool(`t${i}`));
      // Listed in pages of 100, as servers page long lists.
      upstream = await startMcpUpstream({ tools: defs });
      // A short interval, so that the test sees several rewrites; the default (5 s) only spaces them more.
      registry = await createTestApp({
        MCP_UPSTREAM_WRITE_INTERVAL_MS: '200',
        MCP_UPSTREAM_MAX_WRITE_INTERVAL_MS: '200',
        RATE_LIMIT_MAX: '0',
      });
      const t = registry;
      await t.app.listen({ port: 0, host: LOOPBACK });
      const port = (t.app.server.address() as { port: number }).port;
      await registered(t, 'wide', upstream, TOOLS, policy);
      const up = upstream;
      const results: string[] = [];
      let best = Number.POSITIVE_INFINITY;
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const quiet = watchHealth(port);
        await new Promise((resolve) => setTimeout(resolve, 500));
        const idle = (await quiet.stop()).worstMs;
        const watch = watchHealth(port);
        for (let r = 0; r < REWRITES; r++) {
          const version = `a${attempt}r${r}`;
          for (const def of defs) def.tool.description = `Upstream ${def.tool.name}, ${version}.`;
          await up.listChanged();
          await vi.waitFor(
            () => expect(storedDescription(t, 'wide', `up_t${TOOLS - 1}`, policy)).toBe(`Upstream t${TOOLS - 1}, ${version}.`),
            {
              timeout: 60_000,
              interval: 20,
            },
          );
        }
        const { worstMs, p50, polls, notOk, longestGcMs } = await watch.stop();
        expect(notOk).toEqual([]);
        expect(polls).toBeGreaterThan(0);
        results.push(
          `worst ${worstMs.toFixed(1)} ms, p50 ${p50.toFixed(1)} ms over ${polls} polls (longest GC pause ${longestGcMs.toFixed(1)} ms, idle worst just before ${idle.toFixed(1)} ms)`,
        );
        best = Math.min(best, worstMs);
        if (worstMs < HEALTH_BUDGET_MS || worstMs >= NOT_NOISE_MS) break;
      }
      expect(best, `/healthz while ${TOOLS} tools are rewritten ${REWRITES} times: ${results.join('; ')}`).toBeLessThan(HEALTH_BUDGET_MS);
    },
    240_000,
  );
});
