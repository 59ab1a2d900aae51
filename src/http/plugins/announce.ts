import fp from 'fastify-plugin';
import { AnnouncementListener } from '../../announce/listener.js';
import type { Config } from '../../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The listener on ANNOUNCE_TOPIC, or null when announcements are not read. */
    announcements: AnnouncementListener | null;
  }
}

/**
 * Tool services announcing themselves (src/announce/): with ANNOUNCE_TOPIC, the registry listens
 * from the moment it is ready, takes announcements signed by the keys of ANNOUNCER_KEYS_FILE
 * (each announcer process's sequence numbers kept in this replica's SQLite), registers what their
 * bindings grant under the announcer, and tracks heartbeats; discovery (`?passing=true`) and
 * calls read the liveness.
 */
export default fp<{ config: Config }>(
  async (app, { config }) => {
    app.decorate('announcements', null);
    const announce = config.announce;
    const url = config.bridge.pulsarWsUrl;
    if (announce !== undefined && url !== undefined) {
      const listener = new AnnouncementListener({
        url,
        token: config.bridge.pulsarToken,
        topic: announce.topic,
        announcers: announce.announcers,
        sequences: app.store.announcerSequences,
        maxSkewS: announce.maxSkewS,
        connectTimeoutMs: config.bridge.connectTimeoutMs,
        registry: app.registry,
        catalog: app.catalog,
        health: app.serviceHealth,
        log: app.log.child({ component: 'announce' }),
        auditRefusal: (entry) => app.auditLog.recordRefusal(entry),
      });
      app.announcements = listener;
      app.addHook('onReady', async () => listener.start());
      app.addHook('onClose', async () => listener.close());
    }
  },
  { name: 'announce', dependencies: ['registry', 'audit'] },
);
