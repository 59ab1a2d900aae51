/**
 * A tool service announcing itself (issues 14 and 29, src/model/announcement.ts) on a producer of
 * its own: at once when the service (again) listens or its tools change, then every heartbeat
 * while the service listens; a goodbye when it stops. Every message is a compact JWS signed with
 * the announcer's private key, numbered by a sequence that counts up from 1 for this process
 * (`instance`, a random id), so that a registry refuses any message read off the topic and sent
 * again. The producer reconnects with the service's backoff after any close, until stopped
 * (src/pulsar/).
 */
import { randomUUID, type KeyObject } from 'node:crypto';
import { CompactSign } from 'jose';
import { ANNOUNCEMENT_TYP, ANNOUNCEMENT_VERSION, type Announcement } from '../model/announcement.js';
import { oversize, oversizeMessage, type BusLimits } from '../pulsar/limits.js';
import { Producer } from '../pulsar/producer.js';
import { producerUrl, publishFrame } from '../pulsar/wire.js';

/** What the announcer needs from its service. */
export interface AnnouncerContext {
  /** Pulsar's WebSocket API. */
  url: string;
  /** The broker's token (`Authorization` on the WebSocket), not the announcement's. */
  brokerToken: string | undefined;
  connectTimeoutMs: number;
  pingIntervalMs: number;
  retryDelayMs: { minMs?: number | undefined; maxMs?: number | undefined };
  limits: BusLimits;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void; error(obj: object, msg: string): void };
  /** Whether the service takes requests now; heartbeats go out only then, as they claim it does. */
  listening: () => boolean;
}

/** What the announcer signs with: its subject, as the registry's binding names it, and its key. */
export interface AnnouncementSigner {
  subject: string;
  keyId: string;
  key: KeyObject;
  alg: string;
}

/** An announcement's content: what every message repeats. */
export type AnnouncedContent = Pick<Announcement, 'service' | 'tools' | 'heartbeatIntervalS'>;

const encoder = new TextEncoder();

export class Announcer {
  readonly #producer: Producer;
  #heartbeat: NodeJS.Timeout | undefined;
  #stopped = false;
  /** An announcement has gone out since the last goodbye (or ever): a goodbye is worth sending. */
  #live = false;
  /** Log the next announcement the broker takes (after a connection, or a change of tools). */
  #logNext = true;
  /** The current announcement was found too large, and that was logged. */
  #tooLarge = false;
  #message: AnnouncedContent;
  /** This process's messages count up from 1; a registry takes each number once, in order. */
  readonly #instance = randomUUID();
  #seq = 0;
  /** Messages are signed and handed to the producer one after the other, so they go out in `seq` order. */
  #inOrder: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly ctx: AnnouncerContext,
    private readonly topic: string,
    announcement: AnnouncedContent,
    private readonly signer: AnnouncementSigner,
  ) {
    this.#message = announcement;
    this.#producer = new Producer(
      {
        url: producerUrl(ctx.url, topic),
        // The broker's token on the upgrade request; the announcement carries a signature, no token.
        token: ctx.brokerToken,
        connectTimeoutMs: ctx.connectTimeoutMs,
        pingIntervalMs: ctx.pingIntervalMs,
        backoff: ctx.retryDelayMs,
        holdsProcess: true,
      },
      {
        open: () => this.#opened(),
        drop: () => this.#stopHeartbeat(),
        retry: ({ dropped, delayMs, reason }) => {
          if (dropped)
            ctx.log.warn(
              { ...this.#facts, delayMs, reason: 'the connection dropped' },
              `lost the announcement producer on ${topic}; retrying in ${delayMs} ms`,
            );
          else
            ctx.log.warn(
              { ...this.#facts, delayMs, reason },
              `cannot open the announcement producer on ${topic}; retrying in ${delayMs} ms`,
            );
        },
      },
    );
  }

  get #facts(): Record<string, unknown> {
    const id = this.#message.service['id'];
    return { topic: this.topic, service: typeof id === 'string' ? id : undefined, tools: this.#message.tools.length };
  }

  /** The service listens (the first time or again): announce now, connecting first if needed. */
  listening(): void {
    if (this.#stopped) return;
    if (this.#producer.socket.open) void this.#publish(false);
    // The service just reached the broker: try now rather than after the backoff's delay.
    else this.#producer.socket.retryNow();
  }

  update(tools: Record<string, unknown>[]): Promise<boolean> {
    this.#message = { ...this.#message, tools };
    this.#tooLarge = false;
    this.#logNext = true;
    return this.#publish(false);
  }

  /** Stops heartbeats, publishes a goodbye (waiting up to `timeoutMs` for the broker to take it), and closes. */
  async goodbye(timeoutMs: number): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#stopHeartbeat();
    if (this.#producer.socket.open) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), timeoutMs);
      });
      const taken = await Promise.race([this.#publish(true), timeout]);
      clearTimeout(timer);
      if (taken) this.ctx.log.info(this.#facts, `said goodbye on ${this.topic}`);
      else
        this.ctx.log.warn(
          this.#facts,
          `the broker did not take the goodbye on ${this.topic}; registries mark the service unavailable after missed heartbeats`,
        );
    } else if (this.#live) {
      this.ctx.log.warn(
        this.#facts,
        `cannot say goodbye on ${this.topic}: the broker is away; registries mark the service unavailable after missed heartbeats`,
      );
    }
    await this.#producer.closeGently(2000);
  }

  /** Stops at once, without a goodbye (the service gave up on the broker). */
  stop(): void {
    this.#stopped = true;
    this.#stopHeartbeat();
    this.#producer.close();
  }

  #opened(): void {
    this.#logNext = true;
    this.#heartbeat = setInterval(() => void this.#publish(false), this.#message.heartbeatIntervalS * 1000);
    void this.#publish(false);
  }

  #stopHeartbeat(): void {
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  /** The whole announcement, signed, with the next sequence number. */
  async #signed(goodbye: boolean): Promise<{ jws: string; message: Announcement }> {
    const { subject, keyId, key, alg } = this.signer;
    const message: Announcement = {
      v: ANNOUNCEMENT_VERSION,
      sub: subject,
      instance: this.#instance,
      seq: ++this.#seq,
      iat: Math.floor(Date.now() / 1000),
      ...this.#message,
      goodbye,
    };
    const jws = await new CompactSign(encoder.encode(JSON.stringify(message)))
      .setProtectedHeader({ alg, kid: keyId, typ: ANNOUNCEMENT_TYP })
      .sign(key);
    return { jws, message };
  }

  /** Publishes the whole announcement; resolves whether the broker took it. */
  async #publish(goodbye: boolean): Promise<boolean> {
    if (!this.#producer.socket.open) return false;
    // A heartbeat says the service takes requests: none while it does not.
    if (!goodbye && (this.#stopped || !this.ctx.listening())) return false;
    let signed: { jws: string; message: Announcement };
    const signing = this.#inOrder.then(() => this.#signed(goodbye));
    this.#inOrder = signing.catch(() => undefined);
    try {
      signed = await signing;
    } catch (err) {
      this.ctx.log.error({ ...this.#facts, reason: (err as Error).message }, `cannot sign the announcement on ${this.topic}`);
      return false;
    }
    const { jws: payload, message } = signed;
    if (!this.#producer.socket.open) return false;
    const context = this.#producer.nextContext();
    const facts = oversize(payload, this.ctx.limits, {}, context);
    if (facts) {
      if (!this.#tooLarge) {
        this.#tooLarge = true;
        this.ctx.log.error(
          { ...this.#facts, bytes: facts.bytes, limitBytes: facts.limitBytes },
          `cannot announce on ${this.topic}: ${oversizeMessage(facts)}`,
        );
      }
      return false;
    }
    return this.#producer.send(publishFrame(payload, {}, context), context).then(
      (ack) => {
        if (!ack.ok) {
          this.ctx.log.warn({ ...this.#facts, result: ack.result, errorMsg: ack.errorMsg }, 'the broker did not take an announcement');
          return false;
        }
        this.#live = !goodbye;
        if (!goodbye && this.#logNext) {
          this.#logNext = false;
          this.ctx.log.info({ ...this.#facts, heartbeatIntervalS: message.heartbeatIntervalS }, `announced the service on ${this.topic}`);
        }
        return true;
      },
      () => false,
    );
  }
}
