/**
 * Self-announcing tool services (issues 14 and 29): a tool service publishes its own descriptor
 * and its tools on the announcement topic (ANNOUNCE_TOPIC), at start, on change and as its
 * heartbeat, every `heartbeatIntervalS`. Every message is the whole announcement, so a registry
 * that starts later learns everything from the next heartbeat, and a message that is lost costs
 * nothing.
 *
 * The message is a JWS in compact serialisation (RFC 7515) and nothing else: its protected
 * header names the key (`kid`) and says what it is (`typ`: ANNOUNCEMENT_TYP); its payload is an
 * `Announcement`. The key is one an operator trusts for one announcer (ANNOUNCER_KEYS_FILE,
 * src/model/announcer-bindings.ts), and the registry takes each process's sequence numbers
 * (`instance`, `seq`) only upwards, so a message read off the topic cannot be replayed. No bearer
 * token travels in the message any more (version 1 carried one, readable by every consumer of
 * the topic: refused now).
 *
 * `"goodbye": true` says the service is stopping: its tools are marked unavailable at once
 * instead of after missed heartbeats.
 */
import { z } from 'zod';
import { ScopeSchema } from './schemas.js';

export const ANNOUNCEMENT_VERSION = 2;

/** The JWS header's `typ`: a signature over an announcement is good for nothing else. */
export const ANNOUNCEMENT_TYP = 'tool-registry-announcement+jws';

/** Heartbeats may come this often at most, and this rarely at least. */
const MIN_HEARTBEAT_S = 1;
const MAX_HEARTBEAT_S = 3600;

/** A service is unavailable once this many heartbeats in a row are missing. */
export const MISSED_HEARTBEATS = 3;

/** The largest compact JWS read off the topic (the broker's frames are 1 MiB by default). */
export const MAX_ANNOUNCEMENT_CHARS = 4 * 1024 * 1024;

/** What an announcer signs: the JWS payload. */
export const AnnouncementSchema = z.strictObject({
  v: z.literal(ANNOUNCEMENT_VERSION),
  /** The announcer: the subject its key is bound to in ANNOUNCER_KEYS_FILE (and the owner `announcer:<sub>`). */
  sub: ScopeSchema,
  /**
   * The announcing process (a random id per start, say): sequence numbers count up per
   * process, so replicas of one service, and a restarted one, need no shared counter.
   */
  instance: z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, 'must be 1 to 128 letters, digits, "_", ".", ":" or "-"'),
  /** Higher than every earlier message of this process: the registry refuses a replay and anything older. */
  seq: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
  /** When it was signed, seconds since the epoch: refused beyond ANNOUNCE_MAX_SKEW_S of the registry's clock. */
  iat: z.number().int().min(0),
  /** The tool service descriptor, as `PUT /tool-services/{id}` takes it. */
  service: z.record(z.string(), z.unknown()),
  /** Its tools, as `PUT /tools/{name}` takes them (each names the service). */
  tools: z.array(z.record(z.string(), z.unknown())).max(1000).default([]),
  heartbeatIntervalS: z.number().min(MIN_HEARTBEAT_S).max(MAX_HEARTBEAT_S).default(10),
  /** The service is stopping: mark it unavailable now. */
  goodbye: z.boolean().default(false),
});

export type Announcement = z.infer<typeof AnnouncementSchema>;
