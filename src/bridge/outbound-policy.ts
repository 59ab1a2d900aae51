/**
 * The outbound address policy: where the registry may connect on an operator's word (HTTP tool
 * hosts, MCP server URLs, and every later kind of target). Checked twice: at registration on
 * the host as written (names are not resolved while a write runs), and at every connection on
 * the addresses the name resolved to, connecting only to an address that passed
 * (src/bridge/outbound-fetch.ts), so that a name that later resolves elsewhere (DNS rebinding)
 * gains nothing.
 *
 * Refused by default: link-local, cloud metadata names and addresses, the unspecified
 * addresses, multicast and broadcast. Loopback and private networks stay allowed: tool hosts
 * live there. OUTBOUND_ALLOW and OUTBOUND_DENY (CIDRs and host names) widen and narrow that:
 * of the rules that match a target, the most specific decides (the longest prefix; a name rule
 * is more specific than any CIDR, an exact name than a `*.` pattern); at equal specificity a
 * setting's rule beats a default one, and between settings deny beats allow. No rule matching:
 * allowed. Whatever the rules say, the registry's own listening port on one of its own
 * addresses is refused: a tool pointing at the registry's own invoke route would call itself
 * over and over, each time with the caller's token. So is PUBLIC_URL's port (as PUBLIC_URL
 * gives it, else 80 or 443) at PUBLIC_URL's host, as written and, when it is a name, at every
 * address it resolves to (a proxy in front of the registry, reached by its IP or another name):
 * at call time always, the name looked up through the same resolver and its answer kept for 30
 * seconds; at registration only from the answer at hand (looked up when the registry starts
 * listening, refreshed in the background), since a write never waits on DNS, so a literal IP
 * registered before any answer came is refused at its first call instead.
 */
import { lookup } from 'node:dns/promises';
import { hostname as machineName, networkInterfaces } from 'node:os';
import {
  embeddedIpv4,
  formatHost,
  formatIp,
  inNetwork,
  nameMatches,
  normaliseHost,
  parseIp,
  parseOutboundRule,
  type IpAddress,
  type NormalHost,
  type OutboundRule,
} from '../model/outbound-address.js';
import { TargetRefusedError } from './errors.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to its addresses (default: the system resolver, as node's connections use). */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export interface OutboundPolicyOptions {
  /** OUTBOUND_ALLOW. */
  allow: readonly OutboundRule[];
  /** OUTBOUND_DENY. */
  deny: readonly OutboundRule[];
  /** HOST: the address (or name) the registry listens on. */
  host: string;
  /** PUBLIC_URL: where agents reach the registry (through a proxy, say); its host and port are the registry's own too. */
  publicUrl?: URL | undefined;
  resolve?: Resolver;
  /** This machine's addresses (default: its interfaces' addresses, read at each check). */
  interfaceAddresses?: () => readonly string[];
}

type Source = 'OUTBOUND_ALLOW' | 'OUTBOUND_DENY' | 'default';

interface PolicyRule {
  rule: OutboundRule;
  action: 'allow' | 'deny';
  source: Source;
  /** What a default rule keeps out, in words. */
  label?: string;
}

/** The rules in force without settings: each denies; the most specific matching rule decides. */
const DEFAULT_DENY: readonly (readonly [rule: string, label: string])[] = [
  ['0.0.0.0/8', 'the unspecified address ("this network")'],
  ['169.254.0.0/16', 'link-local'],
  ['169.254.169.254/32', 'cloud metadata'],
  ['100.100.100.200/32', 'cloud metadata (Alibaba Cloud)'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['::/128', 'the unspecified address'],
  ['fe80::/10', 'link-local'],
  ['ff00::/8', 'multicast'],
  ['fd00:ec2::254/128', 'cloud metadata (AWS)'],
  ['metadata.google.internal', 'cloud metadata (Google Cloud)'],
  ['metadata.goog', 'cloud metadata (Google Cloud)'],
];

function defaultRules(): PolicyRule[] {
  return DEFAULT_DENY.map(([text, label]) => {
    const rule = parseOutboundRule(text);
    if (typeof rule === 'string') throw new Error(`default outbound rule ${rule}`);
    return { rule, action: 'deny', source: 'default', label };
  });
}

/** What the policy compares: the name as written or asked for, the address connected to, the port. */
interface Target {
  name?: string;
  ip?: IpAddress;
  port: number;
}

/** A name rule outranks every CIDR (at most /128); an exact name, a `*.` pattern. */
function specificity(rule: OutboundRule, target: Target): number | undefined {
  if (rule.kind === 'cidr') return target.ip !== undefined && inNetwork(target.ip, rule) ? rule.prefix : undefined;
  if (target.name === undefined || !nameMatches(target.name, rule)) return undefined;
  return rule.wildcard ? 1000 + rule.name.length : 2000;
}

/** Among rules of equal specificity: a setting's beats a default, and deny beats allow. */
const rank = (r: PolicyRule) => (r.source === 'default' ? 0 : 2) + (r.action === 'deny' ? 1 : 0);

const LOOPBACK_V4 = parseOutboundRule('127.0.0.0/8') as Extract<OutboundRule, { kind: 'cidr' }>;
const UNSPECIFIED_V4 = parseOutboundRule('0.0.0.0/8') as Extract<OutboundRule, { kind: 'cidr' }>;

/** An address as text, with the IPv4 address it carries, which is what the policy compared. */
function shownIp(ip: IpAddress): string {
  const carried = embeddedIpv4(ip);
  return carried === ip ? formatIp(ip) : `${formatIp(ip)} (read as ${formatIp(carried)})`;
}

const sameIp = (a: IpAddress, b: IpAddress) => a.family === b.family && a.value === b.value;

/** How long the addresses PUBLIC_URL's host name resolves to are reused. */
const PUBLIC_ADDRESSES_TTL_MS = 30_000;

const systemResolver: Resolver = async (hostname) => {
  const addresses = await lookup(hostname, { all: true });
  return addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

const machineAddresses = () =>
  Object.values(networkInterfaces())
    .flat()
    .flatMap((info) => (info ? [info.address] : []));

export class OutboundPolicy {
  readonly #rules: PolicyRule[];
  readonly #resolve: Resolver;
  readonly #interfaceAddresses: () => readonly string[];
  readonly #host: NormalHost | undefined;
  readonly #public: { host: NormalHost; port: number } | undefined;
  /** The ports the registry listens on, once it does. */
  readonly #ports = new Set<number>();
  /** The addresses PUBLIC_URL's host name resolved to last, and when (none while it is an IP or was never looked up). */
  #publicAddresses: { ips: readonly IpAddress[]; at: number } | undefined;
  #publicLookup: Promise<readonly IpAddress[]> | undefined;

  constructor(options: OutboundPolicyOptions) {
    this.#rules = [
      ...options.deny.map((rule): PolicyRule => ({ rule, action: 'deny', source: 'OUTBOUND_DENY' })),
      ...options.allow.map((rule): PolicyRule => ({ rule, action: 'allow', source: 'OUTBOUND_ALLOW' })),
      ...defaultRules(),
    ];
    this.#resolve = options.resolve ?? systemResolver;
    this.#interfaceAddresses = options.interfaceAddresses ?? machineAddresses;
    this.#host = normaliseHost(options.host);
    const publicHost = options.publicUrl && normaliseHost(options.publicUrl.hostname);
    if (options.publicUrl && publicHost) {
      const port = options.publicUrl.port !== '' ? Number(options.publicUrl.port) : options.publicUrl.protocol === 'https:' ? 443 : 80;
      this.#public = { host: publicHost, port };
    }
  }

  /** The registry listens on this port now (the bound one: PORT=0 picks it at listen). */
  listening(port: number): void {
    this.#ports.add(port);
    // So that registrations find PUBLIC_URL's addresses at hand.
    void this.#publicIps();
  }

  /**
   * The addresses PUBLIC_URL's host name resolves to (none when it is an IP: the rule compares
   * that as written), looked up at most every 30 s and single-flight. A failed lookup keeps the
   * last answer (none before any): PUBLIC_URL's name not resolving here would refuse nothing.
   */
  #publicIps(): Promise<readonly IpAddress[]> {
    const pub = this.#public;
    if (pub?.host.kind !== 'name') return Promise.resolve([]);
    const cached = this.#publicAddresses;
    if (cached && Date.now() - cached.at < PUBLIC_ADDRESSES_TTL_MS) return Promise.resolve(cached.ips);
    const name = pub.host.name;
    this.#publicLookup ??= this.#resolve(name)
      .then(
        (resolved) => resolved.flatMap(({ address }) => parseIp(address) ?? []),
        () => this.#publicAddresses?.ips ?? [],
      )
      .then((ips) => {
        this.#publicAddresses = { ips, at: Date.now() };
        return ips;
      })
      .finally(() => {
        this.#publicLookup = undefined;
      });
    return this.#publicLookup;
  }

  /** For a write, which never waits on DNS: the last answer, however old, with a fresh lookup started when it is stale. */
  #publicIpsAtHand(): readonly IpAddress[] {
    if (this.#public?.host.kind !== 'name') return [];
    const cached = this.#publicAddresses;
    if (!cached || Date.now() - cached.at >= PUBLIC_ADDRESSES_TTL_MS) void this.#publicIps();
    return cached?.ips ?? [];
  }

  /**
   * The check at registration, on the host as written: why it is refused, or undefined. A name
   * meets the name rules here and its addresses the CIDR rules at every call.
   */
  readonly check = (target: { host: string; port: number }): string | undefined => this.#checkWritten(target, true);

  /**
   * The same without the self rule, for replicated mode: every replica must decide a write
   * alike, and each listens at its own address; the self rule holds at call time on each.
   */
  readonly checkRules = (target: { host: string; port: number }): string | undefined => this.#checkWritten(target, false);

  #checkWritten(target: { host: string; port: number }, self: boolean): string | undefined {
    const host = normaliseHost(target.host);
    if (host === undefined) return `${target.host} is not a host name or IP address a URL can have`;
    const written = host.kind === 'ip' ? { ip: host.ip, port: target.port } : { name: host.name, port: target.port };
    // A literal IP at PUBLIC_URL's port meets the addresses its name resolved to, as far as they are known now.
    const publicIps = self && host.kind === 'ip' && target.port === this.#public?.port ? this.#publicIpsAtHand() : [];
    const refusal = (self ? this.#selfRefusal(written, publicIps) : undefined) ?? this.#ruleRefusal(written);
    if (refusal === undefined) return undefined;
    const shown = formatHost(host);
    const as = shown === target.host.toLowerCase().replace(/^\[|\]$/g, '') ? '' : ` (read as ${shown})`;
    return `${target.host}${as} port ${target.port} is refused by the outbound address policy: ${refusal}`;
  }

  /**
   * The addresses a connection to `host`:`port` may use, in the resolver's order: each address
   * the name resolves to is checked, and the refused ones left out. Throws TargetRefusedError
   * when none is left (or the name itself is refused).
   */
  async addressesFor(host: string, port: number): Promise<IpAddress[]> {
    const normal = normaliseHost(host);
    if (normal === undefined) throw new TargetRefusedError(`${host} is not a host name or IP address a URL can have`);
    // At PUBLIC_URL's port, the addresses its name resolves to are the registry's own.
    const publicIps = port === this.#public?.port ? this.#publicIps() : Promise.resolve([]);
    if (normal.kind === 'ip') {
      const refusal = this.#refusal({ ip: normal.ip, port }, await publicIps);
      if (refusal !== undefined)
        throw new TargetRefusedError(`${formatIp(normal.ip)} port ${port} is refused by the outbound address policy: ${refusal}`);
      return [normal.ip];
    }
    const name = normal.name;
    // A name the rules refuse is not even looked up.
    const refusedName = this.#selfRefusal({ name, port }) ?? this.#ruleRefusal({ name, port });
    if (refusedName !== undefined)
      throw new TargetRefusedError(`${name} port ${port} is refused by the outbound address policy: ${refusedName}`);
    const [resolved, own] = await Promise.all([this.#resolve(name), publicIps]);
    const allowed: IpAddress[] = [];
    let first: string | undefined;
    for (const { address } of resolved) {
      const ip = parseIp(address);
      if (ip === undefined) continue;
      const refusal = this.#refusal({ name, ip, port }, own);
      if (refusal === undefined) allowed.push(ip);
      else first ??= `${name} resolved to ${shownIp(ip)}, and port ${port} there is refused by the outbound address policy: ${refusal}`;
    }
    if (allowed.length > 0) return allowed;
    throw new TargetRefusedError(first ?? `${name} resolved to no address`);
  }

  #refusal(target: Target, publicIps: readonly IpAddress[]): string | undefined {
    return this.#selfRefusal(target, publicIps) ?? this.#ruleRefusal(target);
  }

  /** The most specific matching rule, when it denies: in words, naming it and where it comes from. */
  #ruleRefusal(target: Target): string | undefined {
    let best: { rule: PolicyRule; specificity: number } | undefined;
    for (const rule of this.#rules) {
      const s = specificity(rule.rule, target);
      if (s === undefined) continue;
      if (!best || s > best.specificity || (s === best.specificity && rank(rule) > rank(best.rule))) best = { rule, specificity: s };
    }
    if (!best || best.rule.action === 'allow') return undefined;
    const { rule, source, label } = best.rule;
    if (source === 'default') return `${label} (${rule.text}) is refused by default; OUTBOUND_ALLOW can let it through`;
    return `${source} has ${rule.text}`;
  }

  /**
   * The registry's own listening port on one of its own addresses (loopback, unspecified, an
   * interface's, HOST), or PUBLIC_URL's host and port, the host as written or (`publicIps`) an
   * address its name resolves to: refused whatever the settings say.
   */
  #selfRefusal(target: Target, publicIps: readonly IpAddress[] = []): string | undefined {
    const refusal = "that is the registry's own address and port (a tool there would call the registry itself); no setting allows it";
    const pub = this.#public;
    if (pub && target.port === pub.port && this.#isHost(pub.host, target)) return refusal;
    if (pub && target.port === pub.port && target.ip !== undefined) {
      const ip = embeddedIpv4(target.ip);
      if (publicIps.some((own) => sameIp(embeddedIpv4(own), ip))) {
        return `that is an address PUBLIC_URL's host ${formatHost(pub.host)} resolves to, at its port (a tool there would call the registry itself, through PUBLIC_URL); no setting allows it`;
      }
    }
    if (!this.#ports.has(target.port)) return undefined;
    if (target.name !== undefined) {
      const name = target.name;
      if (name === 'localhost' || name.endsWith('.localhost') || name === machineName().toLowerCase()) return refusal;
    }
    if (this.#host && this.#isHost(this.#host, target)) return refusal;
    const ip = target.ip && embeddedIpv4(target.ip);
    if (ip === undefined) return undefined;
    const local = ip.family === 4 ? inNetwork(ip, LOOPBACK_V4) || inNetwork(ip, UNSPECIFIED_V4) : ip.value <= 1n; // :: and ::1
    if (local) return refusal;
    for (const address of this.#interfaceAddresses()) {
      const own = parseIp(address);
      if (own && sameIp(embeddedIpv4(own), ip)) return refusal;
    }
    return undefined;
  }

  #isHost(host: NormalHost, target: Target): boolean {
    if (host.kind === 'name') return target.name === host.name;
    return target.ip !== undefined && sameIp(embeddedIpv4(target.ip), host.ip);
  }
}
