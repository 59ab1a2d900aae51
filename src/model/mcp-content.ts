/**
 * MCP content blocks (issue 31): an upstream MCP server's tool answer as it sent it (text,
 * image, audio, an embedded resource, a resource link), carried whole through invoke and
 * `/mcp`. Loose objects: what a newer upstream adds to a block (`_meta`, `icons`) passes on.
 */
import { z } from 'zod';

const AnnotationsSchema = z
  .looseObject({
    audience: z.array(z.enum(['user', 'assistant'])).optional(),
    priority: z.number().min(0).max(1).optional(),
    lastModified: z.string().optional(),
  })
  .describe("The block's MCP annotations, as the upstream sent them.");

const common = { annotations: AnnotationsSchema.optional(), _meta: z.record(z.string(), z.unknown()).optional() };

const McpTextBlockSchema = z.looseObject({ type: z.literal('text'), text: z.string(), ...common });
const McpMediaBlockSchema = z.looseObject({
  type: z.enum(['image', 'audio']),
  data: z.string().describe('The bytes, base64.'),
  mimeType: z.string(),
  ...common,
});
const McpResourceBlockSchema = z.looseObject({
  type: z.literal('resource'),
  resource: z
    .looseObject({ uri: z.string(), mimeType: z.string().optional(), text: z.string().optional(), blob: z.string().optional() })
    .describe('The embedded resource: its `text`, or its bytes as base64 in `blob`.'),
  ...common,
});
const McpResourceLinkBlockSchema = z.looseObject({
  type: z.literal('resource_link'),
  uri: z.string(),
  name: z.string(),
  title: z.string().optional(),
  description: z.string().optional(),
  mimeType: z.string().optional(),
  size: z.number().optional(),
  ...common,
});

export const McpContentBlockSchema = z
  .discriminatedUnion('type', [McpTextBlockSchema, McpMediaBlockSchema, McpResourceBlockSchema, McpResourceLinkBlockSchema])
  .meta({
    id: 'McpContentBlock',
    description:
      "One block of an mcp tool's answer, as its upstream MCP server sent it: `text`, `image`, `audio`, `resource` or `resource_link`.",
  });
export type McpContentBlock = z.infer<typeof McpContentBlockSchema>;
