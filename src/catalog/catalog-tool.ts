/** One live tool (or a tombstone's entry) as the catalogue serves it. */
import { createHash } from 'node:crypto';
import type { Tool } from '../model/normalise.js';
import type { PublicTool } from '../model/public-view.js';
import type { ToolRecord } from '../model/records.js';

/** One live tool (or a tombstone's entry): its normalised form, its record and its discovery entry. */
export class CatalogTool {
  readonly tool: Tool;
  readonly record: ToolRecord;
  /** The discovery entry, built once per write of this tool. */
  readonly view: PublicTool;
  #bytes: Buffer | undefined;
  #etag: string | undefined;
  #identity: string | undefined;

  constructor(tool: Tool, record: ToolRecord, view: PublicTool, bytes?: Buffer) {
    this.tool = tool;
    this.record = record;
    this.view = view;
    this.#bytes = bytes;
  }

  /** The discovery entry as JSON bytes, serialised once per write of the tool, when first needed. */
  get bytes(): Buffer {
    this.#bytes ??= Buffer.from(JSON.stringify(this.view));
    return this.#bytes;
  }

  /**
   * What a view's ETag hashes of this tool (views.ts): its name, index and update time, joined
   * once per write of the tool rather than once per view built (issue 33: a plan at 100,000
   * tools joins 16,000 of them).
   */
  get identity(): string {
    this.#identity ??= `\n${this.record.name}\u0000${this.record.index}\u0000${this.record.updatedAt}`;
    return this.#identity;
  }

  /** A strong ETag over `bytes`. */
  get etag(): string {
    this.#etag ??= `"${createHash('sha256').update(this.bytes).digest('base64url').slice(0, 27)}"`;
    return this.#etag;
  }
}
