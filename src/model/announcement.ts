/**
 * Self-announcing tool services (issue 14): a tool service publishes its own descriptor and its
 * tools on the announcement topic (ANNOUNCE_TOPIC), at start, on change and as its heartbeat,
 * every `heartbeatIntervalS`. Every message is the whole announcement, so a registry that starts
 * later learns everything from the next heartbeat, and a message that is lost costs nothing.
 *
 * The announcer proves who it is with a bearer token in the message (`token`): a JWT the
 * registry verifies as it verifies any token, which must hold ANNOUNCE_SCOPE
 * (`registry:announce` by default). The registry registers what it announces under that
 * announcer's identity; it never writes over a tool or service an operator registered.
 *
 * `{"v": 1, "goodbye": true, ...}` (with the token and the service id) says the service is
 * stopping: its tools are marked unavailable at once instead of after missed heartbeats.
 */
import { z } from 'zod';

export const ANNOUNCEMENT_VERSION = 1;

/** Heartbeats may come this often at most, and this rarely at least. */
const MIN_HEARTBEAT_S = 1;
const MAX_HEARTBEAT_S = 3600;

/** A service is unavailable once this many heartbeats in a row are missing. */
export const MISSED_HEARTBEATS = 3;

export const AnnouncementSchema = z.strictObject({
  v: z.literal(ANNOUNCEMENT_VERSION),
  /** A JWT holding ANNOUNCE_SCOPE; its `sub` is the announcer. */
  token: z.string().min(1).max(16_384),
  /** The tool service descriptor, as `PUT /tool-services/{id}` takes it. */
  service: z.record(z.string(), z.unknown()),
  /** Its tools, as `PUT /tools/{name}` takes them (each names the service). */
  tools: z.array(z.record(z.string(), z.unknown())).max(1000).default([]),
  heartbeatIntervalS: z.number().min(MIN_HEARTBEAT_S).max(MAX_HEARTBEAT_S).default(10),
  /** The service is stopping: mark it unavailable now. */
  goodbye: z.boolean().default(false),
});

export type Announcement = z.infer<typeof AnnouncementSchema>;
