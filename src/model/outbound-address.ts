/**
 * Addresses the registry connects to on an operator's word, as the outbound address policy
 * (src/bridge/outbound-policy.ts) compares them: every spelling of a host reduced to one form,
 * the policy's rules (OUTBOUND_ALLOW, OUTBOUND_DENY: CIDRs and host names) parsed, and the
 * targets a descriptor names. Pure code: the settings parse these at startup, the write side
 * names the targets, and the bridge decides.
 *
 * A host is reduced the way the URL the registry builds from it will be (the WHATWG parser's
 * host parsing, which node's fetch uses): decimal, octal, hex and short IPv4 forms
 * (`2130706433`, `0x7f.1`, `017700000001`) become dotted quads, IPv6 is lowercased and
 * compressed, names are lowercased (IDNs to punycode) and lose their trailing dots. An IPv6
 * address that carries an IPv4 address (mapped `::ffff:a.b.c.d`, compatible `::a.b.c.d`, NAT64
 * `64:ff9b::a.b.c.d`) is compared as that IPv4 address: that is where a connection to it goes.
 */

/** An IP address: 32 bits for IPv4, 128 for IPv6. */
export interface IpAddress {
  family: 4 | 6;
  value: bigint;
}

/** A host as the policy compares it: an address, or a name (lowercase, no trailing dot). */
export type NormalHost = { kind: 'ip'; ip: IpAddress } | { kind: 'name'; name: string };

/** A rule of OUTBOUND_ALLOW or OUTBOUND_DENY, or a default one. */
export type OutboundRule =
  | { kind: 'cidr'; family: 4 | 6; base: bigint; prefix: number; text: string }
  /** `wildcard`: `*.example.com`, which matches the names under example.com (not example.com itself). */
  | { kind: 'name'; name: string; wildcard: boolean; text: string };

/** A place a descriptor connects to, with the path of its field in the body. */
export interface OutboundTarget {
  path: string;
  host: string;
  port: number;
}

/**
 * The write side's check of a target at registration (no name is resolved then): why the
 * target is refused, or undefined. The bridge's outbound policy is one.
 */
export type OutboundCheck = (target: { host: string; port: number }) => string | undefined;

const bits = (family: 4 | 6) => (family === 4 ? 32 : 128);

/** a.b.c.d, each 0-255 in decimal without leading zeros (what the URL parser and the resolver give). */
function parseDottedQuad(text: string): number | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!/^(0|[1-9]\d{0,2})$/.test(part) || Number(part) > 255) return undefined;
    value = value * 256 + Number(part);
  }
  return value;
}

/** An IPv6 address in text, with an optional dotted IPv4 tail and zone (`%eth0`, dropped). */
function parseIpv6(text: string): bigint | undefined {
  let s = text.toLowerCase();
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  const lastColon = s.lastIndexOf(':');
  if (lastColon < 0) return undefined;
  if (s.includes('.', lastColon)) {
    const v4 = parseDottedQuad(s.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    s = `${s.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string) => (half === '' ? [] : half.split(':'));
  const head = groupsOf(halves[0] ?? '');
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '') : [];
  const given = head.length + tail.length;
  if (halves.length === 2 ? given > 7 : given !== 8) return undefined;
  const groups = [...head, ...Array<string>(8 - given).fill('0'), ...tail];
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(group)) return undefined;
    value = (value << 16n) | BigInt(parseInt(group, 16));
  }
  return value;
}

/** An address in the text a resolver or an interface list gives (`10.0.0.1`, `fe80::1%eth0`, `::ffff:1.2.3.4`). */
export function parseIp(text: string): IpAddress | undefined {
  const v4 = parseDottedQuad(text);
  if (v4 !== undefined) return { family: 4, value: BigInt(v4) };
  const unbracketed = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  const v6 = parseIpv6(unbracketed);
  return v6 === undefined ? undefined : { family: 6, value: v6 };
}

const MAPPED = 0xffffn << 32n; // ::ffff:0:0/96
const NAT64 = 0x64ff9bn << 96n; // 64:ff9b::/96
const LOW_32 = 0xffffffffn;

/** The IPv4 address an IPv6 address carries (mapped, compatible or NAT64), else the address itself. */
export function embeddedIpv4(ip: IpAddress): IpAddress {
  if (ip.family === 4) return ip;
  const high = ip.value >> 32n;
  // :: and ::1 are IPv6's own unspecified and loopback addresses, not compatible ones.
  const compatible = high === 0n && ip.value > 1n;
  if (compatible || high === MAPPED >> 32n || high === NAT64 >> 32n) return { family: 4, value: ip.value & LOW_32 };
  return ip;
}

export function formatIp(ip: IpAddress): string {
  if (ip.family === 4) return [24n, 16n, 8n, 0n].map((shift) => String((ip.value >> shift) & 0xffn)).join('.');
  const groups = Array.from({ length: 8 }, (_, i) => Number((ip.value >> BigInt(112 - 16 * i)) & 0xffffn));
  // The longest run of two or more zero groups becomes "::" (RFC 5952).
  let best = { at: -1, length: 1 };
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.length) best = { at: i, length: j - i };
    i = j === i ? i + 1 : j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.length).join(':')}`;
}

/**
 * A host (a name or an address, IPv6 in brackets or not) as the URL parser reads it, reduced as
 * the header says; undefined when no URL could have it as its host.
 */
export function normaliseHost(host: string): NormalHost | undefined {
  const bare = host.startsWith('[') ? host : host.includes(':') ? `[${host}]` : host;
  const parsed = URL.parse(`http://${bare}/`);
  if (
    parsed === null ||
    parsed.hostname === '' ||
    parsed.pathname !== '/' ||
    parsed.port !== '' ||
    parsed.username !== '' ||
    parsed.search !== '' ||
    parsed.hash !== ''
  )
    return undefined;
  return normaliseHostname(parsed.hostname);
}

/** A URL's `hostname` (already parsed by the URL parser), reduced as the header says. */
function normaliseHostname(hostname: string): NormalHost | undefined {
  if (hostname.startsWith('[')) {
    const ip = parseIp(hostname);
    return ip && { kind: 'ip', ip: embeddedIpv4(ip) };
  }
  const v4 = parseDottedQuad(hostname);
  if (v4 !== undefined) return { kind: 'ip', ip: { family: 4, value: BigInt(v4) } };
  const name = hostname.toLowerCase().replace(/\.+$/, '');
  return name === '' ? undefined : { kind: 'name', name };
}

/** A normal host as text: the address or the name. */
export function formatHost(host: NormalHost): string {
  return host.kind === 'ip' ? formatIp(host.ip) : host.name;
}

const LABEL = '[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?';
const NAME_PATTERN = new RegExp(`^${LABEL}(\\.${LABEL})*$`);

/**
 * One entry of OUTBOUND_ALLOW or OUTBOUND_DENY: a CIDR (`10.20.0.0/16`, `fd00::/8`), an address
 * (a /32 or /128), a host name (`metadata.internal`) or names under a domain (`*.corp.example`).
 * Returns the rule, or why the entry is not one.
 */
export function parseOutboundRule(text: string): OutboundRule | string {
  const slash = text.indexOf('/');
  const hostText = slash < 0 ? text : text.slice(0, slash);
  if (hostText.startsWith('*.')) {
    if (slash >= 0) return `"${text}": a name pattern takes no prefix length`;
    const name = hostText.slice(2).toLowerCase().replace(/\.$/, '');
    if (!NAME_PATTERN.test(name)) return `"${text}" is not a host name pattern such as *.corp.example`;
    return { kind: 'name', name, wildcard: true, text };
  }
  const host = normaliseHost(hostText);
  if (host === undefined) return `"${text}" is not a CIDR, an IP address or a host name`;
  if (host.kind === 'name') {
    if (slash >= 0 || !NAME_PATTERN.test(host.name)) return `"${text}" is not a CIDR, an IP address or a host name`;
    return { kind: 'name', name: host.name, wildcard: false, text };
  }
  // A mapped IPv6 network is the IPv4 network it carries (the address is compared that way).
  const written = parseIp(hostText);
  const ip = host.ip;
  const carried = written?.family === 6 && ip.family === 4 ? 96 : 0;
  const width = bits(ip.family);
  let prefix = width;
  if (slash >= 0) {
    const length = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(length) || Number(length) > carried + width)
      return `"${text}": the prefix length must be 0 to ${carried + width}`;
    prefix = Number(length) - carried;
    if (prefix < 0)
      return `"${text}": a prefix shorter than /96 over an IPv4-mapped address spans more than IPv4; give an IPv6 CIDR without the IPv4 part`;
  }
  if ((ip.value & ~networkMask(ip.family, prefix)) !== 0n) {
    const base = formatIp({ family: ip.family, value: ip.value & networkMask(ip.family, prefix) });
    return `"${text}" has address bits set past its prefix (did you mean ${base}/${prefix}?)`;
  }
  return { kind: 'cidr', family: ip.family, base: ip.value, prefix, text };
}

function networkMask(family: 4 | 6, prefix: number): bigint {
  const width = BigInt(bits(family));
  const all = (1n << width) - 1n;
  return prefix === 0 ? 0n : (all >> (width - BigInt(prefix))) << (width - BigInt(prefix));
}

/** Whether an address (compared as its embedded IPv4 one) is in a CIDR rule's network. */
export function inNetwork(ip: IpAddress, rule: Extract<OutboundRule, { kind: 'cidr' }>): boolean {
  const address = embeddedIpv4(ip);
  return address.family === rule.family && (address.value & networkMask(rule.family, rule.prefix)) === rule.base;
}

/** Whether a name (normal: lowercase, no trailing dot) is a name rule's, or under its domain. */
export function nameMatches(name: string, rule: Extract<OutboundRule, { kind: 'name' }>): boolean {
  return rule.wildcard ? name.endsWith(`.${rule.name}`) : name === rule.name;
}

/**
 * The places a descriptor makes the registry connect to: an HTTP tool's host and port, an MCP
 * server's URL. Later kinds of targets (OpenAPI base URLs) add theirs here.
 */
export function outboundTargetsOf(
  kind: 'http-tool',
  descriptor: { host?: string | undefined; port?: number | undefined; target?: { baseUrl: string } | undefined },
): OutboundTarget[];
export function outboundTargetsOf(kind: 'mcp-server', descriptor: { url: string }): OutboundTarget[];
export function outboundTargetsOf(
  kind: 'http-tool' | 'mcp-server',
  descriptor: { host?: string | undefined; port?: number | undefined; target?: { baseUrl: string } | undefined } | { url: string },
): OutboundTarget[] {
  if (kind === 'http-tool') {
    const { host, port, target } = descriptor as { host?: string; port?: number; target?: { baseUrl: string } };
    // A full target (issue 30): its base URL's host and port (the scheme's when it names none).
    if (target !== undefined) return [urlTarget('target.baseUrl', target.baseUrl)];
    return [{ path: 'host', host: host ?? 'localhost', port: port ?? 8002 }];
  }
  return [urlTarget('url', (descriptor as { url: string }).url)];
}

/** A URL's host and port (the scheme's default port when it gives none). */
function urlTarget(path: string, url: string): OutboundTarget {
  const parsed = new URL(url);
  const port = parsed.port !== '' ? Number(parsed.port) : parsed.protocol === 'https:' ? 443 : 80;
  return { path, host: parsed.hostname, port };
}
