/**
 * Entry bytes for big writes, carved from shared slabs. Node's Buffer.from takes each entry from
 * an 8 KiB pool of its own, so 100,000 entries made ~9,000 ArrayBuffers, and while the import
 * prepared them V8 stopped in ArrayBuffer allocation (its sweeper of ArrayBuffers) for 30-50 ms
 * at a time. A slab is freed when the last entry in it is.
 */
export class ByteArena {
  readonly #slabBytes: number;
  #slab = Buffer.alloc(0);
  #used = 0;

  constructor(slabBytes: number) {
    this.#slabBytes = slabBytes;
  }

  bytesOf(text: string): Buffer {
    const length = Buffer.byteLength(text);
    // A big text would waste most of a slab's tail, and is rare: a buffer of its own.
    if (length > this.#slabBytes / 16) return Buffer.from(text);
    if (this.#used + length > this.#slab.length) {
      this.#slab = Buffer.allocUnsafeSlow(this.#slabBytes);
      this.#used = 0;
    }
    const at = this.#used;
    this.#used += this.#slab.write(text, at, length);
    return this.#slab.subarray(at, this.#used);
  }
}
