/**
 * Issue 28, the outbound address policy as units: every spelling of a host reduced to one form,
 * the rules of OUTBOUND_ALLOW and OUTBOUND_DENY parsed (and refused at startup, naming the
 * setting), the most specific rule deciding, the self rule, and the connector that resolves,
 * checks and connects to exactly the checked address.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { BlockList } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/config/errors.js';
import { embeddedIpv4, formatIp, normaliseHost, parseIp, parseOutboundRule, type OutboundRule } from '../../src/model/outbound-address.js';
import { TargetRefusedError } from '../../src/bridge/errors.js';
import { GuardedFetch, refusalOf } from '../../src/bridge/outbound-fetch.js';
import { OutboundPolicy, type ResolvedAddress, type Resolver } from '../../src/bridge/outbound-policy.js';

const shown = (host: string) => {
  const normal = normaliseHost(host);
  return normal === undefined ? undefined : normal.kind === 'ip' ? formatIp(normal.ip) : normal.name;
};

const rules = (...texts: string[]): OutboundRule[] =>
  texts.map((text) => {
    const rule = parseOutboundRule(text);
    if (typeof rule === 'string') throw new Error(rule);
    return rule;
  });

const policy = (
  options: { allow?: string[]; deny?: string[]; host?: string; publicUrl?: string; resolve?: Resolver; interfaces?: string[] } = {},
) =>
  new OutboundPolicy({
    allow: rules(...(options.allow ?? [])),
    deny: rules(...(options.deny ?? [])),
    host: options.host ?? '127.0.0.1',
    ...(options.publicUrl !== undefined && { publicUrl: new URL(options.publicUrl) }),
    ...(options.resolve && { resolve: options.resolve }),
    interfaceAddresses: () => options.interfaces ?? ['127.0.0.1', '::1', '10.1.2.3', 'fe80::1'],
  });

describe('hosts reduced to one form', () => {
  it.each([
    ['2130706433', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['017700000001', '127.0.0.1'],
    ['0x7F000001', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['127.0.0.1.', '127.0.0.1'],
    ['0', '0.0.0.0'],
    ['2852039166', '169.254.169.254'],
    ['0xa9fea9fe', '169.254.169.254'],
    ['0251.0376.0251.0376', '169.254.169.254'],
    ['169.254.43518', '169.254.169.254'],
    ['[::ffff:169.254.169.254]', '169.254.169.254'],
    ['::ffff:a9fe:a9fe', '169.254.169.254'],
    ['[::169.254.169.254]', '169.254.169.254'],
    ['[64:ff9b::169.254.169.254]', '169.254.169.254'],
    ['[FD00:EC2::254]', 'fd00:ec2::254'],
    ['[::]', '::'],
    ['[::1]', '::1'],
    ['METADATA.Google.Internal.', 'metadata.google.internal'],
    ['metadata.goog..', 'metadata.goog'],
    ['Tools.Example', 'tools.example'],
  ])('%s is %s', (host, expected) => {
    expect(shown(host)).toBe(expected);
  });

  it.each(['1.2.3.256', 'foo.123', 'a/b', 'a b', 'user@host', '[fe80::1%25eth0]', 'host:80', ''])('%j is no host', (host) => {
    expect(normaliseHost(host)).toBeUndefined();
  });

  it('reads resolver and interface addresses, zones and dotted tails included', () => {
    expect(parseIp('fe80::1%eth0')).toEqual({ family: 6, value: (0xfe80n << 112n) | 1n });
    expect(formatIp(embeddedIpv4(parseIp('::ffff:10.0.0.1') ?? { family: 4, value: 0n }))).toBe('10.0.0.1');
    expect(parseIp('1:2:3:4:5:6:7:8:9')).toBeUndefined();
    expect(parseIp('1::2::3')).toBeUndefined();
    expect(parseIp('010.0.0.1')).toBeUndefined();
    expect(formatIp(parseIp('2001:db8:0:0:1:0:0:1') ?? { family: 4, value: 0n })).toBe('2001:db8::1:0:0:1');
  });

  it("is needed: node's BlockList matches IPv4-mapped addresses to IPv4 rules, but not IPv4-compatible ones", () => {
    const list = new BlockList();
    list.addSubnet('169.254.0.0', 16, 'ipv4');
    expect(list.check('::ffff:169.254.169.254', 'ipv6')).toBe(true);
    // So a BlockList alone would let this through; the policy compares it as 169.254.169.254.
    expect(list.check('::169.254.169.254', 'ipv6')).toBe(false);
    expect(policy().check({ host: '[::169.254.169.254]', port: 80 })).toMatch(/link-local|metadata/);
  });
});

describe('rules', () => {
  it('parses CIDRs, addresses, names and name patterns', () => {
    expect(parseOutboundRule('10.20.0.0/16')).toMatchObject({ kind: 'cidr', family: 4, prefix: 16 });
    expect(parseOutboundRule('169.254.170.2')).toMatchObject({ kind: 'cidr', family: 4, prefix: 32 });
    expect(parseOutboundRule('fd00::/8')).toMatchObject({ kind: 'cidr', family: 6, prefix: 8 });
    expect(parseOutboundRule('::ffff:10.0.0.0/104')).toMatchObject({ kind: 'cidr', family: 4, prefix: 8 });
    expect(parseOutboundRule('Tools.Corp.Example.')).toMatchObject({ kind: 'name', name: 'tools.corp.example', wildcard: false });
    expect(parseOutboundRule('*.corp.example')).toMatchObject({ kind: 'name', name: 'corp.example', wildcard: true });
  });

  it.each([
    ['10.20.1.0/16', /bits set past its prefix \(did you mean 10\.20\.0\.0\/16\?\)/],
    ['10.0.0.0/33', /prefix length must be 0 to 32/],
    ['fd00::/129', /prefix length must be 0 to 128/],
    ['10.0.0.0/x', /prefix length/],
    ['tools.example/8', /not a CIDR/],
    ['*.bad_/', /pattern/],
    ['1.2.3.256', /not a CIDR/],
  ])('refuses %s', (text, message) => {
    expect(parseOutboundRule(text)).toMatch(message);
  });

  it('stops startup with one line naming the setting', () => {
    expect(() => loadConfig({}, { OUTBOUND_ALLOW: '10.0.0.0/8, 10.20.1.0/16' })).toThrow(ConfigError);
    expect(() => loadConfig({}, { OUTBOUND_ALLOW: '10.20.1.0/16' })).toThrow(
      /^OUTBOUND_ALLOW: "10\.20\.1\.0\/16" has address bits set past its prefix/,
    );
    expect(() => loadConfig({}, { OUTBOUND_DENY: 'not a host' })).toThrow(
      /^OUTBOUND_DENY: "not a host" is not a CIDR, an IP address or a host name/,
    );
    const config = loadConfig({}, { OUTBOUND_ALLOW: '169.254.170.2/32', OUTBOUND_DENY: '0.0.0.0/0,::/0' });
    expect(config.outbound.allow).toHaveLength(1);
    expect(config.outbound.deny).toHaveLength(2);
    expect(loadConfig({}, {}).outbound).toEqual({ allow: [], deny: [], ca: [] });
  });
});

describe('the decision', () => {
  const refused = (p: OutboundPolicy, host: string, port = 8080) => p.check({ host, port });

  it('refuses link-local, metadata, unspecified, multicast and broadcast by default, in every spelling', () => {
    const p = policy();
    for (const host of [
      '169.254.169.254',
      '2852039166',
      '0xa9fea9fe',
      '[::ffff:169.254.169.254]',
      '[::169.254.169.254]',
      '[64:ff9b::a9fe:a9fe]',
      '169.254.170.2',
    ]) {
      expect(refused(p, host), host).toMatch(/is refused by the outbound address policy: (cloud metadata|link-local)/);
    }
    expect(refused(p, '169.254.169.254')).toContain('cloud metadata (169.254.169.254/32) is refused by default');
    expect(refused(p, '[fd00:ec2::254]')).toContain('cloud metadata (AWS)');
    expect(refused(p, '100.100.100.200')).toContain('Alibaba');
    expect(refused(p, 'metadata.google.internal')).toContain('cloud metadata (Google Cloud)');
    expect(refused(p, 'METADATA.GOOG')).toContain('metadata.goog');
    expect(refused(p, '0.0.0.0')).toContain('unspecified');
    expect(refused(p, '0')).toContain('0 (read as 0.0.0.0) port 8080 is refused');
    expect(refused(p, '[::]')).toContain('unspecified');
    expect(refused(p, '[fe80::1]')).toContain('link-local (fe80::/10)');
    expect(refused(p, '224.0.0.1')).toContain('multicast');
    expect(refused(p, '[ff02::1]')).toContain('multicast');
    expect(refused(p, '255.255.255.255')).toContain('broadcast');
  });

  it('allows loopback, private networks and ordinary names', () => {
    const p = policy();
    for (const host of [
      '127.0.0.1',
      '2130706433',
      '0x7f.1',
      '[::1]',
      '10.0.0.5',
      '192.168.1.1',
      '172.16.0.1',
      '[fd12::1]',
      'localhost',
      'tools.example',
      'metadata.google.internal.example',
    ]) {
      expect(refused(p, host), host).toBeUndefined();
    }
  });

  it('lets the most specific rule decide: settings widen and narrow the defaults', () => {
    // An ECS task-metadata-style host let through; the metadata address beside it stays refused (a /32 beats a /32 only by source).
    const ecs = policy({ allow: ['169.254.170.2/32'] });
    expect(refused(ecs, '169.254.170.2')).toBeUndefined();
    expect(refused(ecs, '169.254.169.254')).toMatch(/cloud metadata/);
    // Allowing all of link-local leaves the more specific metadata rule in force.
    const linkLocal = policy({ allow: ['169.254.0.0/16'] });
    expect(refused(linkLocal, '169.254.1.1')).toBeUndefined();
    expect(refused(linkLocal, '169.254.169.254')).toMatch(/cloud metadata/);
    // Only one network.
    const only = policy({ deny: ['0.0.0.0/0', '::/0'], allow: ['10.20.0.0/16'] });
    expect(refused(only, '10.20.3.4')).toBeUndefined();
    expect(refused(only, '10.21.0.1')).toBe('10.21.0.1 port 8080 is refused by the outbound address policy: OUTBOUND_DENY has 0.0.0.0/0');
    expect(refused(only, '127.0.0.1')).toMatch(/OUTBOUND_DENY has 0\.0\.0\.0\/0/);
    expect(refused(only, '[::1]')).toMatch(/OUTBOUND_DENY has ::\/0/);
    // A name is not resolved at registration: only name rules meet it there.
    expect(refused(only, 'tools.example')).toBeUndefined();
    // Deny beats allow at equal specificity; a setting beats a default.
    expect(refused(policy({ allow: ['10.0.0.0/8'], deny: ['10.0.0.0/8'] }), '10.1.1.1')).toMatch(/OUTBOUND_DENY has 10\.0\.0\.0\/8/);
    expect(refused(policy({ allow: ['169.254.169.254'] }), '169.254.169.254')).toBeUndefined();
    // Names: exact beats pattern beats any CIDR.
    const names = policy({ deny: ['*.corp.example'], allow: ['tools.corp.example', 'metadata.google.internal'] });
    expect(refused(names, 'db.corp.example')).toMatch(/OUTBOUND_DENY has \*\.corp\.example/);
    expect(refused(names, 'corp.example')).toBeUndefined();
    expect(refused(names, 'Tools.Corp.Example')).toBeUndefined();
    expect(refused(names, 'metadata.google.internal')).toBeUndefined();
    expect(refused(policy({ deny: ['tools.example'] }), 'TOOLS.example')).toMatch(/OUTBOUND_DENY has tools\.example/);
  });

  it("refuses the registry's own port on its own addresses, whatever the settings say", () => {
    const p = policy({ allow: ['127.0.0.0/8', '10.1.2.3', 'localhost', '::1'] });
    expect(refused(p, '127.0.0.1', 8006)).toBeUndefined(); // not listening yet
    p.listening(8006);
    for (const host of [
      '127.0.0.1',
      '127.0.0.2',
      '2130706433',
      '0x7f.1',
      '017700000001',
      '[::ffff:127.0.0.1]',
      '[::1]',
      '0.0.0.0',
      '[::]',
      'localhost',
      'api.localhost',
      '10.1.2.3',
      '[fe80::1]',
    ]) {
      expect(refused(p, host, 8006), host).toMatch(/the registry's own address and port/);
    }
    expect(refused(p, '127.0.0.1', 8007)).toBeUndefined();
    expect(refused(p, '10.9.9.9', 8006)).toBeUndefined();
    // HOST and PUBLIC_URL name the registry too.
    const named = policy({ host: 'registry.internal', publicUrl: 'https://tools.example.com/' });
    named.listening(9000);
    expect(refused(named, 'registry.internal', 9000)).toMatch(/own address/);
    expect(refused(named, 'tools.example.com', 443)).toMatch(/own address/);
    expect(refused(named, 'tools.example.com', 8443)).toBeUndefined();
    // In replicated mode the write side leaves the self rule to call time.
    expect(named.checkRules({ host: 'registry.internal', port: 9000 })).toBeUndefined();
  });

  it("refuses an address PUBLIC_URL's name resolves to, at its port, from the answer at hand (a write never waits on DNS)", async () => {
    let lookups = 0;
    const p = policy({ publicUrl: 'http://proxy.example:18410/', resolve: async () => (lookups++, [{ address: '192.0.2.7', family: 4 }]) });
    // No answer yet: the write is not held up, and the call-time check decides.
    expect(refused(p, '192.0.2.7', 18410)).toBeUndefined();
    await expect(p.addressesFor('192.0.2.7', 18410)).rejects.toThrow(
      /an address PUBLIC_URL's host proxy\.example resolves to, at its port/,
    );
    expect(refused(p, '192.0.2.7', 18410)).toMatch(/PUBLIC_URL's host proxy\.example/);
    expect(refused(p, '[::ffff:192.0.2.7]', 18410)).toMatch(/PUBLIC_URL's host/);
    expect(refused(p, '192.0.2.7', 18411)).toBeUndefined();
    expect(await p.addressesFor('192.0.2.7', 80)).toEqual([{ family: 4, value: 0xc0000207n }]);
    // The answer is reused (30 s), not looked up at every call.
    await p.addressesFor('192.0.2.8', 18410);
    expect(lookups).toBe(1);
    // Listening looks the name up, so that registrations find the answer at hand.
    const started = policy({ publicUrl: 'https://proxy.example/', resolve: async () => [{ address: '192.0.2.9', family: 4 }] });
    started.listening(8006);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(refused(started, '192.0.2.9', 443)).toMatch(/PUBLIC_URL's host/);
  });
});

describe('at call time', () => {
  let server: Server;
  let port: number;
  let seenHosts: string[];

  beforeAll(async () => {
    seenHosts = [];
    server = createServer((req, res) => {
      seenHosts.push(req.headers.host ?? '');
      res.setHeader('connection', 'close');
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('checks every address a name resolves to, and connects to one that passed', async () => {
    let answer: ResolvedAddress[] = [
      { address: '169.254.169.254', family: 4 },
      { address: '127.0.0.1', family: 4 },
    ];
    const asked: string[] = [];
    const p = policy({ resolve: async (name) => (asked.push(name), answer) });
    expect(await p.addressesFor('Tool.Test.', port)).toEqual([{ family: 4, value: 0x7f000001n }]);
    const guarded = new GuardedFetch(p);
    try {
      const res = await guarded.fetch(`http://tool.test:${port}/x`);
      expect(await res.text()).toBe('ok');
      expect(seenHosts.at(-1)).toBe(`tool.test:${port}`);
      // The name now points at the metadata address only (DNS rebinding): the next connection is refused.
      answer = [{ address: '169.254.169.254', family: 4 }];
      const err: unknown = await guarded.fetch(`http://tool.test:${port}/x`).catch((e: unknown) => e);
      expect(refusalOf(err)).toBeInstanceOf(TargetRefusedError);
      expect(refusalOf(err)?.message).toBe(
        `tool.test resolved to 169.254.169.254, and port ${port} there is refused by the outbound address policy: cloud metadata (169.254.169.254/32) is refused by default; OUTBOUND_ALLOW can let it through`,
      );
      answer = [{ address: '::ffff:169.254.169.254', family: 6 }];
      expect(refusalOf(await guarded.fetch(`http://tool.test:${port}/x`).catch((e: unknown) => e))?.message).toMatch(
        /resolved to ::ffff:a9fe:a9fe \(read as 169\.254\.169\.254\), and port/,
      );
      // Addresses as written are checked without resolving.
      const before = asked.length;
      expect(refusalOf(await guarded.fetch(`http://[::ffff:a9fe:a9fe]:${port}/`).catch((e: unknown) => e))?.message).toMatch(
        /^169\.254\.169\.254 port/,
      );
      expect(refusalOf(await guarded.fetch(`http://metadata.google.internal:${port}/`).catch((e: unknown) => e))?.message).toMatch(
        /cloud metadata \(Google Cloud\)/,
      );
      expect(asked.length).toBe(before);
      expect(await (await guarded.fetch(`http://2130706433:${port}/`)).text()).toBe('ok');
    } finally {
      await guarded.close();
    }
  });

  it("tries the next checked address when one does not take the connection, and refuses the registry's own port", async () => {
    const p = policy({
      resolve: async () => [
        { address: '::1', family: 6 },
        { address: '127.0.0.1', family: 4 },
      ],
    });
    const guarded = new GuardedFetch(p);
    try {
      // The test server listens on 127.0.0.1 only: ::1 refuses the connection, 127.0.0.1 takes it.
      expect(await (await guarded.fetch(`http://both.test:${port}/`)).text()).toBe('ok');
      p.listening(port);
      const err = await guarded.fetch(`http://both.test:${port}/`).catch((e: unknown) => e);
      expect(refusalOf(err)?.message).toMatch(
        /^both\.test resolved to ::1, and port \d+ there is refused by the outbound address policy: that is the registry's own address and port/,
      );
    } finally {
      await guarded.close();
    }
  });
});
