/**
 * Issue 28, the settings: an address that cannot be listened on names the setting that gave
 * it, the metrics listener's included. Through main(argv, io), in-process.
 */
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { LOOPBACK, processTempDir, removeTempDirs } from './helpers/process.js';

afterAll(() => removeTempDirs());

async function run(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await main(args, {
    env: { DATABASE_PATH: join(processTempDir(), 'registry.db'), HOST: LOOPBACK, PORT: '0', LOG_LEVEL: 'silent', ...env },
    stdout: (text) => void (stdout += text),
    stderr: (text) => void (stderr += text),
    readStdin: async () => undefined,
  });
  return { code, stdout, stderr };
}

describe('issue 28: an address that cannot be listened on names its setting', () => {
  let busy: Server | undefined;
  afterAll(() => busy?.close());

  it('HOST not of this machine, with PORT=0 (the port is picked before the server starts)', async () => {
    // 192.0.2.0/24 is TEST-NET-1: no machine has it.
    const result = await run(['serve'], { HOST: '192.0.2.1' });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('tool-registry: HOST: 192.0.2.1 is not an address of this machine\n');
  });

  it('a METRICS_PORT in use is METRICS_PORT, not PORT', async () => {
    busy = createServer();
    const port = await new Promise<number>((resolve) => busy?.listen(0, LOOPBACK, () => resolve((busy?.address() as { port: number }).port)));
    const result = await run(['serve'], { METRICS_PORT: String(port) });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(`tool-registry: METRICS_PORT: ${port} is already in use on ${LOOPBACK}\n`);
  });
});
