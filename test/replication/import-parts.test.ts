/**
 * Imports too big for one message (src/replication/import-parts.ts, RegistryService
 * applyReplicated): the writer's cut, and every replica's staging, joining, refusals and
 * dropping of unfinished imports, without a broker. The same over a real broker, with a SIGKILL
 * between parts, is in test/bus/replication-import.broker.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { finish } from '../../src/catalog/steps.js';
import type { RegistryError } from '../../src/model/errors.js';
import { IMPORT_PART_LIMITS, ReplicationEventSchema, replicationKey, type ReplicationEvent } from '../../src/model/replication.js';
import type { Outcome, Pin } from '../../src/registry/registry-service.js';
import { cutIntoChunks, importParts } from '../../src/replication/import-parts.js';
import { bundle, message, openReplica, removeReplicaDirs, tool, type TestReplica } from './support.js';

const replicas: TestReplica[] = [];
function replica(options: Parameters<typeof openReplica>[0] = {}): TestReplica {
  const r = openReplica(options);
  replicas.push(r);
  return r;
}
afterEach(() => {
  for (const r of replicas.splice(0)) if (r.db.open) r.store.close();
  removeReplicaDirs();
});

/** Bytes a chunk takes inside the message: its JSON string without the quotes. */
const encodedBytes = (chunk: string) => Buffer.byteLength(JSON.stringify(chunk)) - 2;

/** The `import.part` messages of `text`, cut at `chunkBytes`, under one write id; each stamped `at`. */
function partMessages(
  text: string,
  chunkBytes: number,
  options: { write?: string; at?: string } = {},
): { event: ReplicationEvent; pin: Pin }[] {
  const chunks = finish(cutIntoChunks(text, chunkBytes));
  const write = options.write ?? `import-${Math.random().toString(36).slice(2)}`;
  return chunks.map((chunk, part) => message({ op: 'import.part', write, part, parts: chunks.length, chunk }, options.at));
}

const apply = (r: TestReplica, { event, pin }: { event: ReplicationEvent; pin: Pin }) => r.service.applyReplicated(event, pin);
const applyInOrder = async (r: TestReplica, messages: { event: ReplicationEvent; pin: Pin }[]) => {
  const outcomes: Outcome[] = [];
  for (const m of messages) outcomes.push(await apply(r, m));
  return outcomes;
};
const codeOf = (o: Outcome | undefined) => (o === undefined ? 'none' : o.ok ? 'ok' : (o.error as RegistryError).code);
const view = (r: TestReplica) => r.catalog.view({ kind: 'all' });

describe('cutting an import into parts', () => {
  const text = JSON.stringify({
    a: 'plain "quoted" \\ slash',
    b: 'ünïcödé ✓ 中文 🧰🧰',
    c: '\u0001\u001f\n',
    d: '\ud83d',
    e: 'x'.repeat(50),
  });

  // Raw text too (not from JSON.stringify): control characters and a lone surrogate as they are.
  const raw = 'a\ud83db🧰"\\\u0001é中';

  it('cuts between characters, each chunk within the limit as the message encodes it, and joins back to the text', () => {
    for (const source of [text, raw]) {
      for (const limit of [6, 7, 8, 13, 64, 1000]) {
        const chunks = finish(cutIntoChunks(source, limit));
        expect(chunks.join(''), `limit ${limit}`).toBe(source);
        for (const chunk of chunks) {
          expect(encodedBytes(chunk), `limit ${limit}: ${JSON.stringify(chunk)}`).toBeLessThanOrEqual(limit);
          expect(chunk.length).toBeGreaterThan(0);
        }
        // No surrogate pair is cut in two.
        expect(/[\ud800-\udbff]\|[\udc00-\udfff]/.test(chunks.join('|')), `limit ${limit}: a pair cut`).toBe(false);
      }
    }
    expect(finish(cutIntoChunks('', 10))).toEqual(['']);
    expect(() => finish(cutIntoChunks(text, 5))).toThrow(/cannot hold/);
  });

  it('makes messages that each fit, share the write id and key, and carry the whole text', () => {
    const input = bundle(200);
    const base: ReplicationEvent = { v: 1, op: 'import', write: 'w-parts', origin: 'a', at: new Date().toISOString(), body: input };
    const textOfBody = JSON.stringify(input);
    const parts = finish(importParts(base, textOfBody, 4096, IMPORT_PART_LIMITS.maxParts));
    expect(parts).toBeDefined();
    const messages = Array.from({ length: parts!.count }, (_, n) => parts!.message(n, new Date().toISOString()));
    expect(messages.length).toBeGreaterThan(10);
    const events = messages.map((m) => ReplicationEventSchema.parse(JSON.parse(m)));
    for (const [n, m] of messages.entries()) expect(Buffer.byteLength(m), `part ${n}`).toBeLessThanOrEqual(4096);
    expect(events.map((e) => [e.op, e.write, e.part, e.parts, e.body])).toEqual(
      events.map((_, n) => ['import.part', 'w-parts', n, messages.length, undefined]),
    );
    expect(new Set(events.map(replicationKey))).toEqual(new Set(['import/w-parts']));
    expect(events.map((e) => e.chunk).join('')).toBe(textOfBody);
    // Past the most parts an import may have: none.
    expect(finish(importParts(base, textOfBody, 4096, 3))).toBeUndefined();
  });
});

describe('applying an import sent in parts', () => {
  it('stages the parts and applies the import at the last one, byte-identical to the same import in one message', async () => {
    const input = bundle(120);
    const messages = partMessages(JSON.stringify(input), 2000);
    expect(messages.length).toBeGreaterThan(5);
    const last = messages.at(-1)!;
    const a = replica();
    const b = replica();
    // a one message at a time; b all at once (batched): the same outcomes.
    const outcomesA = await applyInOrder(a, messages);
    const outcomesB = await Promise.all(messages.map((m) => apply(b, m)));
    for (const outcomes of [outcomesA, outcomesB]) {
      expect(outcomes.slice(0, -1)).toEqual(
        messages.slice(0, -1).map((_, part) => ({ ok: true, value: { part, parts: messages.length } })),
      );
      expect(outcomes.at(-1)).toEqual({
        ok: true,
        value: { index: last.pin.index, toolServices: { created: 1, replaced: 0 }, tools: { created: 121, replaced: 0 } },
      });
    }
    // The same import as one message at the same position: the same records and bytes.
    const c = replica();
    await apply(c, {
      event: { ...last.event, op: 'import', body: input, part: undefined, parts: undefined, chunk: undefined },
      pin: last.pin,
    });
    for (const r of [a, b, c]) {
      expect(r.catalog.index).toBe(last.pin.index);
      expect(r.stagedRows()).toEqual([]);
      expect(r.store.replicationPosition()?.messageId).toBe(last.pin.messageId);
    }
    expect(view(b).etag).toBe(view(a).etag);
    expect(view(c).etag).toBe(view(a).etag);
    expect(Buffer.compare(view(a).body, view(c).body)).toBe(0);
  });

  it('stages each part with the position: a replica stopped between parts goes on from where it was, nothing lost or repeated', async () => {
    const messages = partMessages(JSON.stringify(bundle(40)), 1500);
    expect(messages.length).toBeGreaterThan(3);
    const a = replica();
    await applyInOrder(a, messages.slice(0, 2));
    // As a SIGKILL after the second commit: the store closed without anything else.
    a.store.close();
    const again = replica({ dir: a.dir });
    expect(again.store.replicationPosition()?.messageId).toBe(messages[1]!.pin.messageId);
    expect(again.stagedRows()).toMatchObject([{ part: 0 }, { part: 1 }]);
    const outcomes = await applyInOrder(again, messages.slice(2));
    expect(outcomes.at(-1)).toMatchObject({ ok: true, value: { index: messages.at(-1)!.pin.index, tools: { created: 41 } } });
    expect(again.store.getTool('t-00039')).toBeDefined();
    expect(again.stagedRows()).toEqual([]);
  });

  it('refuses parts out of order, duplicated or with another count, dropping the import the same way everywhere', async () => {
    const text = JSON.stringify(bundle(10));
    const cases: [string, (m: { event: ReplicationEvent; pin: Pin }[]) => { event: ReplicationEvent; pin: Pin }[], string[]][] = [
      ['out of order', (m) => [m[1]!, m[0]!, m[2]!], ['TR_ERR_BAD_REQUEST', 'ok', 'TR_ERR_BAD_REQUEST']],
      ['a duplicate', (m) => [m[0]!, m[0]!, m[1]!, m[2]!], ['ok', 'TR_ERR_BAD_REQUEST', 'TR_ERR_BAD_REQUEST', 'TR_ERR_BAD_REQUEST']],
      [
        'another count',
        (m) => [m[0]!, { ...m[1]!, event: { ...m[1]!.event, parts: 4 } }, m[2]!],
        ['ok', 'TR_ERR_BAD_REQUEST', 'TR_ERR_BAD_REQUEST'],
      ],
      [
        'a part past the count',
        (m) => [m[0]!, m[1]!, { ...m[2]!, event: { ...m[2]!.event, part: 5 } }],
        ['ok', 'ok', 'TR_ERR_BAD_REQUEST'],
      ],
      [
        'a part without its chunk',
        (m) => [m[0]!, { ...m[1]!, event: { ...m[1]!.event, chunk: undefined } }, m[2]!],
        ['ok', 'TR_ERR_BAD_REQUEST', 'TR_ERR_BAD_REQUEST'],
      ],
      [
        'a chunk cut inside a character',
        (m) => [{ ...m[0]!, event: { ...m[0]!.event, chunk: `${m[0]!.event.chunk ?? ''}\ud83d` } }, m[1]!, m[2]!],
        ['TR_ERR_BAD_REQUEST', 'TR_ERR_BAD_REQUEST', 'TR_ERR_BAD_REQUEST'],
      ],
    ];
    for (const [what, arrange, codes] of cases) {
      const chunks = finish(cutIntoChunks(text, Math.ceil(encodedBytes(text) / 3) + 8));
      expect(chunks).toHaveLength(3);
      const write = `refused-${what.replaceAll(' ', '-')}`;
      const messages = arrange(chunks.map((chunk, part) => message({ op: 'import.part', write, part, parts: 3, chunk })));
      const a = replica();
      const b = replica();
      const outcomesA = await applyInOrder(a, messages);
      const outcomesB = await Promise.all(messages.map((m) => apply(b, m)));
      expect(outcomesA.map(codeOf), what).toEqual(codes);
      expect(outcomesB.map(codeOf), what).toEqual(codes);
      for (const r of [a, b]) {
        expect(r.stagedRows(), what).toEqual([]);
        expect(r.catalog.index, what).toBe(0);
        expect(r.store.replicationPosition()?.messageId, what).toBe(messages.at(-1)!.pin.messageId);
      }
      const refusal = outcomesA.find((o) => !o.ok) as { error: RegistryError };
      expect(refusal.error.message, what).toMatch(/is refused: .*send it again/);
    }
  });

  it('refuses parts that do not join into JSON, or into a valid bundle, as a one-message import would be', async () => {
    const a = replica();
    const broken = [
      message({ op: 'import.part', write: 'broken', part: 0, parts: 2, chunk: '{"tools": [' }),
      message({ op: 'import.part', write: 'broken', part: 1, parts: 2, chunk: 'oops' }),
    ];
    expect((await applyInOrder(a, broken)).map(codeOf)).toEqual(['ok', 'TR_ERR_INVALID_JSON']);
    const invalid = partMessages(JSON.stringify({ 'tool-services': [], tools: [tool('fine'), { name: 'no-endpoint' }] }), 40);
    const outcomes = await applyInOrder(a, invalid);
    expect(outcomes.at(-1)).toMatchObject({
      ok: false,
      error: {
        code: 'TR_ERR_VALIDATION',
        fieldErrors: expect.arrayContaining([{ path: 'tools.1.endpoint', message: expect.any(String) }]),
      },
    });
    expect(a.store.getTool('fine')).toBeUndefined();
    expect(a.stagedRows()).toEqual([]);
    expect(a.store.replicationPosition()?.messageId).toBe(invalid.at(-1)!.pin.messageId);
  });

  it('drops the parts of an import never finished once a message stamped ten minutes later is applied, and refuses its late parts', async () => {
    const at = (minutes: number) => new Date(Date.parse('2026-11-30T10:00:00.000Z') + minutes * 60_000).toISOString();
    const a = replica();
    const messages = partMessages(JSON.stringify(bundle(10)), 800, { write: 'orphan', at: at(0) });
    expect(messages.length).toBeGreaterThan(2);
    await applyInOrder(a, messages.slice(0, 2));
    await apply(a, message({ op: 'tool.put', body: tool('five-minutes-on') }, at(5)));
    expect(a.stagedRows()).toHaveLength(2);
    await apply(a, message({ op: 'tool.put', body: tool('ten-minutes-on') }, at(10)));
    expect(a.stagedRows()).toHaveLength(2); // exactly ten minutes: not yet
    await apply(a, message({ op: 'tool.delete', target: 'five-minutes-on' }, at(10.001)));
    expect(a.stagedRows()).toEqual([]);
    // Its writer comes back with the rest: refused, as on every replica.
    const late = messages.slice(2).map(({ event, pin }) => ({ event: { ...event, at: at(11) }, pin: { ...pin, at: at(11) } }));
    const outcomes = await applyInOrder(a, late);
    expect(codeOf(outcomes.at(-1))).toBe('TR_ERR_BAD_REQUEST');
    expect((outcomes.at(-1) as { error: RegistryError }).error.message).toMatch(/dropped as unfinished after 10 minutes/);
    expect(a.store.getTool('t-00000')).toBeUndefined();

    // An import whose parts all come within the ten minutes is applied, even if it takes nine.
    const slow = partMessages(JSON.stringify(bundle(3, 'slow')), 800, { write: 'slow' });
    const stamped = slow.map(({ event, pin }, n) => ({
      event: { ...event, at: at(20 + (9 * n) / (slow.length - 1)) },
      pin: { ...pin, at: at(20 + (9 * n) / (slow.length - 1)) },
    }));
    expect((await applyInOrder(a, stamped)).at(-1)).toMatchObject({ ok: true });
  });

  it('holds the limits on parts, on one import and on everything staged', async () => {
    const a = replica({ limits: { ...IMPORT_PART_LIMITS, maxParts: 4, maxStagedBytes: 250 } });
    const tooMany = message({ op: 'import.part', write: 'many', part: 0, parts: 5, chunk: '{' });
    expect(codeOf(await apply(a, tooMany))).toBe('TR_ERR_BAD_REQUEST');
    // Two unfinished imports of 120 bytes each fit; a third part past 250 staged bytes does not.
    const chunk = 'x'.repeat(120);
    expect(codeOf(await apply(a, message({ op: 'import.part', write: 'one', part: 0, parts: 3, chunk })))).toBe('ok');
    expect(codeOf(await apply(a, message({ op: 'import.part', write: 'two', part: 0, parts: 3, chunk })))).toBe('ok');
    const full = await apply(a, message({ op: 'import.part', write: 'three', part: 0, parts: 3, chunk: 'x'.repeat(20) }));
    expect(full).toMatchObject({
      ok: false,
      error: { code: 'TR_ERR_BODY_TOO_LARGE', message: expect.stringMatching(/unfinished imports/) },
    });
    expect(a.stagedRows()).toMatchObject([
      { write: 'one', part: 0 },
      { write: 'two', part: 0 },
    ]);
    // One import past 300 bytes: refused at the part that passes it (its last here), and dropped.
    const b = replica({ limits: { ...IMPORT_PART_LIMITS, maxImportBytes: 300 } });
    expect(codeOf(await apply(b, message({ op: 'import.part', write: 'one', part: 0, parts: 3, chunk })))).toBe('ok');
    expect(codeOf(await apply(b, message({ op: 'import.part', write: 'one', part: 1, parts: 3, chunk: 'y'.repeat(100) })))).toBe('ok');
    const big = await apply(b, message({ op: 'import.part', write: 'one', part: 2, parts: 3, chunk: 'z'.repeat(100) }));
    expect(big).toMatchObject({ ok: false, error: { code: 'TR_ERR_BODY_TOO_LARGE', message: expect.stringMatching(/300 bytes/) } });
    expect(b.stagedRows()).toEqual([]);
  });
});
