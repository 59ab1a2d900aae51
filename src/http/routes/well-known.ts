import type { FastifyPluginAsync } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Config } from '../../config.js';
import { ProtectedResourceMetadataSchema } from '../../model/api.js';
import { json } from '../openapi/responses.js';

/** RFC 9728 section 3.1: the well-known suffix goes between the host and the resource's path. */
export function resourceMetadataUrl(resource: string): string {
  const url = new URL(resource);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/+$/, '');
  return `${url.origin}/.well-known/oauth-protected-resource${path}`;
}

/** RFC 7591 section 3.2.2: how a registration endpoint refuses, which OAuth clients show as is. */
const RegistrationRefusalSchema = z.strictObject({
  /** The OAuth error code. */
  error: z.literal('invalid_request'),
  /** Why, for the person whose client tried. */
  error_description: z.string(),
});

const NO_OAUTH =
  'this registry names no authorization server (AUTHORIZATION_SERVERS or JWT_ISSUER), so it offers no OAuth sign-in and no client registration: send a token its keys verify as `Authorization: Bearer <token>` (in dev mode, mint one with `tool-registry token`)';

/**
 * Protected-resource metadata (RFC 9728), built from the live catalogue: clients learn where
 * to get a token and which scopes exist, including one a tool registered a moment ago.
 */
const wellKnownRoutes: FastifyPluginAsync<{ config: Config }> = async (fastify, { config }) => {
  const app = fastify.withTypeProvider<ZodTypeProvider>();
  const handler = async () => ({
    resource: config.resource,
    authorization_servers: config.authorizationServers,
    scopes_supported: [...new Set([...app.catalog.knownTokens(), config.adminScope])].sort(),
    bearer_methods_supported: ['header' as const],
    resource_name: 'tool-registry' as const,
  });
  const options = (operationId: string) => ({
    config: { auth: false, rateLimit: false },
    schema: {
      tags: ['operations'],
      operationId,
      summary: 'OAuth protected-resource metadata (RFC 9728)',
      description:
        'Where to get a token and which scopes exist, built from the live catalogue (every scope a live tool requires, plus the admin scope). When `RESOURCE_URL` has a path, the same document is also served at `/.well-known/oauth-protected-resource{path}` (RFC 9728 section 3.1). Ignores credentials and is not rate limited.',
      security: [],
      response: { 200: json(ProtectedResourceMetadataSchema, 'The metadata.') },
    },
  });
  app.get('/.well-known/oauth-protected-resource', options('getProtectedResourceMetadata'), handler);
  const path = new URL(config.resource).pathname.replace(/\/+$/, '');
  if (path !== '') app.get(`/.well-known/oauth-protected-resource${path}`, options('getProtectedResourceMetadataForPath'), handler);

  // With no authorization server named (dev mode, or keys without an issuer), OAuth clients take
  // the registry for its own authorization server (the MCP specification's legacy fallback) and
  // register at POST /register, where a bare 404 read "no route POST /register". Refused here in
  // RFC 7591's form, whose description the SDK's client shows as its error.
  if (config.authorizationServers.length === 0) {
    app.post(
      '/register',
      {
        config: { auth: false },
        schema: { hide: true, response: { 404: json(RegistrationRefusalSchema, 'No client registration here.') } },
      },
      async (_request, reply) => reply.code(404).send({ error: 'invalid_request' as const, error_description: NO_OAUTH }),
    );
  }

  // The MCP endpoint is a resource of its own (what MCP clients ask tokens for), so its metadata
  // is at its own path-suffixed address. Nothing on /mcp needs the admin scope, so it is not
  // offered: MCP clients ask for every scope listed when a challenge names none.
  app.get(
    new URL(resourceMetadataUrl(config.mcp.resource)).pathname,
    {
      config: { auth: false, rateLimit: false },
      schema: {
        tags: ['mcp'],
        operationId: 'getMcpProtectedResourceMetadata',
        summary: 'OAuth protected-resource metadata of the MCP endpoint (RFC 9728)',
        description:
          "The metadata MCP clients read (the `resource_metadata` link of every `/mcp` challenge): `resource` is the MCP endpoint's own identifier (`RESOURCE_URL` followed by `/mcp`), which clients name when they ask for a token (RFC 8707), and `scopes_supported` lists the scopes live tools require (not the admin scope: nothing on `/mcp` writes). Ignores credentials and is not rate limited.",
        security: [],
        response: { 200: json(ProtectedResourceMetadataSchema, 'The metadata.') },
      },
    },
    async () => ({
      resource: config.mcp.resource,
      authorization_servers: config.authorizationServers,
      scopes_supported: [...app.catalog.knownTokens()].sort(),
      bearer_methods_supported: ['header' as const],
      resource_name: 'tool-registry' as const,
    }),
  );
};

export default wellKnownRoutes;
