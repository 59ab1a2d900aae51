/**
 * Regression tests for what an outside review of issue 28's fixes found (02 Dec 2026). Every
 * test here FAILS on the commit it was written against (edaf757), but the one marked "holds
 * today" in F6; each names the finding of the review it pins down.
 *
 * - F1: RE2 runs in time linear in the text but proportional to the pattern's automaton too, and
 *   the work model (work.ts) counts a `pattern` as one step per character whatever its size. A
 *   204-character pattern (`[ab]{1000}` twenty times) against a 19,900-character string is
 *   estimated under INLINE_VALIDATION_WORK, so it runs on the event loop: 5 to 8 s there, for
 *   arguments (invoke, /mcp, /ag-ui) and for an upstream's answer against its output schema alike.
 * - F2: compiling one 13 KB pattern on re2js takes 1.2 to 2 s on the event loop (registration, an
 *   upstream's tool list), and the compiled-pattern cache in regex.ts keeps about 94 MB of heap
 *   for each, with a count limit (10,000) and no size limit: a hostile upstream that lists 14
 *   tools of 4 such patterns crashed a registry with "JavaScript heap out of memory".
 * - F3: `\S` inside a class is passed to RE2 as is, where it is ASCII-only: `^[\S]+$` accepts
 *   U+00A0, U+000B, U+2028 and U+FEFF, which ECMAScript (and the schema's author) refuse.
 * - F4: `\p{Script_Extensions=X}` is run as `\p{X}` (Script), a different, smaller set: under
 *   `\P{...}` RE2 accepts what ECMAScript refuses.
 * - F5: the validation worker's time limit starts when a check is queued, not when the worker
 *   starts it, and a check that times out while queued terminates the worker anyway: an
 *   innocent caller's trivial check queued behind a slow one is refused as "took longer than
 *   ... send a smaller value", and the slow one is restarted from scratch.
 * - F6: the self rule compares PUBLIC_URL's host as written: with PUBLIC_URL=http://runsc:18410
 *   (a proxy in front of the registry; runsc resolves to 127.0.0.1), a tool at
 *   127.0.0.1:18410 /tools/loopip/invoke was registered and one call became 101 nested calls
 *   through the proxy, each with the caller's token. The addresses PUBLIC_URL's name resolves
 *   to are not compared with the address a call connects to.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { TargetRefusedError } from '../../src/bridge/errors.js';
import { OutboundPolicy } from '../../src/bridge/outbound-policy.js';
import { ArgumentValidators, OutputValidators } from '../../src/json-schema/arguments.js';
import { schemaProblems } from '../../src/json-schema/check.js';
import { linearRegExp, NonLinearPatternError } from '../../src/json-schema/regex.js';
import { ValidationPool } from '../../src/json-schema/validation-pool.js';
import type { Tool } from '../../src/model/normalise.js';

let n = 0;
const toolOf = (schemas: { inputSchema?: Record<string, unknown>; outputSchema?: Record<string, unknown> }) =>
  ({
    name: `review${n++}`,
    inputSchema: schemas.inputSchema ?? { type: 'object' },
    ...(schemas.outputSchema && { outputSchema: schemas.outputSchema }),
  }) as unknown as Tool;

/** No backtracking anywhere, but an automaton of 20,000 states, every one alive on a long run of `a`s. */
const HUGE_PATTERN = `${'[ab]{1000}'.repeat(20)}[cd]`;
/** As large an automaton as a pattern may have (about 4,000 states): still seconds on 19,900 `a`s. */
const WIDE_PATTERN = `${'[ab]{1000}'.repeat(4)}[cd]`;
/** Just under the inline estimate: about 19,900 steps by work.ts, seconds of re2js. */
const LONG_VALUE = { s: 'a'.repeat(19_900) };

/** How long `start` holds the event loop before it hands back its promise (what every other request waits for). */
async function heldFor(start: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  const pending = start();
  const held = performance.now() - t;
  await pending.catch(() => undefined);
  return held;
}

describe('F1 (fixed): a pattern with a large automaton is no cheaper than its length says', () => {
  const context = { owner: 'review', timeoutMs: 2_000 };

  it('a pattern of 20,000 states is refused at registration, naming it', () => {
    expect(schemaProblems({ type: 'object', properties: { s: { type: 'string', pattern: HUGE_PATTERN } } })).toEqual([
      {
        path: ['properties', 's', 'pattern'],
        message: expect.stringMatching(/compiles to about \d+ states of the linear-time engine, more than the 5000/),
      },
    ]);
  });

  it('checking arguments against it does not hold the event loop (invoke, /mcp, /ag-ui)', async () => {
    const validators = new ArgumentValidators();
    const tool = toolOf({ inputSchema: { type: 'object', properties: { s: { type: 'string', pattern: WIDE_PATTERN } } } });
    // Compiled (and its pattern) first, so only the check is measured.
    await validators.check(tool, { s: 'c' }, context);
    const held = await heldFor(() => validators.check(tool, LONG_VALUE, context));
    // Observed: 5,000 to 8,300 ms (the same call over HTTP held /healthz for 8.3 s).
    expect(held).toBeLessThan(200);
  }, 60_000);

  it("checking an upstream's answer against its output schema does not hold the event loop", async () => {
    const validators = new OutputValidators();
    const tool = toolOf({ outputSchema: { type: 'object', properties: { s: { type: 'string', pattern: WIDE_PATTERN } } } });
    await validators.check(tool, { s: 'c' }, context);
    const held = await heldFor(() => validators.check(tool, LONG_VALUE, context));
    // Observed over /mcp with an SDK upstream answering this: the call and /healthz took 7.4 s.
    expect(held).toBeLessThan(200);
  }, 60_000);
});

describe('F2 (fixed): large patterns at registration and in the compiled-pattern cache', () => {
  /** 13 KB: below re2js's "expression too large", far below MAX_SCHEMA_BYTES. */
  const bigPattern = (tag: string) => `${'[ab]{1000}'.repeat(1300)}x${tag}`;

  it('the registration check of a schema with a large pattern is refused or quick', () => {
    const t = performance.now();
    const problems = schemaProblems({ type: 'object', properties: { p: { type: 'string', pattern: bigPattern(`quick${Date.now()}`) } } });
    const took = performance.now() - t;
    // Observed: no problem, after 1,200 to 2,000 ms on the event loop (per pattern; 4 fit one schema,
    // and an upstream's tool list is checked tool after tool on the event loop).
    expect(problems.length > 0 || took < 250).toBe(true);
  }, 60_000);

  it('compiled patterns do not keep hundreds of megabytes of heap', () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 3; i++)
      schemaProblems({ type: 'object', properties: { p: { type: 'string', pattern: bigPattern(`heap${Date.now()}_${i}`) } } });
    gc();
    const retained = process.memoryUsage().heapUsed - before;
    // Observed: about 94 MB retained per pattern (282 MB for these 3); a hostile upstream's 56
    // patterns took a registry with the default 4 GB heap to "JavaScript heap out of memory".
    expect(retained).toBeLessThan(100 * 1024 * 1024);
  }, 60_000);
});

/** The pattern means what ECMA-262 (with the `u` flag) says, or it is refused at registration. */
function agreesWithEcmaScript(pattern: string, text: string): void {
  const ecma = new RegExp(pattern, 'u').test(text);
  let linear: boolean;
  try {
    linear = linearRegExp(pattern).test(text);
  } catch (err) {
    expect(err).toBeInstanceOf(NonLinearPatternError);
    return;
  }
  expect({ pattern, text, linear }).toEqual({ pattern, text, linear: ecma });
}

describe("F3 (fixed): \\S inside a class is ECMAScript's \\S", () => {
  it.each(['00A0', '000B', '2028', 'FEFF', '3000'])('^[\\S]+$, ^[^\\S]$ and ^[a\\S]$ against U+%s', (code) => {
    const space = String.fromCodePoint(Number.parseInt(code, 16));
    agreesWithEcmaScript('^[\\S]+$', space);
    agreesWithEcmaScript('^[^\\S]$', space);
    agreesWithEcmaScript('^[a\\S]$', space);
  });
});

describe('F4 (fixed): Script_Extensions is not Script', () => {
  it('\\P{Script_Extensions=Greek} refuses U+0342 (Greek by extension) as ECMAScript does, or is refused', () => {
    agreesWithEcmaScript('^\\P{Script_Extensions=Greek}$', '\u0342');
    agreesWithEcmaScript('^\\P{scx=Greek}$', '\u0342');
  });
});

describe('F5 (fixed): a check waiting for the worker is not timed, nor blamed, for the one it waits behind', () => {
  it("an innocent caller's trivial check queued behind a slow one gets its answer", async () => {
    const pool = new ValidationPool();
    const options = (owner: string, timeoutMs: number) => ({ owner, timeoutMs, what: 'arguments', budget: 5_000_000 });
    try {
      await pool.check(1, { type: 'object' }, {}, options('warm-up', 10_000));
      // Settled whichever way (refused for its work, or answered): held so its refusal is not unhandled.
      const slow = pool
        .check(2, { type: 'object', properties: { s: { type: 'string', pattern: WIDE_PATTERN } } }, LONG_VALUE, options('hostile', 30_000))
        .catch((err: unknown) => err);
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Observed: refused after 1 s, "checking the arguments took longer than 1000 ms, and was
      // stopped: send a smaller value", though it never ran; the slow check was restarted.
      await expect(
        pool.check(3, { type: 'object', properties: { n: { type: 'integer' } } }, { n: 'x' }, options('innocent', 1_000)),
      ).resolves.toEqual([{ path: '/n', message: 'must be integer' }]);
      await slow;
    } finally {
      pool.close();
    }
  }, 60_000);
});

describe("F6 (FAILS): PUBLIC_URL's host is the registry's own, by whatever address or name it is reached", () => {
  const policy = () => {
    const policy = new OutboundPolicy({
      allow: [],
      deny: [],
      host: '127.0.0.1',
      publicUrl: new URL('https://registry.example:8443/'),
      resolve: async (name) => (name === 'registry.example' || name === 'proxy.internal' ? [{ address: '10.1.2.3', family: 4 }] : []),
      interfaceAddresses: () => ['127.0.0.1'],
    });
    policy.listening(8006);
    return policy;
  };

  it('written as the name it is refused (holds today)', async () => {
    await expect(policy().addressesFor('registry.example', 8443)).rejects.toBeInstanceOf(TargetRefusedError);
  });

  it('written as the address the name resolves to, a call there is refused', async () => {
    // Observed: [10.1.2.3] is returned, and the call goes through the proxy back to the registry.
    await expect(policy().addressesFor('10.1.2.3', 8443)).rejects.toBeInstanceOf(TargetRefusedError);
  });

  it('written as another name of the same address, a call there is refused', async () => {
    await expect(policy().addressesFor('proxy.internal', 8443)).rejects.toBeInstanceOf(TargetRefusedError);
  });
});
