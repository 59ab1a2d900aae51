/**
 * An import too big for one message (src/replication/replicator.ts): the writer cuts the
 * bundle's JSON text into chunks that each fit one `import.part` message, and publishes them in
 * order under one write id; every replica stages them and applies the import at the last one
 * (RegistryService.applyReplicated).
 *
 * A chunk travels as a JSON string inside the message, where `"` and `\` take two bytes and
 * characters past ASCII two to four, so the cut is sized on that encoding, and never falls
 * inside a surrogate pair: each chunk is well-formed text on its own (SQLite stores it as UTF-8).
 */
import type { ReplicationEvent } from '../model/replication.js';

/** Characters scanned between two chances to give the event loop back. */
const SCAN_STEP = 64 * 1024;

/** Bytes the character at `i` takes inside a JSON string literal, and its length in code units. */
function encodedSize(text: string, i: number): [bytes: number, width: number] {
  const c = text.charCodeAt(i);
  if (c === 0x22 || c === 0x5c) return [2, 1];
  if (c < 0x20) return [c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6, 1];
  if (c < 0x80) return [1, 1];
  if (c < 0x800) return [2, 1];
  if (c >= 0xd800 && c <= 0xdbff) {
    const next = i + 1 < text.length ? text.charCodeAt(i + 1) : 0;
    // A pair is one character of four bytes; a lone surrogate is written as \udXXX.
    return next >= 0xdc00 && next <= 0xdfff ? [4, 2] : [6, 1];
  }
  if (c >= 0xdc00 && c <= 0xdfff) return [6, 1];
  return [3, 1];
}

/**
 * Cuts `text` into chunks whose JSON string encoding (without the quotes) takes at most
 * `maxChunkBytes` each; a generator that yields every few thousand characters (the replicator
 * runs it with the app's Scheduler), ending with the chunks.
 */
export function* cutIntoChunks(text: string, maxChunkBytes: number): Generator<void, string[], void> {
  if (maxChunkBytes < 6) throw new Error(`a chunk of ${maxChunkBytes} bytes cannot hold every character`);
  const chunks: string[] = [];
  let start = 0;
  let bytes = 0;
  let scanned = 0;
  for (let i = 0; i < text.length;) {
    const [size, width] = encodedSize(text, i);
    if (bytes + size > maxChunkBytes) {
      chunks.push(text.slice(start, i));
      start = i;
      bytes = 0;
    }
    bytes += size;
    i += width;
    if (++scanned % SCAN_STEP === 0) yield;
  }
  if (start < text.length || chunks.length === 0) chunks.push(text.slice(start));
  return chunks;
}

/** The `import.part` messages of an import, in order; `at` is read as each is built (just before it is published). */
export interface ImportParts {
  count: number;
  /** The message of part `part` (0-based) as JSON, stamped with `at`. */
  message(part: number, at: string): string;
}

/**
 * The parts of `base`'s import (its body's JSON text in `text`) for messages of at most
 * `maxMessageBytes` of JSON; undefined past `maxParts`. Sized with the widest numbers a part
 * can carry, so every part fits whatever its number.
 */
export function* importParts(
  base: ReplicationEvent,
  text: string,
  maxMessageBytes: number,
  maxParts: number,
): Generator<void, ImportParts | undefined, void> {
  const { body: _body, ...header } = base;
  const part = (n: number, count: number, chunk: string, at: string): ReplicationEvent => ({
    ...header,
    op: 'import.part',
    at,
    part: n,
    parts: count,
    chunk,
  });
  const envelope = Buffer.byteLength(JSON.stringify(part(maxParts, maxParts, '', base.at)));
  const chunks = yield* cutIntoChunks(text, maxMessageBytes - envelope);
  if (chunks.length > maxParts) return undefined;
  return {
    count: chunks.length,
    message: (n, at) => JSON.stringify(part(n, chunks.length, chunks[n] ?? '', at)),
  };
}
