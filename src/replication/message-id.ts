/**
 * Pulsar message ids as the WebSocket API gives them (base64 of the MessageIdData protobuf:
 * field 1 ledgerId, field 2 entryId, then partition and batch index) and the registry index
 * derived from them. A topic's positions grow with (ledgerId, entryId), and every replica reads
 * the same id for the same message, so the index means the same on every replica.
 *
 * The index packs the position into one safe integer: ledgerId * 2^22 + entryId + 1. Pulsar
 * rolls a ledger over at 50,000 entries by default (managedLedgerMaxEntriesPerLedger), far under
 * 2^22; ledger ids stay under 2^31 before the packing would pass 2^53.
 */

const ENTRY_BITS = 2 ** 22;
const MAX_LEDGER = 2 ** 31;

export interface Position {
  ledgerId: number;
  entryId: number;
}

/** Reads a varint at `offset`; returns [value, next offset]. Values past 2^53 lose precision (checked by the caller). */
function varint(bytes: Uint8Array, offset: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = offset; i < bytes.length && i < offset + 10; i++) {
    const byte = bytes[i] as number;
    value += (byte & 0x7f) * scale;
    scale *= 128;
    if ((byte & 0x80) === 0) return [value, i + 1];
  }
  throw new Error('a truncated varint');
}

/** The position in a WebSocket message id; throws on anything that is not one. */
export function positionOf(messageId: string): Position {
  const bytes = Buffer.from(messageId, 'base64');
  let ledgerId: number | undefined;
  let entryId: number | undefined;
  let offset = 0;
  while (offset < bytes.length) {
    const [tag, next] = varint(bytes, offset);
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    offset = next;
    if (wire === 0) {
      const [value, after] = varint(bytes, offset);
      offset = after;
      if (field === 1) ledgerId = value;
      else if (field === 2) entryId = value;
    } else if (wire === 2) {
      const [length, after] = varint(bytes, offset);
      offset = after + length;
    } else if (wire === 1) offset += 8;
    else if (wire === 5) offset += 4;
    else throw new Error(`message id ${messageId}: wire type ${wire}`);
  }
  if (ledgerId === undefined || entryId === undefined) throw new Error(`message id ${messageId} has no ledger and entry`);
  return { ledgerId, entryId };
}

/** The registry index of a message: the same on every replica. */
export function indexOf(messageId: string): number {
  const { ledgerId, entryId } = positionOf(messageId);
  if (entryId >= ENTRY_BITS || ledgerId >= MAX_LEDGER) {
    throw new Error(
      `message id ${messageId}: ledger ${ledgerId} entry ${entryId} is past what a registry index holds (entries under 2^22, ledgers under 2^31)`,
    );
  }
  return ledgerId * ENTRY_BITS + entryId + 1;
}
