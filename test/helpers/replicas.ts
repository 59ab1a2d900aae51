/**
 * Replicated mode over a real broker (test/bus/replication.broker.test.ts): registry replicas as
 * real processes on one replication topic, HTTP calls that never throw, a workload of writers
 * that keeps a model of what every acknowledged write must have left behind, and the checks
 * that compare replicas byte for byte.
 */
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { createSigner } from 'fast-jwt';
import { vi } from 'vitest';
import { seed } from './fixtures.js';
import { processTempDir, startServer, stopProcess, type EnvOverrides, type ExitInfo, type ServerProcess } from './process.js';
import { replicationKeyFile } from './replication-key.js';
import type { ReplicationState } from '../../src/replication/replicator.js';

/** The HS256 secret every replica is given (JWT_SECRET). */
export const SECRET = 'replication-test-secret-long-enough-for-hs256-0123456789';
/** The same PUBLIC_URL for every replica, as behind a load balancer: ETags hash it. */
const PUBLIC_URL = 'http://registry.replicas.test';
export const ADMIN_SCOPE = 'registry:write';

/** A fresh topic in the namespace scripts/pulsar.sh creates. */
export function replicationTopic(name: string): string {
  return `persistent://tg/registry/${name}-${randomUUID().slice(0, 8)}`;
}

/** An HS256 at+jwt every replica accepts. */
export function mintToken(scopes: readonly string[], sub = 'replication-test'): string {
  const sign = createSigner({ key: SECRET, expiresIn: 3_600_000, header: { alg: 'HS256', typ: 'at+jwt' } });
  return sign({ sub, scope: scopes.join(' ') });
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------
// HTTP

export interface HttpResult {
  /** 0 when no answer came (refused, reset, timed out). */
  status: number;
  headers: Headers | undefined;
  text: string;
  /** The body as JSON, or undefined. */
  json: unknown;
  /** `code` of a problem+json answer. */
  code: string | undefined;
  ms: number;
  error: string | undefined;
}

/** One HTTP call; never throws. */
export async function call(
  url: string,
  method: string,
  path: string,
  options: { token?: string | undefined; body?: unknown; timeoutMs?: number } = {},
): Promise<HttpResult> {
  const started = performance.now();
  try {
    const res = await fetch(`${url}${path}`, {
      method,
      headers: {
        ...(options.token !== undefined && { authorization: `Bearer ${options.token}` }),
        ...(options.body !== undefined && { 'content-type': 'application/json' }),
      },
      ...(options.body !== undefined && { body: JSON.stringify(options.body) }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 20_000),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const code =
      typeof json === 'object' && json !== null && typeof (json as Record<string, unknown>)['code'] === 'string'
        ? ((json as Record<string, unknown>)['code'] as string)
        : undefined;
    return { status: res.status, headers: res.headers, text, json, code, ms: performance.now() - started, error: undefined };
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    return {
      status: 0,
      headers: undefined,
      text: '',
      json: undefined,
      code: undefined,
      ms: performance.now() - started,
      error: `${(err as Error).message}${cause ? ` (${cause.code ?? cause.message ?? ''})` : ''}`,
    };
  }
}

// ---------------------------------------------------------------------------------------------
// Replicas

export interface Cluster {
  wsUrl: string;
  adminUrl: string;
  topic: string;
}

export type { ReplicationState };

export interface Readiness {
  status: number;
  index: number | undefined;
  replication: ReplicationState | undefined;
  code: string | undefined;
}

/**
 * One replica: its name and database stay the same across restarts, and so does its port once
 * it has one: the first start listens on port 0 and the server says which port it took.
 */
export class Replica {
  proc: ServerProcess | undefined;
  #port: number | undefined;

  private constructor(
    readonly cluster: Cluster,
    readonly id: string,
    readonly databasePath: string,
    readonly env: EnvOverrides,
  ) {}

  /** A replica with an empty database; not started. */
  static async create(cluster: Cluster, id: string, env: EnvOverrides = {}): Promise<Replica> {
    return Promise.resolve(new Replica(cluster, id, join(processTempDir('tool-registry-replica-'), 'registry.db'), env));
  }

  get port(): number {
    if (this.#port === undefined) throw new Error(`replica ${this.id} has not been started, so it has no port yet`);
    return this.#port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Starts the process (on the port it took the first time, and the same database) and waits for /healthz. */
  async start(): Promise<void> {
    this.proc = await startServer({
      ...(this.#port !== undefined && { port: this.#port }),
      databasePath: this.databasePath,
      logLevel: 'info',
      // Three replicas starting at once (tsx, migrations) on a loaded 2-core machine.
      startupDeadlineMs: 90_000,
      env: {
        PULSAR_WS_URL: this.cluster.wsUrl,
        PULSAR_ADMIN_URL: this.cluster.adminUrl,
        REPLICATION_TOPIC: this.cluster.topic,
        REPLICA_ID: this.id,
        // The key every replica signs the topic's messages with (env may give another).
        REPLICATION_SECRET_FILE: replicationKeyFile(),
        PUBLIC_URL,
        JWT_SECRET: SECRET,
        RATE_LIMIT_MAX: '0',
        BUS_CONNECT_TIMEOUT_MS: '2000',
        ...this.env,
      },
    });
    this.#port = this.proc.port;
  }

  async kill(): Promise<ExitInfo> {
    if (!this.proc) throw new Error(`replica ${this.id} was never started`);
    return stopProcess(this.proc, 'SIGKILL');
  }

  /** The last lines the process wrote, for failure messages. */
  logs(lines = 30): string {
    const out = `${this.proc?.stdout() ?? ''}${this.proc?.stderr() ?? ''}`.trim().split('\n');
    return `--- ${this.id} (port ${this.#port ?? 'none yet'}) ---\n${out.slice(-lines).join('\n')}`;
  }

  async readiness(): Promise<Readiness> {
    const res = await call(this.url, 'GET', '/readyz', { timeoutMs: 3_000 });
    const body = (res.json ?? {}) as { index?: number; replication?: ReplicationState };
    return { status: res.status, index: body.index, replication: body.replication, code: res.code };
  }

  /** Polls /readyz until 200 (caught up); fails early if the process exits. Returns every status seen and the first 200. */
  async waitReady(timeoutMs = 90_000): Promise<{ seen: number[]; ready: Readiness }> {
    const deadline = Date.now() + timeoutMs;
    const seen: number[] = [];
    for (;;) {
      if (this.proc?.done) throw new Error(`replica ${this.id} exited before it was ready\n${this.logs()}`);
      const r = await this.readiness();
      seen.push(r.status);
      if (r.status === 200) return { seen, ready: r };
      if (Date.now() > deadline)
        throw new Error(`replica ${this.id} not ready within ${timeoutMs} ms (last /readyz ${r.status} ${r.code ?? ''})\n${this.logs()}`);
      await sleep(100);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Descriptors

const CALCULATOR = seed('calculator');
const TELL_JOKE = seed('tell-joke');
const JOKE_SERVICE = seed('joke-service');

/** A tool service in the full queue form, with the optional `style` config param tell-joke gives. */
export function serviceDescriptor(id: string): Record<string, unknown> {
  return { ...JOKE_SERVICE, id };
}

export function httpTool(name: string, description: string, scopes: readonly string[]): Record<string, unknown> {
  return { ...CALCULATOR, name, endpoint: `/tools/${name}`, description, scopes };
}

export function busTool(name: string, description: string, service: string, scopes: readonly string[]): Record<string, unknown> {
  return { ...TELL_JOKE, name, description, service, scopes };
}

// ---------------------------------------------------------------------------------------------
// Views

export interface View {
  replica: string;
  status: number;
  body: string;
  etag: string | null;
  index: string | null;
  hidden: string | null;
}

/** GET / (anonymous, or with a token) on each replica. */
export async function views(replicas: readonly Replica[], token?: string): Promise<View[]> {
  return Promise.all(
    replicas.map(async (r) => {
      const res = await call(r.url, 'GET', '/', { token });
      return {
        replica: r.id,
        status: res.status,
        body: res.text,
        etag: res.headers?.get('etag') ?? null,
        index: res.headers?.get('x-registry-index') ?? null,
        hidden: res.headers?.get('x-hidden-tools') ?? null,
      };
    }),
  );
}

/**
 * A write through `via`, retried (while it answers 503 or nothing) until it is acknowledged:
 * returns its X-Registry-Index. Written last, it marks the end of the topic: every replica that
 * shows its index has applied everything.
 */
export async function barrier(via: Replica, token: string, timeoutMs = 90_000): Promise<number> {
  const name = `barrier-${randomUUID().slice(0, 8)}`;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call(via.url, 'PUT', `/tools/${name}`, { token, body: httpTool(name, 'the end of the writes', []) });
    if (res.status === 201 || res.status === 200) return Number(res.headers?.get('x-registry-index'));
    if (res.status !== 503 && res.status !== 0) throw new Error(`the barrier write answered ${res.status}: ${res.text}`);
    if (Date.now() > deadline)
      throw new Error(`the barrier write was not taken within ${timeoutMs} ms: ${res.status} ${res.text || res.error}\n${via.logs()}`);
    await sleep(250);
  }
}

/** Waits until every replica's GET / shows at least `index`; returns the last views. */
export async function waitForIndex(replicas: readonly Replica[], index: number, timeoutMs = 60_000): Promise<View[]> {
  let seen: View[] = [];
  try {
    return await vi.waitFor(
      async () => {
        seen = await views(replicas);
        if (!seen.every((v) => v.status === 200 && Number(v.index) >= index)) throw new Error('not there yet');
        return seen;
      },
      { timeout: timeoutMs, interval: 200 },
    );
  } catch {
    const states = await Promise.all(replicas.map((r) => r.readiness()));
    throw new Error(
      `not every replica reached index ${index} within ${timeoutMs} ms: ${seen.map((v, i) => `${v.replica}=${v.index} (${v.status}; readyz ${JSON.stringify(states[i])})`).join(', ')}\n${replicas.map((r) => r.logs(15)).join('\n')}`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// The workload

/** What the acknowledged writes say about a name. */
export type Expected = { state: 'present'; description: string; kind: 'http' | 'bus' } | { state: 'absent' } | { state: 'unknown' };

export interface WriteRecord {
  writer: number;
  name: string;
  op: 'put' | 'delete';
  kind?: 'http' | 'bus';
  description?: string;
  replica: string;
  /** Date.now() when sent. */
  startedAt: number;
  ms: number;
  /** 0: no answer. */
  status: number;
  code: string | undefined;
  contentType: string | null;
  retryAfter: string | null;
  /** Whether the answer decides the write: 2xx, or 404 for a delete of a name that is not live. */
  acknowledged: boolean;
}

export interface WorkloadOptions {
  /** Tool names per writer: each name is written by one writer only, one write at a time. */
  names: readonly (readonly string[])[];
  /** A live tool service for the message-bus tools. */
  service: string;
  token: string;
  /** The replicas to write to now. */
  targets: () => readonly Replica[];
  /** Pause after a write that got no decision (503 or nothing), so an outage is not a busy loop. */
  pauseAfterFailureMs?: number;
}

const SCOPE_MIX: readonly (readonly string[])[] = [[], ['alpha:read'], ['beta:read'], ['alpha:read', 'beta:read'], ['gamma:admin']];

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)] as T;

/**
 * Writers registering, re-registering and deleting tools (HTTP ones with a mix of scopes, and
 * message-bus tools on one service) through the target replicas. Each name belongs to one
 * writer, which waits for each answer before its next write, so a name's acknowledged writes
 * are in topic order and the model says what each must answer (201 or 200 for a put, 200 or 404
 * for a delete) and what must be left at the end. A write without a decision (503, or no answer
 * because its replica was killed) may or may not have happened: its name is `unknown` until the
 * next acknowledged write of it.
 */
export class Workload {
  readonly records: WriteRecord[] = [];
  /** Answers the model says are wrong, and answers no write here should get. */
  readonly problems: string[] = [];
  readonly #model = new Map<string, Expected>();
  readonly #options: WorkloadOptions;
  #stopping = false;
  #loops: Promise<void>[] = [];
  #seq = 0;

  constructor(options: WorkloadOptions) {
    this.#options = options;
    for (const names of options.names) for (const name of names) this.#model.set(name, { state: 'absent' });
  }

  get acknowledged(): number {
    return this.records.filter((r) => r.acknowledged).length;
  }

  /** The model: what each name's acknowledged writes leave. */
  get expected(): ReadonlyMap<string, Expected> {
    return this.#model;
  }

  start(): void {
    this.#stopping = false;
    this.#loops = this.#options.names.map((names, writer) => this.#run(writer, names));
  }

  /** Stops the writers and waits for their last answers. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#loops);
  }

  /** Waits until `predicate` holds, while the writers write. */
  async until(predicate: () => boolean, what: string, timeoutMs = 90_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) {
        const last = this.records.slice(-5).map((r) => `${r.op} ${r.name} via ${r.replica}: ${r.status} ${r.code ?? ''}`);
        throw new Error(
          `workload: ${what} not within ${timeoutMs} ms (${this.acknowledged} acknowledged of ${this.records.length}; last: ${last.join('; ')})`,
        );
      }
      await sleep(50);
    }
  }

  async #run(writer: number, names: readonly string[]): Promise<void> {
    const pause = this.#options.pauseAfterFailureMs ?? 100;
    while (!this.#stopping) {
      const targets = this.#options.targets();
      if (targets.length === 0) {
        await sleep(50);
        continue;
      }
      const replica = pick(targets);
      const name = pick(names);
      const before = this.#model.get(name) ?? { state: 'unknown' };
      const r = Math.random();
      const remove = before.state === 'present' ? r < 0.3 : before.state === 'absent' ? r < 0.05 : r < 0.5;
      const record = remove ? await this.#delete(writer, replica, name) : await this.#put(writer, replica, name);
      this.records.push(record);
      this.#decide(record, before);
      if (!record.acknowledged) await sleep(pause);
    }
  }

  async #put(writer: number, replica: Replica, name: string): Promise<WriteRecord> {
    const kind = Math.random() < 0.3 ? 'bus' : 'http';
    const description = `${name} version ${++this.#seq} written via ${replica.id}`;
    const scopes = pick(SCOPE_MIX);
    const body = kind === 'bus' ? busTool(name, description, this.#options.service, scopes) : httpTool(name, description, scopes);
    // Both routes of a put: the article's POST /tools/register and PUT /tools/{name}.
    const startedAt = Date.now();
    const res =
      Math.random() < 0.5
        ? await call(replica.url, 'POST', '/tools/register', { token: this.#options.token, body })
        : await call(replica.url, 'PUT', `/tools/${name}`, { token: this.#options.token, body });
    return {
      ...this.#base(writer, replica, name, startedAt, res),
      op: 'put',
      kind,
      description,
      acknowledged: res.status >= 200 && res.status < 300,
    };
  }

  async #delete(writer: number, replica: Replica, name: string): Promise<WriteRecord> {
    const startedAt = Date.now();
    const res = await call(replica.url, 'DELETE', `/tools/${name}`, { token: this.#options.token });
    const acknowledged = (res.status >= 200 && res.status < 300) || (res.status === 404 && res.code === 'TR_ERR_NOT_FOUND');
    return { ...this.#base(writer, replica, name, startedAt, res), op: 'delete', acknowledged };
  }

  #base(writer: number, replica: Replica, name: string, startedAt: number, res: HttpResult) {
    return {
      writer,
      name,
      replica: replica.id,
      startedAt,
      ms: res.ms,
      status: res.status,
      code: res.code,
      contentType: res.headers?.get('content-type') ?? null,
      retryAfter: res.headers?.get('retry-after') ?? null,
    };
  }

  /** Checks the answer against the model, then moves the model on. */
  #decide(w: WriteRecord, before: Expected): void {
    const where = `${w.op} ${w.name} via ${w.replica} (writer ${w.writer}, model: ${before.state})`;
    if (w.acknowledged) {
      const want =
        before.state === 'unknown'
          ? undefined
          : w.op === 'put'
            ? before.state === 'present'
              ? 200
              : 201
            : before.state === 'present'
              ? 200
              : 404;
      if (want !== undefined && w.status !== want)
        this.problems.push(`${where} answered ${w.status}, where its earlier acknowledged writes say ${want}`);
      this.#model.set(
        w.name,
        w.op === 'put' ? { state: 'present', description: w.description ?? '', kind: w.kind ?? 'http' } : { state: 'absent' },
      );
      return;
    }
    // No decision: the write may or may not take effect.
    this.#model.set(w.name, { state: 'unknown' });
    if (w.status === 0 || (w.status === 503 && w.code === 'TR_ERR_UNAVAILABLE')) return;
    this.problems.push(`${where} answered ${w.status} ${w.code ?? ''}: no write of this workload should`);
  }
}

/** Every name of the model checked against a GET / body (anonymous, ANONYMOUS_DISCOVERY=full: every live tool). */
export function checkAgainstModel(
  expected: ReadonlyMap<string, Expected>,
  discoveryBody: string,
): { checked: number; skipped: number; problems: string[] } {
  const tools = new Map((JSON.parse(discoveryBody) as { tools: { name: string; description: string }[] }).tools.map((t) => [t.name, t]));
  const problems: string[] = [];
  let checked = 0;
  let skipped = 0;
  for (const [name, want] of expected) {
    if (want.state === 'unknown') {
      skipped++;
      continue;
    }
    checked++;
    const got = tools.get(name);
    if (want.state === 'absent' && got) problems.push(`${name}: deleted by its last acknowledged write, but listed ("${got.description}")`);
    if (want.state === 'present' && !got)
      problems.push(`${name}: put by its last acknowledged write ("${want.description}"), but not listed`);
    if (want.state === 'present' && got && got.description !== want.description)
      problems.push(`${name}: listed as "${got.description}", but its last acknowledged write put "${want.description}"`);
  }
  return { checked, skipped, problems };
}
