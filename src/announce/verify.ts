/**
 * An announcement's signature, freshness and order (issue 29): the message is a compact JWS
 * (src/model/announcement.ts) whose header names a key an operator bound to one announcer
 * (ANNOUNCER_KEYS_FILE). Refused: anything not signed by such a key, a signature over something
 * else (`typ`), a payload naming another subject than its key's, an issued-at beyond the skew
 * bound, and a sequence number not above every one taken from that process before (a replay).
 */
import type { KeyObject } from 'node:crypto';
import { compactVerify, decodeProtectedHeader, errors } from 'jose';
import {
  ANNOUNCEMENT_TYP,
  ANNOUNCEMENT_VERSION,
  AnnouncementSchema,
  MAX_ANNOUNCEMENT_CHARS,
  type Announcement,
} from '../model/announcement.js';
import type { AnnouncerBinding } from '../model/announcer-bindings.js';

/** A key from ANNOUNCER_KEYS_FILE (src/config/checks.ts), with the binding it belongs to. */
export interface TrustedKey {
  binding: AnnouncerBinding;
  key: KeyObject;
  alg: string;
}

/**
 * The last sequence number taken per announcer process (src/store/announcer-sequence-rows.ts,
 * an in-memory one in tests): `advance` takes a higher one, atomically, or answers false.
 */
export interface SequenceLedger {
  advance(subject: string, instance: string, seq: number, iat: number): boolean;
  prune(iat: number): number;
}

export type Verified = { ok: true; announcement: Announcement; binding: AnnouncerBinding };
/** Why an announcement was refused; `subject` once its signature was good (the audit's subject). */
export type Refused = { ok: false; reason: string; status: 400 | 401 | 403 | 409; subject?: string; serviceId?: string };

const decoder = new TextDecoder('utf-8', { fatal: true });

/** The service id a payload names, for the audit of a refusal (never trusted for anything else). */
function serviceIdOf(announcement: Announcement): string | undefined {
  const id = announcement.service['id'];
  return typeof id === 'string' ? id : undefined;
}

/** Signature and payload; no side effect (the sequence is taken by the caller, in order). */
export async function verifySignature(text: string | undefined, keys: ReadonlyMap<string, TrustedKey>): Promise<Verified | Refused> {
  if (text === undefined || text.length > MAX_ANNOUNCEMENT_CHARS)
    return { ok: false, reason: 'not an announcement (a compact JWS, src/model/announcement.ts)', status: 400 };
  let kid: unknown;
  try {
    kid = decodeProtectedHeader(text).kid;
  } catch {
    // Version 1 was JSON carrying a bearer token: say so, since its senders must be upgraded.
    const legacy = text.trimStart().startsWith('{');
    return {
      ok: false,
      reason: legacy
        ? `an unsigned announcement (version 1, with a bearer token): only signed ones (version ${ANNOUNCEMENT_VERSION}) are taken`
        : 'not an announcement (a compact JWS, src/model/announcement.ts)',
      status: legacy ? 401 : 400,
    };
  }
  const trusted = typeof kid === 'string' ? keys.get(kid) : undefined;
  if (trusted === undefined) return { ok: false, reason: 'signed with a key no announcer binding names (kid)', status: 401 };
  const subject = trusted.binding.subject;
  let payload: Uint8Array;
  try {
    const verified = await compactVerify(text, trusted.key, { algorithms: [trusted.alg] });
    if (verified.protectedHeader.typ !== ANNOUNCEMENT_TYP)
      return { ok: false, reason: `its JWS header's typ is not ${ANNOUNCEMENT_TYP}`, status: 401, subject };
    payload = verified.payload;
  } catch (err) {
    const why = err instanceof errors.JOSEError ? err.code : 'ERR_JWS_INVALID';
    return { ok: false, reason: `its signature was refused (${why}; kid of announcer ${subject})`, status: 401 };
  }
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(payload));
  } catch {
    value = undefined;
  }
  const parsed = AnnouncementSchema.safeParse(value);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(payload)'}: ${issue.message}`);
    return { ok: false, reason: `its payload is not an announcement: ${problems.slice(0, 5).join('; ')}`, status: 400, subject };
  }
  const announcement = parsed.data;
  if (announcement.sub !== subject)
    return {
      ok: false,
      reason: `it names subject "${announcement.sub}", but its key is bound to "${subject}"`,
      status: 403,
      subject,
      ...(serviceIdOf(announcement) !== undefined && { serviceId: serviceIdOf(announcement) }),
    };
  return { ok: true, announcement, binding: trusted.binding };
}

/** Issued-at within `maxSkewS` of `nowS`, and a sequence number above the last taken (which it then is). */
export function takeInOrder(verified: Verified, ledger: SequenceLedger, nowS: number, maxSkewS: number): Refused | undefined {
  const { announcement, binding } = verified;
  const subject = binding.subject;
  const serviceId = serviceIdOf(announcement);
  const base = { subject, ...(serviceId !== undefined && { serviceId }) };
  if (Math.abs(nowS - announcement.iat) > maxSkewS) {
    const ago = nowS - announcement.iat;
    return {
      ok: false,
      reason: `it was issued ${ago > 0 ? `${ago} s ago` : `${-ago} s ahead of this clock`}, beyond ANNOUNCE_MAX_SKEW_S (${maxSkewS} s)`,
      status: 401,
      ...base,
    };
  }
  if (!ledger.advance(subject, announcement.instance, announcement.seq, announcement.iat))
    return {
      ok: false,
      reason: `a replay: sequence number ${announcement.seq} of instance ${announcement.instance} is not above the last one taken`,
      status: 409,
      ...base,
    };
  return undefined;
}
