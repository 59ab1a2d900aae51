/**
 * `fetch` for the registry's calls to targets operators registered (HTTP tools, upstream MCP
 * servers): undici's, over an Agent whose connector asks the outbound address policy first.
 * The connector resolves the host, has each address checked (src/bridge/outbound-policy.ts)
 * and connects to exactly an address that passed, trying the next one that passed when a
 * connection fails (a name with IPv6 and IPv4 addresses, a host listening on one of them). A
 * pooled connection stays on the address it was checked at; each new one is checked again, so
 * a name that resolves elsewhere later (DNS rebinding) is checked where it then points.
 *
 * The Host header and TLS (its server name and certificate check) keep the name: only the
 * socket's address comes from the check. The global fetch has no such hook (its `dispatcher`
 * option wants an Agent of its own bundled undici), hence the `undici` package, 7.x, which
 * supports Node 20.18 and later.
 */
import { rootCertificates } from 'node:tls';
import { Agent, buildConnector, fetch as undiciFetch } from 'undici';
import { formatIp, type IpAddress } from '../model/outbound-address.js';
import { TargetRefusedError } from './errors.js';
import type { OutboundPolicy } from './outbound-policy.js';

/** What the transports call: the global fetch's shape. */
export type OutboundFetch = (input: string | URL, init?: RequestInit) => Promise<Response>;

type Connect = buildConnector.connector;

/** Connects to the first address that takes the connection; the last failure when none does. */
function connectFirst(
  base: Connect,
  options: buildConnector.Options,
  addresses: readonly IpAddress[],
  callback: buildConnector.Callback,
  at = 0,
): void {
  const ip = addresses[at] as IpAddress;
  base({ ...options, hostname: formatIp(ip) }, (...result) => {
    if (result[0] !== null && at + 1 < addresses.length) return connectFirst(base, options, addresses, callback, at + 1);
    callback(...result);
  });
}

export class GuardedFetch {
  readonly #agent: Agent;

  /** `ca`: PEM certificates trusted beside Node's roots (OUTBOUND_CA_FILE); certificates are always verified. */
  constructor(policy: OutboundPolicy, ca: readonly string[] = []) {
    const base = buildConnector(ca.length === 0 ? {} : { ca: [...rootCertificates, ...ca], rejectUnauthorized: true });
    const connect: Connect = (options, callback) => {
      const port = options.port !== '' ? Number(options.port) : options.protocol === 'https:' ? 443 : 80;
      policy.addressesFor(options.hostname, port).then(
        (addresses) => connectFirst(base, options, addresses, callback),
        (err: unknown) => callback(err instanceof Error ? err : new Error(String(err)), null),
      );
    };
    this.#agent = new Agent({ connect });
  }

  /** The global fetch's behaviour, through the checked connector. */
  readonly fetch: OutboundFetch = (input, init) =>
    undiciFetch(input, { ...init, dispatcher: this.#agent } as Parameters<typeof undiciFetch>[1]) as unknown as Promise<Response>;

  /** Drops every connection; calls still running fail. */
  close(): Promise<void> {
    return this.#agent.destroy();
  }
}

/** The policy's refusal when a failed fetch was one, else undefined (undici's `fetch failed` carries it as its cause). */
export function refusalOf(err: unknown): TargetRefusedError | undefined {
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  return cause instanceof TargetRefusedError ? cause : undefined;
}
