/**
 * Bridged calls (needs java and mvn): a Pulsar broker (scripts/pulsar.sh), a TS echo tool
 * service, calls through POST /tools/{name}/invoke against the same calls made directly on
 * the bus.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { directBus } from './bus.js';
import { token } from './data.js';
import { freePort, REPO_ROOT, spawnNode, type Child } from './lib.js';
import { compare, loader, type LoadSpec, type Side } from './measure.js';
import { log, opts } from './options.js';
import { f0, f2, pct, table, type Section } from './report.js';
import { importBundle, startRegistry, type Registry } from './servers.js';

export interface BridgeResult {
  skipped: string | null;
  registry?: Side;
  direct?: Side;
  ratio?: number;
  brokerStartS?: number;
}

let pulsarEnv: Record<string, string> | null = null;

/** Stops the broker if one was started (for signal handlers and failures). */
export function stopPulsarSync(): void {
  if (!pulsarEnv) return;
  spawnSync('bash', [join(REPO_ROOT, 'scripts/pulsar.sh'), 'stop'], { env: { ...process.env, ...pulsarEnv }, stdio: 'inherit' });
  pulsarEnv = null;
}

function missingCommand(): string | null {
  for (const command of ['java', 'mvn', 'curl']) {
    if (spawnSync('bash', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status !== 0) return command;
  }
  return null;
}

async function runPulsarScript(command: 'start' | 'stop', env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn('bash', [join(REPO_ROOT, 'scripts/pulsar.sh'), command], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.stderr.on('data', (d: Buffer) => process.stderr.write(d));
    proc.once('error', reject);
    proc.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`scripts/pulsar.sh ${command} exited with ${code}`))));
  });
}

export async function bridge(): Promise<BridgeResult> {
  const missing = missingCommand();
  if (missing) return { skipped: `${missing} is not on PATH (the Pulsar broker needs java and mvn)` };
  const env = {
    PULSAR_WEB_PORT: String(await freePort()),
    PULSAR_BROKER_PORT: String(await freePort()),
    PULSAR_STATE_DIR: join(REPO_ROOT, '.cache/bench-pulsar'),
  };
  const dir = mkdtempSync(join(tmpdir(), 'tool-registry-bench-'));
  let service: Child | undefined;
  let registry: Registry | undefined;
  let direct: ReturnType<typeof directBus> | undefined;
  try {
    log('bridge: starting the Pulsar broker (scripts/pulsar.sh start)');
    const t0 = performance.now();
    pulsarEnv = env;
    const out = await runPulsarScript('start', env);
    const brokerStartS = (performance.now() - t0) / 1000;
    const wsUrl = /PULSAR_WS_URL=(\S+)/.exec(out)?.[1];
    if (!wsUrl) throw new Error(`scripts/pulsar.sh start printed no PULSAR_WS_URL:\n${out}`);

    service = spawnNode('bench/tool-service.ts', [wsUrl], {});
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the tool service did not get ready:\n${service?.output() ?? ''}`)), 60_000);
      service?.proc.stdout?.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      service?.proc.once('exit', () => reject(new Error(`the tool service exited:\n${service?.output() ?? ''}`)));
    });

    registry = await startRegistry(dir, { PULSAR_WS_URL: wsUrl });
    await importBundle(
      registry,
      JSON.stringify({
        'tool-services': [{ id: 'bench-echo', topic: 'bench-echo' }],
        tools: [
          {
            type: 'tool-service',
            name: 'bench-echo',
            description: 'Answers ok at once',
            service: 'bench-echo',
            scopes: ['bench:call'],
            arguments: [{ name: 'text', type: 'string', description: 'Anything' }],
          },
        ],
      }),
    );
    const callToken = `Bearer ${token('bench-caller', ['bench:call'])}`;
    const invokeOpts: LoadSpec = {
      path: '/tools/bench-echo/invoke',
      connections: opts.bridgeConcurrency,
      method: 'POST',
      headers: { authorization: callToken, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hi' }),
      expectStatus: 200,
    };
    const probe = await fetch(`${registry.base}/tools/bench-echo/invoke`, {
      method: 'POST',
      headers: invokeOpts.headers ?? {},
      body: invokeOpts.body ?? '',
    });
    const probeText = await probe.text();
    if (probe.status !== 200) throw new Error(`a bridged call answered ${probe.status}: ${probeText}`);

    direct = directBus(wsUrl, 'bench-direct');
    const d = direct;
    await d.run(0.2, 1);
    const { registry: r, ceiling: c } = await compare('bridged calls', loader(registry.base, invokeOpts, registry.child.pid), (s) =>
      d.run(s, opts.bridgeConcurrency),
    );
    return { skipped: null, registry: r, direct: c, ratio: r.rps / c.rps, brokerStartS };
  } finally {
    direct?.close();
    await registry?.child.stop();
    await service?.stop();
    if (pulsarEnv) {
      log('bridge: stopping the broker (scripts/pulsar.sh stop)');
      await runPulsarScript('stop', env).catch((err: unknown) => log(String(err)));
      pulsarEnv = null;
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

export function bridgeSection(b: BridgeResult): Section {
  if (b.skipped !== null || !b.registry || !b.direct || b.ratio === undefined) {
    return { title: 'Bridged calls', text: `skipped: ${b.skipped ?? 'no result'}`, markdown: `Skipped: ${b.skipped ?? 'no result'}` };
  }
  const t = table(
    ['path', 'calls/s', 'p50 ms', 'p99 ms', 'registry CPU us/call', 'ratio'],
    [
      [
        'through the registry (POST /tools/bench-echo/invoke)',
        f0(b.registry.rps),
        f2(b.registry.p50),
        f2(b.registry.p99),
        f0(b.registry.cpuUsPerReq),
        pct(b.ratio),
      ],
      ['direct on the bus (PulsarWsClient)', f0(b.direct.rps), f2(b.direct.p50), f2(b.direct.p99), '-', '100%'],
    ],
  );
  return { title: `Bridged calls (median of ${opts.runs} x ${opts.durationS} s, ${opts.bridgeConcurrency} in flight)`, ...t };
}
