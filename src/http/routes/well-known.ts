import type { FastifyPluginAsync } from 'fastify';
import type { Config } from '../../config.js';

/** RFC 9728 section 3.1: the well-known suffix goes between the host and the resource's path. */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  return `${url.origin}/.well-known/oauth-protected-resource${path}`;
}

/**
 * Protected-resource metadata (RFC 9728), built from the live catalogue: clients learn where
 * to get a token and which scopes exist, including one a tool registered a moment ago.
 */
const wellKnownRoutes: FastifyPluginAsync<{ config: Config }> = async (app, { config }) => {
  const handler = async () => ({
    resource: config.resource,
    authorization_servers: config.authorizationServers,
    scopes_supported: [...new Set([...app.catalog.knownScopes().keys(), config.adminScope])].sort(),
    bearer_methods_supported: ['header'],
    resource_name: 'tool-registry',
  });
  app.get('/.well-known/oauth-protected-resource', { config: { auth: false, rateLimit: false } }, handler);
  const path = new URL(config.resource).pathname.replace(/\/+$/, '');
  if (path !== '') app.get(`/.well-known/oauth-protected-resource${path}`, { config: { auth: false, rateLimit: false } }, handler);
};

export default wellKnownRoutes;
