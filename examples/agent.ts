/**
 * An agent on tool-registry/client (issue 12): discovers its tools, prints the article's tool
 * context, calls a tool, and rediscovers whenever a tool is registered, changed or deleted.
 *
 *   REGISTRY_URL   the registry (default http://127.0.0.1:8006)
 *   AGENT_TOKEN    a bearer token (e.g. `npx tool-registry token --scope calculator:use --sub safecracker`);
 *                  without it discovery is anonymous and calls are refused (401)
 *   TOOL_NAME      the tool to call once after discovery (default calculator)
 *   TOOL_ARGS      its arguments as JSON (default {"expression":"6*7"})
 *   WATCH_SECONDS  how long to watch for changes before printing usage and exiting (default 60)
 *
 *   npx tsx examples/agent.ts
 */
import { RegistryClient, RegistryClientError, toPromptContext } from '../src/client/index.js';

const env = process.env;
const token = env['AGENT_TOKEN'];
const client = new RegistryClient({ baseUrl: env['REGISTRY_URL'] ?? 'http://127.0.0.1:8006', ...(token && { token }) });
const toolName = env['TOOL_NAME'] ?? 'calculator';
const toolArgs = JSON.parse(env['TOOL_ARGS'] ?? '{"expression":"6*7"}') as Record<string, unknown>;

const { tools, index, hidden } = await client.discover();
console.log(`Discovered ${tools.length} tools at index ${index}${hidden ? ` (${hidden} hidden from this token)` : ''}`);
console.log(toPromptContext(tools));

if (tools.some((tool) => tool.name === toolName)) {
  try {
    const answer = await client.invoke(toolName, toolArgs, { onChunk: (text) => process.stdout.write(`[chunk] ${text}\n`) });
    console.log(`${toolName} -> ${answer.result} (${answer.durationMs} ms)`);
  } catch (error) {
    if (!(error instanceof RegistryClientError)) throw error;
    console.log(
      `${toolName} failed: ${error.status} ${error.code}: ${error.detail ?? ''}${error.retryAfterS !== undefined ? ` (retry after ${error.retryAfterS} s)` : ''}`,
    );
  }
} else {
  console.log(`${toolName} is not among this agent's tools; register it and watch it appear.`);
}

const watchMs = Number(env['WATCH_SECONDS'] ?? '60') * 1000;
console.log(`Watching for ${watchMs / 1000} s (register a tool now)…`);
await client.watch(
  (current, at) => {
    console.log(`Rediscovered at index ${at}:`);
    console.log(toPromptContext(current) || '(no tools)');
  },
  { signal: AbortSignal.timeout(watchMs), onError: (error) => console.error(`watch: ${String(error)}; retrying`) },
);
console.log('Usage:', JSON.stringify(client.usage(), null, 2));
