/**
 * A JSON object body parsed in slices, for bodies too big to parse in one go without stalling
 * every other request (an import of 100,000 tools is tens of MiB: JSON.parse alone held the
 * event loop for most of a second). The top-level object is scanned over its bytes; each value,
 * and each element of a top-level array, is parsed on its own by the app's JSON body rules
 * (json-body.ts: syntax, depth, duplicate and prototype keys), and the event loop is given back
 * between slices of a few milliseconds (the app's one Scheduler, src/catalog/scheduler.ts).
 *
 * Quotes, backslashes and brackets are ASCII, and UTF-8 never uses ASCII bytes inside a
 * multi-byte character, so value boundaries are found on the bytes without decoding them.
 */
import { RegistryError } from '../model/errors.js';
import type { Scheduler } from '../catalog/scheduler.js';
import { decodeUtf8, parseJsonBody } from './json-body.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

function invalid(): RegistryError {
  return new RegistryError('TR_ERR_INVALID_JSON', 'the request body is not valid JSON');
}

function itemTooLarge(path: readonly string[], bytes: number, limit: { bytes: number; setting: string }): RegistryError {
  const at = path.join('.');
  // A 400 naming the item, as json-body.ts refuses too deep a nesting: the body as a whole may be fine.
  return new RegistryError(
    'TR_ERR_BAD_REQUEST',
    `${at} is ${bytes} bytes of JSON, more than the ${limit.bytes} one item may take (${limit.setting})`,
    {
      fieldErrors: [{ path: at, message: `is larger than ${limit.bytes} bytes (${limit.setting})` }],
    },
  );
}

function isSpace(c: number | undefined): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

/** The position of the quote that closes the string opening at `start`. */
function stringEnd(buf: Buffer, start: number): number {
  let end = buf.indexOf(QUOTE, start + 1);
  for (;;) {
    if (end < 0) throw invalid();
    let slashes = 0;
    while (buf[end - 1 - slashes] === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return end;
    end = buf.indexOf(QUOTE, end + 1);
  }
}

/** The position just after the JSON value starting at `start` (its syntax is checked later). */
function valueEnd(buf: Buffer, start: number): number {
  const first = buf[start];
  if (first === QUOTE) return stringEnd(buf, start) + 1;
  if (first === 0x7b || first === 0x5b) {
    let depth = 0;
    for (let i = start; i < buf.length; i++) {
      const c = buf[i];
      if (c === QUOTE) i = stringEnd(buf, i);
      else if (c === 0x7b || c === 0x5b) depth++;
      else if (c === 0x7d || c === 0x5d) {
        depth--;
        if (depth === 0) return i + 1;
      }
    }
    throw invalid();
  }
  let i = start;
  while (i < buf.length && buf[i] !== 0x2c && buf[i] !== 0x7d && buf[i] !== 0x5d && !isSpace(buf[i])) i++;
  if (i === start) throw invalid();
  return i;
}

export interface SlicedOptions {
  maxDepth: number;
  /**
   * The most bytes one element of a top-level array may take, and the setting that says so: an
   * import's item no bigger than a write of it alone. Without it, one item of tens of MiB whose
   * every entry is wrong made zod raise an issue each, which overflowed the stack (issue 28).
   */
  maxItem?: { bytes: number; setting: string };
  /** The app's one scheduler of background work (the catalogue's), whose slices the parse takes turns in. */
  scheduler: Scheduler;
}

/**
 * The sliced parses' name among the scheduler's owners: however many big bodies come at once,
 * they share one owner's turns, so that uploads of imports do not crowd out the search
 * backlog, replays or the import being written.
 */
const BODY_OWNER = 'request-body';

/**
 * Parses `buf` as JSON. A top-level object is parsed value by value, and its array values
 * element by element, giving the event loop back whenever the scheduler's slice is used up;
 * anything else is parsed whole. Refuses what the app's body parser refuses, with the same
 * errors (paths included).
 */
export async function parseJsonSliced(buf: Buffer, options: SlicedOptions): Promise<unknown> {
  let i = 0;
  const skip = () => {
    while (isSpace(buf[i])) i++;
  };
  skip();
  // Every byte is decoded strictly (decodeUtf8) on its way to JSON.parse: keys and values by
  // slice, and any other byte must be JSON's ASCII punctuation or whitespace.
  if (buf[i] !== 0x7b) return parseJsonBody(decodeUtf8(buf), options.maxDepth);
  // Depth counts as in json-body.ts: the top-level object is one level, an array in it two.
  const parse = (start: number, end: number, depth: number, path: string[]) =>
    parseJsonBody(decodeUtf8(buf, start, end), options.maxDepth, { depth, path });
  const result = Object.create(null) as Record<string, unknown>;
  i++;
  skip();
  if (buf[i] === 0x7d) i++;
  else {
    for (;;) {
      skip();
      if (buf[i] !== QUOTE) throw invalid();
      const keyEnd = stringEnd(buf, i);
      const key = JSON.parse(decodeUtf8(buf, i, keyEnd + 1)) as string;
      if (key === '__proto__') {
        throw new RegistryError('TR_ERR_BAD_REQUEST', `the request body has a "${key}" key, which is not accepted`, {
          fieldErrors: [{ path: key, message: 'key not accepted' }],
        });
      }
      if (Object.hasOwn(result, key)) {
        throw new RegistryError('TR_ERR_BAD_REQUEST', `the request body gives the key "${key}" twice`, {
          fieldErrors: [{ path: key, message: 'duplicate key' }],
        });
      }
      i = keyEnd + 1;
      skip();
      if (buf[i] !== 0x3a) throw invalid();
      i++;
      skip();
      if (buf[i] === 0x5b) {
        if (options.maxDepth < 2) parse(i, valueEnd(buf, i), 1, [key]);
        const items: unknown[] = [];
        i++;
        skip();
        if (buf[i] === 0x5d) i++;
        else {
          for (;;) {
            skip();
            const end = valueEnd(buf, i);
            if (options.maxItem && end - i > options.maxItem.bytes)
              throw itemTooLarge([key, String(items.length)], end - i, options.maxItem);
            items.push(parse(i, end, 2, [key, String(items.length)]));
            i = end;
            skip();
            if (buf[i] === 0x2c) i++;
            else if (buf[i] === 0x5d) {
              i++;
              break;
            } else throw invalid();
            await options.scheduler.turn(BODY_OWNER);
          }
        }
        result[key] = items;
      } else {
        const end = valueEnd(buf, i);
        const value = parse(i, end, 1, [key]);
        // `constructor.prototype` is refused as the body parser refuses it (it sees both levels).
        if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype')) {
          throw new RegistryError('TR_ERR_BAD_REQUEST', 'the request body has a "prototype" key, which is not accepted', {
            fieldErrors: [{ path: 'constructor.prototype', message: 'key not accepted' }],
          });
        }
        result[key] = value;
        i = end;
      }
      skip();
      if (buf[i] === 0x2c) {
        i++;
        continue;
      }
      if (buf[i] === 0x7d) {
        i++;
        break;
      }
      throw invalid();
    }
  }
  skip();
  if (i !== buf.length) throw invalid();
  // A plain object, as JSON.parse gives (the null prototype only guarded the keys above).
  return { ...result };
}
