import fp from 'fastify-plugin';
import { GuardedFetch, type OutboundFetch } from '../../bridge/outbound-fetch.js';
import { OutboundPolicy, type Resolver } from '../../bridge/outbound-policy.js';
import type { Config } from '../../config.js';

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * The outbound address policy (src/bridge/outbound-policy.ts): the write side checks targets
     * with it at registration, and the transports connect through its `fetch`.
     */
    outbound: { policy: OutboundPolicy; fetch: OutboundFetch };
  }
}

export interface OutboundPluginOptions {
  config: Config;
  /** Resolves targets' host names (default: the system resolver); tests give their own. */
  resolve?: Resolver | undefined;
}

/**
 * One policy for every outbound connection an operator's descriptor asks for. It learns the
 * registry's own port once the server listens (PORT=0 picks one then), so that no target can
 * be the registry itself.
 */
export default fp<OutboundPluginOptions>(
  async (app, { config, resolve }) => {
    const policy = new OutboundPolicy({
      allow: config.outbound.allow,
      deny: config.outbound.deny,
      host: config.host,
      publicUrl: config.publicUrl,
      ...(resolve && { resolve }),
    });
    const guarded = new GuardedFetch(policy, config.outbound.ca);
    app.decorate('outbound', { policy, fetch: guarded.fetch });
    app.addHook('onListen', async () => {
      for (const address of app.addresses()) if (typeof address === 'object') policy.listening(address.port);
    });
    app.addHook('onClose', async () => guarded.close());
  },
  { name: 'outbound' },
);
