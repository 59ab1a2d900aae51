import { describe, expect, it } from 'vitest';
import { indexOf, positionOf } from '../../src/replication/message-id.js';
import { replicationKey, type ReplicationEvent } from '../../src/model/replication.js';

/** MessageIdData as protobuf: ledgerId (1), entryId (2), partition (3, int32), batch_index (4). */
function messageId(ledgerId: number, entryId: number, partition = -1, batchIndex?: number): string {
  const varint = (value: bigint): number[] => {
    const out: number[] = [];
    let v = value < 0n ? value + (1n << 64n) : value;
    do {
      const byte = Number(v & 0x7fn);
      v >>= 7n;
      out.push(v > 0n ? byte | 0x80 : byte);
    } while (v > 0n);
    return out;
  };
  const bytes = [0x08, ...varint(BigInt(ledgerId)), 0x10, ...varint(BigInt(entryId)), 0x18, ...varint(BigInt(partition))];
  if (batchIndex !== undefined) bytes.push(0x20, ...varint(BigInt(batchIndex)));
  return Buffer.from(bytes).toString('base64');
}

describe('replication message ids', () => {
  it('reads the ledger and entry of a WebSocket message id, partition -1 and batch index included', () => {
    expect(positionOf(messageId(18, 0))).toEqual({ ledgerId: 18, entryId: 0 });
    expect(positionOf(messageId(123_456, 49_999, -1, 3))).toEqual({ ledgerId: 123_456, entryId: 49_999 });
  });

  it('gives indexes that grow with the position, across ledgers', () => {
    const ids = [messageId(5, 0), messageId(5, 1), messageId(5, 49_999), messageId(6, 0), messageId(900, 2)];
    const indexes = ids.map(indexOf);
    expect(indexes[0]).toBeGreaterThan(0);
    for (let i = 1; i < indexes.length; i++) expect(indexes[i]).toBeGreaterThan(indexes[i - 1] as number);
    expect(indexes.every(Number.isSafeInteger)).toBe(true);
  });

  it('refuses what is not a message id, and positions past a safe index', () => {
    expect(() => positionOf(Buffer.from([0x08, 0x05]).toString('base64'))).toThrow(/no ledger and entry/);
    expect(() => positionOf(Buffer.from([0x08, 0x85]).toString('base64'))).toThrow(/truncated/);
    expect(() => indexOf(messageId(1, 2 ** 22))).toThrow(/past what a registry index holds/);
    expect(() => indexOf(messageId(2 ** 31, 0))).toThrow(/past what a registry index holds/);
  });
});

describe('replication keys', () => {
  const base = { v: 1 as const, write: 'w1', origin: 'r1', at: '2026-11-30T00:00:00.000Z' };
  it('keys a write by kind and name, from the path or the body', () => {
    const cases: [Partial<ReplicationEvent>, string][] = [
      [{ op: 'tool.put', body: { name: 'weather' } }, 'tool/weather'],
      [{ op: 'tool.put', target: 'weather', body: {} }, 'tool/weather'],
      [{ op: 'tool.delete', target: 'weather' }, 'tool/weather'],
      [{ op: 'tool-service.put', body: { id: 'joke' } }, 'tool-service/joke'],
      [{ op: 'mcp-server.sync', target: 'docs' }, 'mcp-server/docs'],
      [{ op: 'import', body: {} }, 'import/w1'],
      [{ op: 'marker' }, 'marker/r1'],
      [{ op: 'tool.put', body: 'not an object' }, 'tool/w1'],
    ];
    for (const [fields, key] of cases) expect(replicationKey({ ...base, ...fields } as ReplicationEvent)).toBe(key);
  });
});
