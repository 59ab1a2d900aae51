/**
 * Issue 9, "text fields accept control characters": every free-form string a descriptor carries
 * (descriptions, `returns`, config values, and every string inside the free-form JSON values:
 * parameter `enum`, `default` and `items`, the agent hints `group`, `state` and
 * `applicable-states`, object keys included) refuses C0 but tab and line feed, DEL, C1, the
 * Unicode line and paragraph separators and the bidirectional overrides, with a 400 that names the field's path, and changes nothing; and a token whose identity claims (`sub`,
 * `iss`) hold control characters is refused (401 invalid_token) before it can write its identity
 * into the audit log, the logs, `/stats` or a tool call. Through the real HTTP server (port 0).
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type TestApp } from '../helpers/app.js';
import { seed } from '../helpers/fixtures.js';

const ADMIN = 'registry:write';

/**
 * One of each kind the rule refuses: ESC (a CSI sequence), NUL, CR, BEL, DEL, C1 CSI, C1 NEL, the
 * line separator, a right-to-left override and a left-to-right isolate.
 */
const CONTROLS = [
  '\u001b[2J',
  '\u0000',
  '\r',
  '\u0007',
  '\u007f',
  '\u009b31m',
  '\u0085',
  '\u2028',
  'admin\u202Enimda',
  '\u2066x\u2069',
] as const;
// eslint-disable-next-line no-control-regex -- what must never come back raw
const CONTROL = /[\x00-\x08\x0B-\x1F\x7F-\x9F\u2028\u2029\u202A-\u202E\u2066-\u2069]/;

let t: TestApp;
let base: string;
let admin: Record<string, string>;

interface Problem {
  code: string;
  detail: string;
  errors?: { path: string; message: string }[];
}

async function send(method: string, path: string, body?: unknown, headers: Record<string, string> = admin): Promise<Response> {
  return fetch(`${base}${path}`, {
    method,
    headers: { ...headers, ...(body !== undefined && { 'content-type': 'application/json' }) },
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
}

async function problemOf(res: Response, status: number): Promise<Problem> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  return (await res.json()) as Problem;
}

async function exported(): Promise<string> {
  const res = await send('GET', '/export');
  expect(res.status).toBe(200);
  return res.text();
}

const calculator = seed('calculator');
const tellJoke = seed('tell-joke');
/** The calculator with one more parameter, `p`, of these fields. */
const withParameter = (name: string, parameter: Record<string, unknown>) => ({
  ...calculator,
  name,
  parameters: { ...(calculator['parameters'] as object), p: { type: 'string', ...parameter } },
});

/** A descriptor (or bundle) with `bad` somewhere, the route it goes to, and the path the 400 must name. */
type Case = [what: string, method: string, path: string, body: (bad: string) => unknown, fieldPath: (bad: string) => string];

const CASES: Case[] = [
  ['description', 'POST', '/tools/register', (bad) => ({ ...calculator, name: 'c1', description: `d${bad}` }), () => 'description'],
  ['returns', 'POST', '/tools/register', (bad) => ({ ...calculator, name: 'c1', returns: `r${bad}` }), () => 'returns'],
  [
    'a parameter description',
    'POST',
    '/tools/register',
    (bad) => withParameter('c1', { description: `d${bad}` }),
    () => 'parameters.p.description',
  ],
  ['an enum value', 'POST', '/tools/register', (bad) => withParameter('c1', { enum: ['ok', `v${bad}`] }), () => 'parameters.p.enum.1'],
  ['a default', 'POST', '/tools/register', (bad) => withParameter('c1', { default: `v${bad}` }), () => 'parameters.p.default'],
  [
    'a string deep in a default',
    'PUT',
    '/tools/c1',
    (bad) => withParameter('c1', { type: 'object', default: { a: [1, { b: `v${bad}` }] } }),
    () => 'parameters.p.default.a.1.b',
  ],
  [
    'a key in a default',
    'PUT',
    '/tools/c1',
    (bad) => withParameter('c1', { type: 'object', default: { [`k${bad}`]: 1 } }),
    (bad) => `parameters.p.default.${JSON.stringify(`k${bad}`).slice(1, -1)}`,
  ],
  [
    'an item schema description',
    'POST',
    '/tools/register',
    (bad) => withParameter('c1', { type: 'array', items: { type: 'string', description: `d${bad}` } }),
    () => 'parameters.p.items.description',
  ],
  [
    'an item schema title',
    'POST',
    '/tools/register',
    (bad) => withParameter('c1', { type: 'array', items: { type: 'string', title: `t${bad}` } }),
    () => 'parameters.p.items.title',
  ],
  [
    'an item schema example',
    'POST',
    '/tools/register',
    (bad) => withParameter('c1', { type: 'array', items: { type: 'string', examples: ['fine', `e${bad}`] } }),
    () => 'parameters.p.items.examples.1',
  ],
  [
    'an item schema enum value',
    'POST',
    '/tools/register',
    (bad) => withParameter('c1', { type: 'array', items: { enum: [`v${bad}`] } }),
    () => 'parameters.p.items.enum.0',
  ],
  [
    'a message-bus argument description',
    'POST',
    '/tools/register',
    (bad) => ({ ...tellJoke, name: 'j1', arguments: [{ name: 'a', type: 'string', description: `d${bad}` }] }),
    () => 'arguments.0.description',
  ],
  ['a config value', 'POST', '/tools/register', (bad) => ({ ...tellJoke, name: 'j1', style: `pun${bad}` }), () => 'style'],
  ['the group hint', 'POST', '/tools/register', (bad) => ({ ...tellJoke, name: 'j1', group: ['fun', `g${bad}`] }), () => 'group.1'],
  ['the state hint', 'PUT', '/tools/j1', (bad) => ({ ...tellJoke, name: 'j1', state: `s${bad}` }), () => 'state'],
  [
    'an applicable-states entry',
    'POST',
    '/tools/register',
    (bad) => ({ ...tellJoke, name: 'j1', 'applicable-states': ['idle', `s${bad}`] }),
    () => 'applicable-states.1',
  ],
  // Config values may be objects (issue 15): their keys are free-form text too.
  [
    'a key of an object config value',
    'POST',
    '/tools/register',
    (bad) => ({ ...tellJoke, name: 'j1', style: { [`s${bad}`]: true } }),
    (bad) => `style.${JSON.stringify(`s${bad}`).slice(1, -1)}`,
  ],
  [
    'a default in an imported tool',
    'POST',
    '/import',
    (bad) => ({ tools: [withParameter('c2', {}), withParameter('c1', { default: `v${bad}` })] }),
    () => 'tools.1.parameters.p.default',
  ],
];

beforeAll(async () => {
  t = await createTestApp({ RATE_LIMIT_MAX: '0' });
  admin = bearer(t.token([ADMIN]));
  await t.app.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  expect((await send('PUT', '/tool-services/joke-service', seed('joke-service'))).status).toBe(201);
  expect((await send('PUT', '/tools/calculator', calculator)).status).toBe(201);
});
afterAll(() => t.close());

describe('issue 9: control characters in descriptors', () => {
  it.each(CASES)('refuses them in %s with a 400 naming its path, changing nothing', async (_what, method, path, body, fieldPath) => {
    const before = await exported();
    for (const bad of CONTROLS) {
      const problem = await problemOf(await send(method, path, body(bad)), 400);
      expect(problem.code, JSON.stringify(bad)).toBe('TR_ERR_VALIDATION');
      expect(problem.errors, JSON.stringify(bad)).toContainEqual({
        path: fieldPath(bad),
        message: expect.stringContaining('must not contain control characters'),
      });
      expect(problem.detail).toContain(fieldPath(bad));
    }
    expect(await exported()).toBe(before);
  });

  it('takes tab and line feed, as descriptions do, and other Unicode text, and gives them back as sent', async () => {
    const text = 'line one\n\tline two: ünïcødé, 中文, emoji 🙂, עברית with its mark \u200F, a backslash \\ and quotes "';
    const http = withParameter('layout', {
      type: 'object',
      description: text,
      default: { [text]: [text] },
      enum: [text],
      items: { description: text },
    });
    expect((await send('POST', '/tools/register', { ...http, returns: text })).status).toBe(201);
    const bus = { ...tellJoke, name: 'layout-bus', style: text, group: [text], state: text, 'applicable-states': [text] };
    expect((await send('POST', '/tools/register', bus)).status).toBe(201);
    const { tools } = JSON.parse(await exported()) as { tools: Record<string, unknown>[] };
    expect(tools.find((tool) => tool['name'] === 'layout')).toMatchObject({
      returns: text,
      parameters: { p: { description: text, default: { [text]: [text] }, enum: [text], items: { description: text } } },
    });
    expect(tools.find((tool) => tool['name'] === 'layout-bus')).toMatchObject({
      style: text,
      group: [text],
      state: text,
      'applicable-states': [text],
    });
  });
});

describe('issue 9: control characters in token claims', () => {
  /** A token of the admin scope whose claims are these. */
  const adminWith = (claims: Record<string, unknown>) => bearer(t.token([ADMIN], claims));

  it('refuses a token whose sub or iss holds one with 401 invalid_token, on reads and writes alike, and writes nothing', async () => {
    const before = await exported();
    for (const bad of [...CONTROLS, '\n', '\u001b]0;title\u0007']) {
      for (const claims of [
        { sub: `agent${bad}` },
        { sub: `forged\n{"level":30,"msg":"admin logged in"}${bad}` },
        { iss: `https://idp.example${bad}` },
      ]) {
        const label = JSON.stringify(claims);
        const write = await problemOf(await send('POST', '/tools/register', { ...calculator, name: 'by-evil' }, adminWith(claims)), 401);
        expect(write.code, label).toBe('TR_ERR_INVALID_TOKEN');
        const read = await send('GET', '/', undefined, adminWith(claims));
        expect(read.status, label).toBe(401);
        const challenge = read.headers.get('www-authenticate') ?? '';
        expect(challenge, label).toContain('error="invalid_token"');
        expect(challenge, label).toMatch(/error_description="the token's (sub|iss) claim contains control characters"/);
        expect(challenge, label).not.toMatch(CONTROL);
      }
    }
    expect(await exported()).toBe(before);
    // The refusals are audited as anonymous; no entry carries a control character.
    const audit = (await (await send('GET', '/audit?limit=500')).json()) as { entries: { sub: string | null; iss: string | null }[] };
    expect(audit.entries.length).toBeGreaterThan(0);
    for (const entry of audit.entries) {
      expect(entry.sub ?? '').not.toMatch(CONTROL);
      expect(entry.iss ?? '').not.toMatch(CONTROL);
    }
  });

  it('takes subjects and issuers with backslashes, quotes and other Unicode, exactly as given', async () => {
    const sub = 'DOMAIN\\agent "ünïcødé" 中文';
    const iss = 'https://idp.example/realms/é';
    const res = await send('POST', '/tools/register', { ...calculator, name: 'by-domain-agent' }, adminWith({ sub, iss }));
    expect(res.status).toBe(201);
    const audit = (await (await send('GET', '/audit?limit=500')).json()) as {
      entries: { sub: string | null; iss: string | null; target: string | null }[];
    };
    expect(audit.entries.find((e) => e.target === 'by-domain-agent')).toMatchObject({ sub, iss });
  });

  it('keeps no scope value that could not be an OAuth scope token', async () => {
    const token = t.token([], { scp: ['calculator:use', 'calculator:use\u001b[2J', 'two words', 'x\u009b'] });
    const res = await send('GET', '/tools/calculator/access', undefined, bearer(token));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { grantedScopes: string[] }).grantedScopes).toEqual(['calculator:use']);
  });
});
