/**
 * The sliced body parser gives what the app's body parser gives, value for value, and refuses
 * what it refuses with the same codes and paths, while giving the event loop back.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Scheduler } from '../../src/catalog/scheduler.js';
import { parseJsonBody } from '../../src/http/json-body.js';
import { parseJsonSliced } from '../../src/http/sliced-json.js';
import { RegistryError } from '../../src/model/errors.js';

const outcome = async (run: () => unknown | Promise<unknown>) => {
  try {
    return { ok: true, value: await run() };
  } catch (err) {
    if (!(err instanceof RegistryError)) throw err;
    return { ok: false, code: err.code, paths: err.fieldErrors?.map((f) => f.path) };
  }
};

/** The app's one scheduler, as the import route passes it. */
const scheduler = new Scheduler();

const spaced = (text: string, gaps: string[]) => text.replace(/([,:[\]{}])/g, (m, _c, at: number) => `${m}${gaps[at % gaps.length] ?? ''}`);

describe('sliced JSON bodies', () => {
  it('parse any JSON exactly as the body parser does', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.json({ depthSize: 'small' }),
        fc.array(fc.constantFrom('', ' ', '\n', '\t ')),
        fc.integer({ min: 1, max: 12 }),
        async (text, gaps, maxDepth) => {
          // Extra whitespace only where it cannot land inside a string.
          const body = /"/.test(text) ? text : spaced(text, gaps);
          const expected = await outcome(() => parseJsonBody(body, maxDepth));
          const got = await outcome(() => parseJsonSliced(Buffer.from(body), { maxDepth, scheduler: new Scheduler(0) }));
          expect(got).toEqual(expected);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('refuse broken text as the body parser does', async () => {
    const broken = [
      '{',
      '{"a":1',
      '{"a":1,}',
      '{"a" 1}',
      '{"a":[1 2]}',
      '{"a":[1,]}',
      '{"a":1}x',
      '{"a":"\\"}',
      '{"a":[{"b":1}',
      '{,}',
      '{"a":tru}',
      '{"a":[1],"b":}',
    ];
    for (const body of broken) {
      const got = await outcome(() => parseJsonSliced(Buffer.from(body), { maxDepth: 64, scheduler }));
      expect(got, body).toMatchObject({ ok: false, code: 'TR_ERR_INVALID_JSON' });
    }
  });

  it('name the place of duplicate keys, prototype keys and deep nesting inside array elements', async () => {
    const dup = await outcome(() =>
      parseJsonSliced(Buffer.from('{"tools":[{"a":1},{"name":"x","name":"y"}]}'), { maxDepth: 64, scheduler }),
    );
    expect(dup).toEqual({ ok: false, code: 'TR_ERR_BAD_REQUEST', paths: ['tools.1.name'] });
    const top = await outcome(() => parseJsonSliced(Buffer.from('{"tools":[],"tools":[]}'), { maxDepth: 64, scheduler }));
    expect(top).toEqual({ ok: false, code: 'TR_ERR_BAD_REQUEST', paths: ['tools'] });
    const proto = await outcome(() => parseJsonSliced(Buffer.from('{"tools":[{"__proto__":{}}]}'), { maxDepth: 64, scheduler }));
    expect(proto).toMatchObject({ ok: false, code: 'TR_ERR_BAD_REQUEST', paths: ['tools.0.__proto__'] });
    const ctor = '{"constructor":{"prototype":{}}}';
    expect(await outcome(() => parseJsonSliced(Buffer.from(ctor), { maxDepth: 64, scheduler }))).toEqual(
      await outcome(() => parseJsonBody(ctor, 64)),
    );
    const deep = `{"tools":[${'['.repeat(10)}${']'.repeat(10)}]}`;
    expect(await outcome(() => parseJsonSliced(Buffer.from(deep), { maxDepth: 8, scheduler }))).toEqual(
      await outcome(() => parseJsonBody(deep, 8)),
    );
  });

  it('keeps multi-byte text intact and gives the event loop back on big bodies', async () => {
    const tools = Array.from({ length: 20_000 }, (_, i) => ({
      name: `tool_${i}`,
      description: 'Ünïcödé 💡 "quoted" \\ back',
      list: [1, { x: [] }],
    }));
    const body = Buffer.from(JSON.stringify({ 'tool-services': [], tools, other: { a: 1 } }));
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    const parsed = await parseJsonSliced(body, { maxDepth: 64, scheduler: new Scheduler(1) });
    clearInterval(ticker);
    expect(parsed).toEqual(JSON.parse(body.toString()));
    expect(turns).toBeGreaterThan(0);
  });
});
